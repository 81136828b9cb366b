"""Score composition of DESIGN 5, checked against a reference written here.

``L(c) = BM25(c, q) + 0.35 * BM25(c, e(q))``, chunks with ``L = 0`` dropped;
``s(c) = L(c) * [1 + 0.12 (priority - 1)] * b_wf * b_recipe * b_sym * b_fb``
with ``b_wf = 1.6``, ``b_recipe = 1.25``, ``b_sym = 1.5`` (leaf symbol of 3+
characters contained in the query text), ``b_fb`` floored at 0.15.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.tokenize import tokenize
from pycsamt_lsp.search.retrieval import (
    EXPANSION_WEIGHT,
    SEED_COMPONENTS,
    RankAux,
    load_feedback,
    search,
    snippet_of,
)
from pycsamt_lsp.search.stages import STAGES
from pycsamt_lsp.workspace.facade import QueryError, Workspace

PROFILE = profile_from_dict(
    {
        "name": "fixture",
        "package": "pkg",
        "roots": ["pkg", "docs", "recipes"],
        "recipe_dir": "recipes",
        "priority": {"high": ["pkg/core"], "docs": ["docs"]},
        "workflows": {
            "static_shift": ["static shift"],
            "denoise": ["denoise", "hampel"],
        },
        "expansions": [
            ["spike", ["denoise", "hampel"]],
            ["glitch", ["hampel", "outlier"]],
        ],
    }
)


def ck(
    name: str,
    text: str,
    *,
    kind: str = "python_symbol",
    symbol: str | None = "auto",
    workflow: str | None = None,
    priority: int = 1,
) -> Chunk:
    rel = f"pkg/{name}.py" if kind != "recipe" else f"recipes/{name}.md"
    return Chunk(
        id=f"{rel}:1:2",
        text=text,
        source_path=rel,
        kind=kind,
        symbol=f"pkg.{name}.{name}fn" if symbol == "auto" else symbol,
        workflow=workflow,
        priority=priority,
        metadata={"line_start": 1, "line_end": 2},
    )


#: Same length and same query-term counts, so equal BM25: ratios are the boosts.
SAME = "alpha beta filler{}"
CHUNKS = [
    ck("plain", SAME.format(0)),
    ck("prio2", SAME.format(1), priority=2),
    ck("prio3", SAME.format(2), priority=3),
    ck("wfden", SAME.format(3), workflow="denoise"),
    ck("wfss", SAME.format(4), workflow="static_shift"),
    ck("rec", SAME.format(5), kind="recipe", symbol=None),
    ck("symhit", SAME.format(6), symbol="pkg.symhit.gammafix"),
    ck("symshort", SAME.format(7), symbol="pkg.symshort.be"),  # 2 chars: no boost
    ck("symsub", SAME.format(8), symbol="pkg.symsub.ETA"),  # inside "beta"
    ck("fbneg", SAME.format(9), symbol="pkg.fbneg.negfn"),
    ck("fbfloor", SAME.format(10), symbol="pkg.fbfloor.floorfn"),
    ck("fbpos", SAME.format(11), symbol="pkg.fbpos.posfn"),
    ck("fbid", SAME.format(12), symbol=None),
    ck(
        "combo",
        SAME.format(13),
        kind="recipe",
        symbol=None,
        workflow="denoise",
        priority=3,
    ),
    ck("exponly", "hampel outlier fillerx"),  # reachable through expansion only
    ck("zero", "unrelated words entirely"),  # L = 0: never returned
    ck("more", "alpha alpha alpha beta gamma delta epsilon zeta"),
]
FEEDBACK = {
    "pkg.fbneg.negfn": -0.5,
    "pkg.fbfloor.floorfn": -5.0,
    "pkg.fbpos.posfn": 0.3,
    "pkg/fbid.py:1:2": -0.4,
}


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    per_file = {c.source_path: ("0" * 64, [c]) for c in CHUNKS}
    return Snapshot.build(per_file, "f" * 64)


@pytest.fixture(scope="module")
def aux(snap) -> RankAux:
    return RankAux.of(snap)


def slot_of(snap: Snapshot, cid: str) -> int:
    return snap.table.ids.index(cid)


def reference(snap, query, *, workflow=None, feedback=None, disable=(), k=100):
    """DESIGN 5 written out per chunk, from the chunk fields."""
    bm = snap.bm25
    base = bm.scores(tokenize(query))
    terms = [] if "expansion" in disable else PROFILE.expand(query)
    if terms:
        base = base + 0.35 * bm.scores(terms)
    # with expansion ablated, its terms no longer pick the workflow either
    infer = PROFILE.infer_workflow if "expansion" in disable else PROFILE.query_workflow
    wf = workflow or infer(query)
    out = []
    for slot in snap.alive_slots():
        L = float(base[slot])  # noqa: N806 - DESIGN 5's name for the lexical score
        if L == 0.0:
            continue
        c = snap.table.get(slot)
        s = L
        if "priority" not in disable:
            s *= 1 + 0.12 * (c.priority - 1)
        if "workflow_boost" not in disable and wf and c.workflow == wf:
            s *= 1.6
        if "recipe_boost" not in disable and c.kind == "recipe":
            s *= 1.25
        if "symbol_boost" not in disable and c.symbol:
            leaf = c.symbol.rsplit(".", 1)[-1].lower()
            if len(leaf) >= 3 and leaf in query.lower():
                s *= 1.5
        for key in (c.symbol, c.id):
            if feedback and key in feedback:
                s *= max(0.15, 1 + feedback[key])
        out.append((c.id, s))
    out.sort(key=lambda t: (-t[1], t[0]))
    return out[:k]


def run(snap, aux, query, **kw):
    """The seed's path: the stages after its composition (stages.py) are off;
    tests/test_ranking_stages.py tests them."""
    k = kw.pop("k", 100)
    kw["disable"] = (*kw.get("disable", ()), *STAGES)
    hits, info = search(snap, aux, PROFILE, query, k=k, **kw)
    return [(snap.table.ids[h.slot], h.score) for h in hits], info


def assert_same(got, want):
    assert [g[0] for g in got] == [w[0] for w in want]
    np.testing.assert_allclose([g[1] for g in got], [w[1] for w in want], rtol=1e-12)


QUERIES = [
    "alpha beta gammafix",
    "alpha spike",
    "static shift alpha",
    "glitch beta",
    "ALPHA Beta GammaFix",
    "nothing matches this",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(
    "disable", [(), *[(c,) for c in SEED_COMPONENTS], tuple(SEED_COMPONENTS)]
)
def test_matches_reference(snap, aux, query, disable):
    got, _ = run(snap, aux, query, disable=disable, feedback=FEEDBACK)
    assert_same(got, reference(snap, query, disable=disable, feedback=FEEDBACK))


@pytest.mark.parametrize("workflow", ["denoise", "static_shift"])
def test_matches_reference_with_explicit_workflow(snap, aux, workflow):
    got, info = run(snap, aux, "alpha beta", workflow=workflow)
    assert info["workflow"] == workflow
    assert_same(got, reference(snap, "alpha beta", workflow=workflow))


def scores_by_id(snap, aux, query, **kw):
    got, info = run(snap, aux, query, **kw)
    return dict(got), info


def test_each_boost_is_its_exact_factor(snap, aux):
    s, info = scores_by_id(snap, aux, "alpha beta gammafix", workflow="denoise")
    plain = s["pkg/plain.py:1:2"]
    assert s["pkg/prio2.py:1:2"] == pytest.approx(plain * 1.12)
    assert s["pkg/prio3.py:1:2"] == pytest.approx(plain * 1.24)
    assert s["pkg/wfden.py:1:2"] == pytest.approx(plain * 1.6)
    assert s["pkg/wfss.py:1:2"] == pytest.approx(plain)  # other workflow
    assert s["recipes/rec.md:1:2"] == pytest.approx(plain * 1.25)
    assert s["pkg/symhit.py:1:2"] == pytest.approx(plain * 1.5)
    assert s["pkg/symshort.py:1:2"] == pytest.approx(plain)  # leaf "be" < 3 chars
    assert s["pkg/symsub.py:1:2"] == pytest.approx(plain * 1.5)  # "eta" in "beta"
    assert s["recipes/combo.md:1:2"] == pytest.approx(plain * 1.24 * 1.6 * 1.25)
    assert info["workflow"] == "denoise"


def test_feedback_factor_and_floor(snap, aux):
    s, _ = scores_by_id(snap, aux, "alpha beta", feedback=FEEDBACK)
    plain = s["pkg/plain.py:1:2"]
    assert s["pkg/fbneg.py:1:2"] == pytest.approx(plain * 0.5)
    assert s["pkg/fbfloor.py:1:2"] == pytest.approx(plain * 0.15)  # 1 - 5 -> floor
    assert s["pkg/fbpos.py:1:2"] == pytest.approx(plain * 1.3)
    assert s["pkg/fbid.py:1:2"] == pytest.approx(plain * 0.6)  # by chunk id
    # a hard negative demotes but never hides
    assert "pkg/fbfloor.py:1:2" in s
    unknown, _ = scores_by_id(snap, aux, "alpha beta", feedback={"no.such": -1.0})
    nofb, _ = scores_by_id(snap, aux, "alpha beta")
    assert unknown == nofb


def test_expansion_terms_and_weight(snap, aux):
    q = "alpha spike"
    got, info = run(snap, aux, q)
    assert info["expansion"] == ["denoise", "hampel"]
    # the expansion also sets the query's workflow when its words do not
    assert info["workflow"] == "denoise"
    s = dict(got)
    slot = slot_of(snap, "pkg/exponly.py:1:2")
    e = snap.bm25.scores(["denoise", "hampel"])[slot]
    assert e > 0 and snap.bm25.scores(tokenize(q))[slot] == 0
    assert EXPANSION_WEIGHT == 0.35
    assert s["pkg/exponly.py:1:2"] == pytest.approx(0.35 * e)
    # without expansion the chunk has L = 0 and drops out
    off, info_off = run(snap, aux, q, disable=("expansion",))
    assert "pkg/exponly.py:1:2" not in dict(off)
    assert info_off["expansion"] == []
    # a term the user typed is not repeated by the expansion
    assert PROFILE.expand("spike hampel") == ["denoise"]
    assert PROFILE.expand("glitch spike") == ["denoise", "hampel", "outlier"]
    assert PROFILE.expand("nothing") == []


def test_zero_scores_are_dropped(snap, aux):
    got, info = run(snap, aux, "alpha")
    ids = {g[0] for g in got}
    assert "pkg/zero.py:1:2" not in ids and "pkg/exponly.py:1:2" not in ids
    assert all(sc > 0 for _, sc in got)
    assert (
        info["n_candidates"] == len(got) == int((snap.bm25.scores(["alpha"]) > 0).sum())
    )
    none, info = run(snap, aux, "zzzz qqqq")
    assert none == [] and info["top_score"] == 0.0 and info["n_candidates"] == 0


def test_top_k_kinds_and_ties(snap, aux):
    full, info = run(snap, aux, "alpha beta")
    top3, _ = run(snap, aux, "alpha beta", k=3)
    assert top3 == full[:3]
    assert info["top_score"] == pytest.approx(full[0][1])
    # equal scores are ordered by id
    plain_like = [
        g for g in full if g[1] == pytest.approx(dict(full)["pkg/plain.py:1:2"])
    ]
    assert [g[0] for g in plain_like] == sorted(g[0] for g in plain_like)
    rec, _ = run(snap, aux, "alpha beta", kinds=["recipe"])
    assert {g[0] for g in rec} == {"recipes/rec.md:1:2", "recipes/combo.md:1:2"}
    assert run(snap, aux, "alpha beta", kinds=["pdf_page"])[0] == []


def test_load_feedback(tmp_path: Path):
    assert load_feedback(None) == {}
    assert load_feedback(tmp_path / "missing.json") == {}
    p = tmp_path / "fb.json"
    p.write_text(json.dumps({"a.b": -0.5, "c": 1}))
    assert load_feedback(p) == {"a.b": -0.5, "c": 1.0}
    p.write_text("{not json")
    assert load_feedback(p) == {}
    p.write_text('["a list"]')
    assert load_feedback(p) == {}
    p.write_text('{"a": "x"}')
    assert load_feedback(p) == {}


def test_snippet_skips_the_header():
    text = "Symbol: a.b\nSignature: b()\nFile: a.py\n\nDocstring:\nDoes things.\n\nCode:\ndef b(): ..."
    assert snippet_of(text).startswith("Does things.")
    assert len(snippet_of("word " * 200)) <= 240


def _snippet_whole(text: str, limit: int = 240) -> str:
    """The snippet computed from every line (what snippet_of's prefix must equal)."""
    skip = ("Symbol:", "Signature:", "File:", "Docstring:", "Code:", "Module:")
    body = [
        ln
        for ln in (x.strip() for x in text.splitlines())
        if ln and not ln.startswith((*skip, "Document:"))
    ]
    out = " ".join(body)
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "…"


@pytest.mark.parametrize(
    "text",
    [
        "Code:\n" * 2000 + "the only body line",  # the prefix holds no body
        "\r" * 3839 + "\r\nab" * 500,  # a \r\n boundary cut by the prefix
        ("word " * 30 + "\n") * 400,  # long lines, the prefix suffices
        "x" * 5000,  # one line longer than the prefix
    ],
)
def test_snippet_of_a_long_chunk_equals_the_whole_texts(text):
    for limit in (240, 40):
        assert snippet_of(text, limit) == _snippet_whole(text, limit)


# -- through the workspace: result fields and the user's feedback file --------


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "corpus"
    write(
        root,
        "pkg/core/ss.py",
        '"""Static shift tools."""\n\n\ndef estimate_ss_ama(z, n=3):\n'
        '    """Estimate static shift factors with AMA."""\n    return z\n',
    )
    write(
        root,
        "pkg/other.py",
        'def helper_ama(z):\n    """AMA helper for static shift work."""\n    return z\n',
    )
    write(root, "docs/ss.md", "# Static shift\n\nCorrect static shift with AMA.\n")
    write(
        root,
        "recipes/ss.md",
        "# Static shift recipe\n\nWorkflow: static_shift\n\nUse estimate_ss_ama.\n",
    )
    w = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    w.build()
    return w


def test_query_result_fields(ws):
    # the seed's path: there top_score (the confidence s_max) is the first score
    res = ws.query("static shift ama", k=5, disable=STAGES)
    assert res["query"] == "static shift ama" and res["k"] == 5
    assert res["workflow"] == "static_shift"
    assert res["fingerprint"] == ws.stats()["fingerprint"]
    assert res["results"]
    for r in res["results"]:
        assert set(r) >= {
            "rank",
            "id",
            "kind",
            "workflow",
            "label",
            "symbol",
            "source_path",
            "line_start",
            "line_end",
            "score",
            "snippet",
        }
    assert [r["rank"] for r in res["results"]] == list(
        range(1, len(res["results"]) + 1)
    )
    scores = [r["score"] for r in res["results"]]
    assert scores == sorted(scores, reverse=True)
    assert res["top_score"] == pytest.approx(scores[0], abs=1e-3)
    fn = next(r for r in res["results"] if r["symbol"] == "pkg.core.ss.estimate_ss_ama")
    assert (fn["line_start"], fn["line_end"]) == (4, 6)
    assert fn["source_path"] == "pkg/core/ss.py"
    assert fn["label"] == "pkg.core.ss.estimate_ss_ama"
    assert "Estimate static shift factors" in fn["snippet"]
    doc = next(r for r in res["results"] if r["kind"] == "doc_section")
    assert doc["label"] == "Static shift"
    json.dumps(res)  # JSON-ready


def test_feedback_file_is_read_on_each_query(ws):
    q = "static shift ama"
    # the seed's path: a stage may pass a chunk's evidence on to another
    before = {r["id"]: r["score"] for r in ws.query(q, disable=STAGES)["results"]}
    ws.feedback_path.parent.mkdir(parents=True, exist_ok=True)
    ws.feedback_path.write_text(json.dumps({"pkg.core.ss.estimate_ss_ama": -9}))
    after = {r["id"]: r["score"] for r in ws.query(q, disable=STAGES)["results"]}
    fid = "pkg/core/ss.py:4:6"
    assert after[fid] == pytest.approx(before[fid] * 0.15, rel=1e-3)
    others = [i for i in before if i != fid]
    assert all(after[i] == before[i] for i in others)


def test_feedback_by_chunk_id_survives_an_update_of_its_file(ws):
    """Chunk ids are stable across edits that do not move the chunk."""
    fid = "pkg/core/ss.py:4:6"
    ws.feedback_path.parent.mkdir(parents=True, exist_ok=True)
    ws.feedback_path.write_text(json.dumps({fid: -0.5}))
    q = "static shift ama"
    first = {r["id"]: r["score"] for r in ws.query(q)["results"]}
    p = ws.root / "pkg/core/ss.py"
    p.write_text(p.read_text() + "\n# a trailing comment\n")
    ws.refresh([p])
    second = {r["id"]: r["score"] for r in ws.query(q)["results"]}
    assert fid in second
    assert second[fid] == pytest.approx(first[fid], rel=1e-6)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x", "k": 0}, "'k'"),
        ({"query": "x", "k": 201}, "'k'"),
        ({"query": "x", "k": True}, "'k'"),
        ({"query": "x", "workflow": "nope"}, "workflow"),
    ],
)
def test_bad_query_arguments(ws, kw, msg):
    with pytest.raises(QueryError, match=msg):
        ws.query(**kw)


def test_query_before_build(tmp_path):
    w = Workspace(tmp_path, PROFILE, index_dir=tmp_path / "idx")
    with pytest.raises(QueryError):
        w.query("x")
    assert w.stats()["state"] == "empty"
