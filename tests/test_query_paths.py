"""The query path's shortcuts give what the plain computation gives (issue 14).

Latency work on ``search/`` and ``index/bm25.py`` must not move a ranking:
each shortcut here is checked against the straightforward computation it
replaced, written out in this file, bit for bit where the old one was exact.
"""

from __future__ import annotations

import random
import string

import numpy as np
import pytest

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.index import bm25 as bm25_mod
from pycsamt_lsp.index.bm25 import BM25Index
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.search import retrieval
from pycsamt_lsp.search.retrieval import RankAux, _ranked, snippet_of
from pycsamt_lsp.workspace.facade import Workspace


def _plain_scores(index: BM25Index, tokens: list[str]) -> np.ndarray:
    """BM25 the way every query computed it before the term-weight cache."""
    out = np.zeros(index.n_slots, np.float64)
    tids = index.term_ids(tokens)
    if len(tids) == 0:
        return out
    idf = index.idf(tids)
    docs, ws = [], []
    for ptr, pdoc, ptf in (
        (index.main_ptr, index.main_doc, index.main_tf),
        (index.delta_ptr, index.delta_doc, index.delta_tf),
    ):
        if not len(pdoc):
            continue
        starts, ends = ptr[tids], ptr[tids + 1]
        lens = ends - starts
        total = int(lens.sum())
        if not total:
            continue
        at = np.repeat(
            starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens
        ) + np.arange(total)
        d = pdoc[at]
        f = ptf[at].astype(np.float64)
        docs.append(d)
        ws.append(np.repeat(idf, lens) * (f * (index.k1 + 1.0)) / (f + index._norm[d]))
    if docs:
        out = np.bincount(
            np.concatenate(docs), weights=np.concatenate(ws), minlength=index.n_slots
        )
    if index.n_docs < index.n_slots:
        out[~index.alive] = 0.0
    return out


def _random_docs(rng: random.Random, n: int, vocab: list[str]) -> list[dict[str, int]]:
    return [
        {t: rng.randint(1, 4) for t in rng.sample(vocab, rng.randint(1, 12))}
        for _ in range(n)
    ]


@pytest.mark.parametrize("budget", [1 << 19, 40])
def test_cached_term_weights_are_the_plain_scores(monkeypatch, budget):
    """Every query, first or repeated, with a main and a delta segment and
    removed slots, and with a cache small enough to be cleared on the way."""
    monkeypatch.setattr(bm25_mod, "_CACHED_POSTINGS", budget)
    rng = random.Random(7)
    vocab = [f"t{i}" for i in range(60)]
    index = BM25Index.build(_random_docs(rng, 200, vocab))
    updated, _ = index.updated([3, 17, 150], _random_docs(rng, 8, [*vocab, "new1"]))
    assert len(updated.delta_doc) and updated.n_docs < updated.n_slots
    queries = [
        rng.sample([*vocab, "new1", "absent"], rng.randint(1, 6)) for _ in range(80)
    ]
    for idx in (index, updated):
        for rep in range(2):
            for q in queries:
                got = idx.scores(q)
                assert np.array_equal(got, _plain_scores(idx, q)), (rep, q)
        assert idx._weights.size <= budget
    assert not index.scores([]).any() and index.scores(["absent"]).shape == (200,)


def _plain_ranked(keep: np.ndarray, s: np.ndarray, idx: np.ndarray, ids: list[str]):
    return np.array(sorted(keep.tolist(), key=lambda j: (-s[j], ids[idx[j]])))


def test_ranked_sorts_ties_by_chunk_id():
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        s = rng.integers(0, 4 if trial % 2 else 40, n).astype(np.float64)
        idx = np.sort(rng.choice(1000, n, replace=False))
        ids = [f"c{rng.integers(0, 10**6):07d}" for _ in range(1000)]
        keep = np.flatnonzero(rng.random(n) < 0.8)
        assert (
            _ranked(keep, s, idx, ids).tolist()
            == _plain_ranked(keep, s, idx, ids).tolist()
        )


def _chunks(leaves: list[str]) -> list[Chunk]:
    return [
        Chunk(
            id=f"pkg/m{i}.py:{i}:{i}",
            text=f"def {leaf}(): pass",
            source_path=f"pkg/m{i}.py",
            kind="python_symbol",
            symbol=f"pkg.m{i}.{leaf}",
        )
        for i, leaf in enumerate(leaves)
    ]


def _plain_leaf_matches(aux: RankAux, query_lower: str) -> list[tuple[str, list]]:
    """Every substring of every identifier run, in order, each leaf once."""
    found, seen = [], set()
    for run in retrieval._IDENT_RUN.findall(query_lower):
        for i in range(len(run)):
            for j in range(i + 3, len(run) + 1):
                sub = run[i:j]
                if sub in aux.leaf_slots and sub not in seen:
                    seen.add(sub)
                    found.append((sub, aux.leaf_slots[sub].tolist()))
    return found


def test_leaf_matches_try_only_leaf_lengths_and_find_every_leaf():
    rng = random.Random(11)
    letters = "abcde_"
    leaves = sorted(
        {
            "".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
            for _ in range(400)
        }
    )
    snap = Snapshot.build(
        {c.source_path: ("0" * 64, [c]) for c in _chunks(leaves)}, "fp"
    )
    aux = RankAux.of(snap)
    more = _chunks(["abcdeabcdeab", "ab_", "cab"])  # new lengths and heads
    for i, c in enumerate(more):
        c.source_path = f"pkg/n{i}.py"
    snap2 = snap.updated({c.source_path: ("1" * 64, [c]) for c in more}, (), "fp2")
    aux2 = aux.extended(snap2, len(snap.table))
    for a in (aux, aux2):
        for _ in range(300):
            q = " ".join(
                "".join(rng.choice(letters + "xy") for _ in range(rng.randint(1, 20)))
                for _ in range(rng.randint(1, 4))
            )
            got = [(leaf, h.tolist()) for leaf, h in a.leaf_matches(q)]
            assert got == _plain_leaf_matches(a, q), q
    assert ("abcdeabcdeab", [len(snap.table)]) in [
        (leaf, h.tolist()) for leaf, h in aux2.leaf_matches("xabcdeabcdeabx")
    ]


def _plain_snippet(text: str, limit: int = 240) -> str:
    skip = ("Symbol:", "Signature:", "File:", "Docstring:", "Code:", "Module:")
    body = [
        ln
        for ln in (x.strip() for x in text.splitlines())
        if ln and not ln.startswith((*skip, "Document:"))
    ]
    out = " ".join(body)
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "…"


def test_snippet_stops_early_with_the_same_text():
    rng = random.Random(5)
    pieces = ["Code:", "Symbol: x", "", "   ", "word", "a b  ", "\t", "Docstring:"]
    for _ in range(400):
        lines = [
            rng.choice(pieces)
            if rng.random() < 0.5
            else "".join(
                rng.choice(string.ascii_letters + "  ")
                for _ in range(rng.randint(0, 90))
            )
            for _ in range(rng.randint(0, 120))
        ]
        text = rng.choice(["\n", "\r\n", "\n\n"]).join(lines)
        for limit in (1, 2, 40, 240, 280):
            assert snippet_of(text, limit) == _plain_snippet(text, limit)


PROFILE = profile_from_dict(
    {"name": "fixture", "package": "pkg", "roots": ["pkg"], "workflows": {}}
)


def test_query_results_are_the_same_when_shown_again(tmp_path):
    """Label, snippet and URI kept per snapshot equal what the chunk and the
    file give, on the first query, a repeated one, and after a save."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "shift.py").write_text(
        'def correct_shift(x):\n    """Correct the static shift of x."""\n    return x\n',
        encoding="utf-8",
    )
    ws = Workspace(tmp_path, PROFILE, index_dir=tmp_path / "idx")
    ws.open(persist=True)

    def expected(res):
        for r in res["results"]:
            chunk = ws.chunk(r["id"])  # the live slot of that id
            assert chunk is not None
            assert r["label"] == chunk.label
            assert r["snippet"] == snippet_of(chunk.text)
            assert r["uri"] == ws.uri_of(r["source_path"])

    first = ws.query("correct static shift", 5)
    assert first["results"] and first == ws.query("correct static shift", 5)
    expected(first)
    (pkg / "shift.py").write_text(
        'def correct_shift(x):\n    """Undo the static shift of x, again."""\n    return x\n',
        encoding="utf-8",
    )
    ws.refresh([pkg / "shift.py"])
    after = ws.query("correct static shift", 5)
    expected(after)
    assert any("Undo the static shift" in r["snippet"] for r in after["results"])
