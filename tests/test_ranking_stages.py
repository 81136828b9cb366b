"""The ranking stages after the seed's composition (search/stages.py, issue 14).

Two parts:

- each stage on a small fixture index: switched on alone (every other stage
  off) it changes the seed's ranking in the way its docstring says, and the
  seed's own ranking comes back when it is off;
- quality gates on the real corpus and the *tuning* split, through the
  ``pycsamt.eval`` command with ``ablate``: every gate passes with the full
  engine and FAILS when the component it guards is switched off (a gate that
  cannot fail guards nothing). Thresholds sit between the two measured
  values; the frozen test split is never used here.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.commands.catalog import run_command
from pycsamt_lsp.corpus.profile import load_profile, profile_from_dict
from pycsamt_lsp.evals.run import ablation as run_ablation
from pycsamt_lsp.evals.service import _retriever as eval_retriever
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.search.phrasings import is_phrasing_list
from pycsamt_lsp.search.retrieval import COMPONENTS, SEED_COMPONENTS, RankAux, search
from pycsamt_lsp.search.stages import OFF_BY_DEFAULT, STAGES, is_howto
from pycsamt_lsp.workspace.facade import Workspace

REPO = Path(__file__).resolve().parents[1]

PROFILE = profile_from_dict(
    {
        "name": "fixture",
        "package": "pkg",
        "roots": ["pkg", "recipes"],
        "recipe_dir": "recipes",
        "workflows": {"denoise": ["denoise", "hampel"]},
    }
)


def chunk(
    path: str,
    line: int,
    text: str,
    *,
    kind: str = "python_symbol",
    symbol: str | None = None,
    workflow: str | None = None,
) -> Chunk:
    return Chunk(
        id=f"{path}:{line}:{line + 1}",
        text=text,
        source_path=path,
        kind=kind,
        symbol=symbol,
        workflow=workflow,
        priority=1,
        metadata={"line_start": line, "line_end": line + 1},
    )


def filler(n: int) -> str:
    return " ".join(f"word{i}" for i in range(n))


#: unrelated symbols, so the statistics (idf) are those of a package, not of 3 docs
PAD = [
    Chunk(
        id=f"pkg/z{i}.py:1:2",
        text=filler(6),
        source_path=f"pkg/z{i}.py",
        kind="python_symbol",
        symbol=f"pkg.z{i}.tool{i}",
        workflow=None,
        priority=1,
        metadata={"line_start": 1, "line_end": 2},
    )
    for i in range(30)
]


def index(chunks: list[Chunk]) -> tuple[Snapshot, RankAux]:
    files: dict[str, list[Chunk]] = {}
    for c in [*chunks, *PAD]:
        files.setdefault(c.source_path, []).append(c)
    snap = Snapshot.build({p: ("0" * 64, cs) for p, cs in files.items()}, "f" * 64)
    return snap, RankAux.of(snap)


def ranked(snap, aux, query, *, only: str | None = None, **kw) -> list[str]:
    """Symbols (or ids of prose) in rank order, with at most stage *only* on."""
    disable = tuple(s for s in STAGES if s != only)
    if only in OFF_BY_DEFAULT:  # such a stage runs only when asked for
        disable += (f"+{only}",)
    hits, _ = search(
        snap, aux, PROFILE, query, k=kw.pop("k", 50), disable=disable, **kw
    )
    t = snap.table
    return [t.symbols[h.slot] or t.ids[h.slot] for h in hits]


def test_components_are_the_seeds_then_the_stages():
    assert COMPONENTS == SEED_COMPONENTS + STAGES
    assert len(set(STAGES)) == len(STAGES)


def test_field_bm25_puts_the_symbol_named_by_the_query_first():
    snap, aux = index(
        [
            chunk("pkg/a.py", 1, "draws the phase map", symbol="pkg.a.plot_phase_map"),
            chunk("pkg/b.py", 1, "phase map plot", symbol="pkg.b.helper"),
        ]
    )
    q = "plot the phase map"
    assert ranked(snap, aux, q)[:2] == ["pkg.b.helper", "pkg.a.plot_phase_map"]
    assert ranked(snap, aux, q, only="field_bm25")[:2] == [
        "pkg.a.plot_phase_map",
        "pkg.b.helper",
    ]


def test_symbol_specific_keeps_the_boost_only_for_typed_identifiers():
    snap, aux = index(
        [
            chunk("pkg/a.py", 1, "phase map of a station", symbol="pkg.a.Grid.map"),
            chunk(
                "pkg/b.py", 1, "estimate shift factors", symbol="pkg.b.estimate_ss_ama"
            ),
        ]
    )

    def score(q, sym, only):
        disable = tuple(x for x in STAGES if x != only)
        hits, _ = search(snap, aux, PROFILE, q, k=50, disable=disable)
        return {snap.table.symbols[h.slot]: h.score for h in hits}[sym]

    # "map" is a word of the question, not a symbol: the seed's 1.5 is taken back
    q = "plot the phase map"
    assert score(q, "pkg.a.Grid.map", "symbol_specific") == pytest.approx(
        score(q, "pkg.a.Grid.map", None) / 1.5
    )
    # a typed identifier keeps it
    q = "estimate shift factors with estimate_ss_ama"
    assert score(q, "pkg.b.estimate_ss_ama", "symbol_specific") == pytest.approx(
        score(q, "pkg.b.estimate_ss_ama", None)
    )


RECIPE = chunk(
    "recipes/cal.md",
    1,
    "Calibrate the sensor gain of every station before processing: "
    "call `pkg.cal.fit_gain` on the calibration table.",
    kind="recipe",
)


def test_inherit_lifts_the_symbol_a_matching_recipe_names():
    snap, aux = index(
        [
            RECIPE,
            chunk(
                "pkg/cal.py", 1, "fits values of the gain", symbol="pkg.cal.fit_gain"
            ),
            chunk(
                "pkg/oth.py", 1, "gain table gain values", symbol="pkg.oth.gain_table"
            ),
        ]
    )
    q = "calibrate the sensor gain"
    off = ranked(snap, aux, q)
    on = ranked(snap, aux, q, only="inherit")
    assert off.index("pkg.oth.gain_table") < off.index("pkg.cal.fit_gain")
    assert on.index("pkg.cal.fit_gain") < on.index("pkg.oth.gain_table")


def test_inherit_only_reaches_chunks_that_match_the_query():
    snap, aux = index(
        [RECIPE, chunk("pkg/cal.py", 1, filler(4), symbol="pkg.cal.fit_gain")]
    )
    assert "pkg.cal.fit_gain" not in ranked(
        snap, aux, "calibrate sensor gain", only="inherit"
    )


def test_module_inherit_lifts_the_modules_own_functions():
    snap, aux = index(
        [
            chunk(
                "pkg/cal.py",
                0,
                "Sensor calibration: calibrate the sensor drift and gain.",
                kind="module_doc",
                symbol="pkg.cal",
            ),
            chunk("pkg/cal.py", 3, "fit a curve to the sensor", symbol="pkg.cal.fit"),
            chunk("pkg/oth.py", 3, "fit a curve sensor sensor", symbol="pkg.oth.fit2"),
        ]
    )
    q = "calibrate the sensor"
    off = ranked(snap, aux, q)
    on = ranked(snap, aux, q, only="module_inherit")
    assert off.index("pkg.oth.fit2") < off.index("pkg.cal.fit")
    assert on.index("pkg.cal.fit") < on.index("pkg.oth.fit2")


def test_code_first_prose_leads_only_a_howto():
    rec = chunk("recipes/g.md", 1, "sensor gain sensor gain notes", kind="recipe")
    snap, aux = index(
        [
            rec,
            chunk("recipes/h.md", 1, "sensor gain sensor notes", kind="recipe"),
            chunk(
                "pkg/s.py", 1, "sensor gain of one station", symbol="pkg.s.sensor_gain"
            ),
        ]
    )
    api = "sensor gain"
    assert ranked(snap, aux, api)[0] == rec.id
    assert ranked(snap, aux, api, only="code_first")[0] == "pkg.s.sensor_gain"
    howto = "how do I set the sensor gain"
    assert is_howto(howto) and not is_howto(api)
    on = ranked(snap, aux, howto, only="code_first")
    # a how-to may lead with the best recipe, but the next prose yields to code
    assert on[:2] == [rec.id, "pkg.s.sensor_gain"]


def test_code_first_a_module_docstring_yields_to_its_symbol():
    snap, aux = index(
        [
            chunk(
                "pkg/m.py",
                0,
                "tipper arrows tipper arrows",
                kind="module_doc",
                symbol="pkg.m",
            ),
            chunk(
                "pkg/m.py",
                3,
                "arrows of one site from the tipper and more words here",
                symbol="pkg.m.arrows",
            ),
        ]
    )
    assert ranked(snap, aux, "tipper arrows") == ["pkg.m", "pkg.m.arrows"]
    assert ranked(snap, aux, "tipper arrows", only="code_first") == [
        "pkg.m.arrows",
        "pkg.m",
    ]


def _hampel_code(words: Callable[[int], int]) -> list[Chunk]:
    """14 code chunks without a workflow that match "hampel filter window",
    the i-th with ``words(i)`` filler words."""
    return [
        chunk(
            f"pkg/f{i}.py",
            1,
            f"hampel filter window {filler(words(i))}",
            symbol=f"pkg.f{i}.fn",
        )
        for i in range(14)
    ]


#: a guide of the denoise workflow that ranks low for "hampel filter window"
DENOISE_GUIDE = chunk(
    "recipes/den.md",
    1,
    "Denoise with a hampel filter. " + filler(300),
    kind="recipe",
    workflow="denoise",
)


def test_workflow_keep_keeps_the_workflows_guidance_on_the_first_page():
    guide = DENOISE_GUIDE
    snap, aux = index([*_hampel_code(lambda i: i % 3), guide])
    q = "hampel filter window"
    assert guide.id not in ranked(snap, aux, q, k=10)
    assert guide.id in ranked(snap, aux, q, k=10, only="workflow_keep")
    # by score, not by the cut: a longer list starts with the shorter one
    assert ranked(snap, aux, q, k=20, only="workflow_keep")[:10] == ranked(
        snap, aux, q, k=10, only="workflow_keep"
    )


def search_scores(snap, aux, q) -> list[float]:
    hits, _ = search(snap, aux, PROFILE, q, k=50, disable=STAGES)
    return [h.score for h in hits]


def test_workflow_keep_keeps_both_lifts_on_the_first_page():
    """A code chunk of the query's workflow and a guide, both below the first
    page: both are lifted onto it (the second lift used to push the first
    off: it went just above the cut the first one had become)."""
    mine = chunk(
        "pkg/w.py", 1, "hampel " + filler(40), symbol="pkg.w.wfn", workflow="denoise"
    )
    guide = DENOISE_GUIDE
    snap, aux = index([*_hampel_code(lambda i: i), mine, guide])
    q = "hampel filter window"
    seed = ranked(snap, aux, q, k=50)
    # the case: both below the first page, the workflow's code chunk first
    assert seed.index("pkg.w.wfn") >= 10
    assert seed.index(guide.id) > seed.index("pkg.w.wfn")
    page = ranked(snap, aux, q, k=10, only="workflow_keep")
    assert len(set(search_scores(snap, aux, q))) == 16  # no ties: places are exact
    assert page[-2:] == ["pkg.w.wfn", guide.id]
    assert page[:8] == seed[:8]
    assert ranked(snap, aux, q, k=20, only="workflow_keep")[:10] == page


def test_file_cap_lets_one_module_give_four_functions():
    big = [
        chunk("pkg/big.py", i * 10, f"static shift {filler(i)}", symbol=f"pkg.big.f{i}")
        for i in range(6)
    ]
    rest = [
        chunk(f"pkg/o{i}.py", 1, f"static shift {filler(8 + i)}", symbol=f"pkg.o{i}.g")
        for i in range(6)
    ]
    snap, aux = index(big + rest)
    q = "static shift"

    def from_big(names):
        return sum(n.startswith("pkg.big.") for n in names)

    assert from_big(ranked(snap, aux, q, k=8, per_file=2)) == 2
    # per_file + CODE_EXTRA (2): a module's fourth function, not a fifth
    assert from_big(ranked(snap, aux, q, k=8, per_file=2, only="file_cap")) == 4


def test_fold_reads_a_plural_query_word_as_the_singular_too():
    sing = chunk("pkg/loc.py", 1, "distance point", symbol="pkg.loc.span")
    other = chunk("pkg/geo.py", 1, "distance line", symbol="pkg.geo.along")
    snap, aux = index([sing, other])
    q = "distance of my points"
    # the seed alone: both match "distance" only (a tie, by chunk id); with
    # the fold the singular "point" counts too
    assert ranked(snap, aux, q, only="none")[:2] == ["pkg.geo.along", "pkg.loc.span"]
    assert ranked(snap, aux, q, only="fold")[:2] == ["pkg.loc.span", "pkg.geo.along"]


def test_fold_never_adds_a_candidate():
    only_singular = chunk("pkg/a.py", 1, "station table", symbol="pkg.a.tab")
    snap, aux = index([only_singular])
    # "stations" is no word of the index: the fold would reach pkg.a.tab,
    # but a chunk must match the query itself
    assert "pkg.a.tab" not in ranked(snap, aux, "stations", only="fold")


def test_fold_weights_are_the_body_scores_bit_for_bit(monkeypatch):
    """The fold's own cache of body weights gives ``bm25.scores`` exactly,
    on a built index and on an updated one (delta segment, removed slots),
    cold and warm, and when it starts over because it is full."""
    import numpy as np

    from pycsamt_lsp.search import fold as fold_mod

    docs = [
        chunk("pkg/a.py", 1, "station stations table point", symbol="pkg.a.tab"),
        chunk("pkg/b.py", 1, "points station " * 3, symbol="pkg.b.pts"),
        chunk("pkg/c.py", 1, "boxes box body bodies", symbol="pkg.c.box"),
    ]
    snap, _ = index(docs)
    extra = chunk("pkg/d.py", 1, "station box points " + filler(9), symbol="pkg.d.x")
    again = chunk("pkg/b.py", 1, "points " + filler(3), symbol="pkg.b.pts")
    changed = {"pkg/d.py": ("1" * 64, [extra]), "pkg/b.py": ("2" * 64, [again])}
    upd = snap.updated(changed, [], "1" * 64)
    assert upd.bm25.n_docs < upd.bm25.n_slots and len(upd.bm25.delta_doc)
    terms = ["stations", "station", "points", "box", "bodies", "nosuchword", "point"]
    for limit in (fold_mod.FOLD_POSTINGS, 3):  # 3: the cache starts over
        monkeypatch.setattr(fold_mod, "FOLD_POSTINGS", limit)
        for sn in (snap, upd):
            fw = fold_mod.FoldWeights()
            for _ in range(2):  # cold, then warm
                for i in range(len(terms)):
                    got = fw.scores(sn.bm25, terms[i:] + terms[:i])
                    want = sn.bm25.scores(terms[i:] + terms[:i])
                    assert got.tobytes() == want.tobytes()
            assert fw.scores(sn.bm25, ["nosuchword"]).tobytes() == (
                np.zeros(sn.bm25.n_slots).tobytes()
            )
            assert fw.size <= limit


def _scores(snap, aux, query, on: tuple[str, ...]) -> dict[str, float]:
    """Score per symbol with only the stages *on* (``+name`` entries too)."""
    disable = tuple(s for s in STAGES if s not in on) + tuple(
        f"+{s}" for s in on if s in OFF_BY_DEFAULT
    )
    hits, _ = search(snap, aux, PROFILE, query, k=60, disable=disable)
    t = snap.table
    return {t.symbols[h.slot] or t.ids[h.slot]: h.score for h in hits}


def test_name_cover_weighs_a_name_by_the_question_words_it_holds():
    one = chunk("pkg/cache.py", 1, "put processed item cache", symbol="pkg.cache.put")
    two = chunk(
        "pkg/share.py",
        1,
        "package results processed archive",
        symbol="pkg.share.package_results",
    )
    snap, aux = index([one, two])
    q = "put my processed results into a small shareable package"
    plain = ranked(snap, aux, q, only="field_bm25")
    got = _scores(snap, aux, q, ("field_bm25", "name_cover"))
    covered = sorted(got, key=lambda x: -got[x])
    # a one-word name holding one plain word of a long question leads
    # without the stage; the name that holds two of its words leads with it
    assert plain.index("pkg.cache.put") < plain.index("pkg.share.package_results")
    assert covered.index("pkg.share.package_results") < covered.index("pkg.cache.put")
    # a question that is the name keeps the field's full score
    q = "package results"
    assert _scores(snap, aux, q, ("field_bm25", "name_cover")) == pytest.approx(
        _scores(snap, aux, q, ("field_bm25",))
    )


def _coded(path: str, symbol: str, doc: str, body: str) -> Chunk:
    """A code chunk with a docstring, as the Python chunker writes one."""
    text = f"Symbol: {symbol}\nFile: {path}\n\nDocstring:\n{doc}\n\nCode:\n{body}"
    c = chunk(path, 1, text, symbol=symbol)
    c.metadata["docstring"] = doc
    return c


def test_head_wide_lets_the_head_speak_below_the_twentieth_candidate():
    from pycsamt_lsp.search.head import HEAD_POOL
    from pycsamt_lsp.search.stages import HEAD_POOL_WIDE

    rivals = [
        _coded(f"pkg/r{i}.py", f"pkg.r{i}.f{i}", f"Helper {i}.", "alpha beta " * 3)
        for i in range(HEAD_POOL + 5)
    ]
    target = _coded(
        "pkg/t.py", "pkg.t.target", "Alpha beta gamma.", filler(120) + " alpha"
    )
    snap, aux = index([*rivals, target])
    q = "alpha beta gamma"
    narrow = _scores(snap, aux, q, ("field_head",))
    wide = _scores(snap, aux, q, ("field_head", "head_wide"))
    order = sorted(narrow, key=lambda x: -narrow[x])
    # below the narrow pool: field_head alone gives it nothing
    assert HEAD_POOL < order.index("pkg.t.target") < HEAD_POOL_WIDE
    assert narrow["pkg.t.target"] == pytest.approx(
        _scores(snap, aux, q, ())["pkg.t.target"]
    )
    assert wide["pkg.t.target"] > narrow["pkg.t.target"]
    wide_order = sorted(wide, key=lambda x: -wide[x])
    assert wide_order.index("pkg.t.target") < order.index("pkg.t.target")


def test_stages_keep_the_seeds_confidence_score():
    snap, aux = index(
        [RECIPE, chunk("pkg/cal.py", 1, "gain", symbol="pkg.cal.fit_gain")]
    )
    q = "calibrate the sensor gain"
    _, on = search(snap, aux, PROFILE, q)
    _, off = search(snap, aux, PROFILE, q, disable=STAGES)
    assert on["top_score"] == off["top_score"] > 0


# -- quality gates on the real corpus, tuning split ---------------------------

#: component -> (metric of the tuning split, floor). Measured on the sdist
#: (overall of suites/tuning: fresh_tuning, paraphrase, dense_tuning and,
#: since session 9, no_vocab_tuning; exact symbols): the full engine vs that
#: component off. A floor sits between the two. Re-measured in session 9
#: when no_vocab_tuning's 50 questions without the package's words joined
#: the split (370 records; default engine MRR@10 0.719, hit@10 0.851,
#: nDCG@10 0.750, wf@10 0.896: those 50 alone rank far lower than the rest).
GATES: dict[str, tuple[str, float]] = {
    "symbol_specific": ("mrr_at_k", 0.71),  # 0.719 vs 0.688 without it
    "field_bm25": ("mrr_at_k", 0.712),  # vs 0.705
    # fold is off by default (query p50): "+fold" 0.734 vs the default 0.719
    "fold": ("mrr_at_k", 0.726),
    # name_cover and head_wide are off by default (session 6): "+name_cover"
    # hit@10 0.860 vs the default 0.851, "+head_wide" 0.854 vs 0.851
    "name_cover": ("hit_at_k", 0.855),
    "field_head": ("ndcg_at_10", 0.73),  # 0.750 vs 0.705 (MRR 0.719 vs 0.669)
    "head_wide": ("hit_at_k", 0.852),
    # inherit: no gate on this split (MRR@10 0.7193 with it, 0.7197 without;
    # hit, nDCG and wf@10 no better); its behaviour is held by fixture tests
    "module_inherit": ("mrr_at_k", 0.712),  # vs 0.705
    "code_first": ("mrr_at_k", 0.665),  # with field_head off: 0.669 vs 0.662
    "workflow_keep": ("workflow_in_topk", 0.875),  # 0.896 vs 0.852
    "file_cap": ("hit_at_k", 0.84),  # 0.851 vs 0.831
    "seed": ("mrr_at_k", 0.6),  # every stage off: 0.449
}
#: gates measured with another stage off, which masks the component on this
#: split: component -> that stage. field_head and code_first both lift code
#: above prose; with field_head on, code_first changes the tuning split's
#: MRR@10 little (0.8230 vs 0.8227 before session 9, 0.719 vs 0.715 since),
#: so its gate compares "field_head off" with "field_head and code_first off".
MASKED: dict[str, str] = {"code_first": "field_head"}


def gate(metrics: dict, component: str) -> bool:
    metric, floor = GATES[component]
    value = metrics.get(metric)
    return value is not None and value >= floor


def gate_rows(rows: dict, component: str) -> tuple[dict, dict]:
    """The metrics a gate compares: ``(with the component, without it)``."""
    if component in OFF_BY_DEFAULT:  # switched on by "+name"
        return rows[f"+{component}"], rows["baseline"]
    masked = MASKED.get(component)
    if masked is None:
        return rows["baseline"], rows[component]
    return rows[masked], rows[f"{masked},{component}"]


#: the tuning files the floors above were measured on; a tuning file added
#: later (session 13's howto_tuning.jsonl) moves every figure, so it joins
#: only when the floors are measured again with it
GATE_SUITES = (
    "dense_tuning.jsonl",
    "fresh_tuning.jsonl",
    "no_vocab_tuning.jsonl",
    "paraphrase.jsonl",
)


@pytest.fixture(scope="module")
def ablation(real_corpus, tmp_path_factory):
    ws = Workspace(
        real_corpus, load_profile(), index_dir=tmp_path_factory.mktemp("idx")
    )
    ws.open()
    tuning = tmp_path_factory.mktemp("gate-suites")
    for name in GATE_SUITES:
        shutil.copy(REPO / "suites" / "tuning" / name, tuning / name)
    rep = run_command("pycsamt.eval", ws, {"suiteDir": str(tuning), "ablate": True})
    rows = {row["component"]: row["metrics"] for row in rep["rows"]}
    masked = run_ablation(
        lambda disabled: eval_retriever(ws, disabled),
        sorted(tuning.glob("*.jsonl")),
        ws.profile.query_workflow,
        is_test_path=ws.profile.is_test_path,
        components=[f"{m},{c}" for c, m in MASKED.items()],
    )
    rows.update((r["component"], r["metrics"]) for r in masked["rows"][1:])
    return rows


@pytest.mark.corpus
@pytest.mark.parametrize("component", sorted(GATES))
def test_gate_passes_with_the_full_engine(ablation, component):
    on, _ = gate_rows(ablation, component)
    assert gate(on, component), (component, on)


@pytest.mark.corpus
@pytest.mark.parametrize("component", sorted(GATES))
def test_gate_fails_when_its_component_is_off(ablation, component):
    _, off = gate_rows(ablation, component)
    assert not gate(off, component), (component, off)


# -- answers that answer: a list of phrasings is never the answer's body -------

PHRASINGS = """\
Document: recipes/qc.md
How users ask about bad soundings

- "which soundings should I throw away"
- "are any of my soundings junk"
- "throw away the soundings nobody can trust"
"""

GUIDE = """\
Document: recipes/qc.md
Bad sounding symbols to use

- `geo.qc.flag_soundings`: flags soundings whose error bars are too large.
- Review checks: compare the flagged soundings with the field notes.
"""


def test_is_phrasing_list():
    assert is_phrasing_list(PHRASINGS)
    assert is_phrasing_list(PHRASINGS, "How users ask about bad soundings")
    assert not is_phrasing_list(GUIDE, "Bad sounding symbols to use")
    # questions as items, no heading: still only ways to ask
    assert is_phrasing_list("- which soundings are bad?\n- are they junk?\n")
    # a paragraph with a list is guidance
    assert not is_phrasing_list(
        "Flag soundings first.\nThen decide what to drop.\n- one\n- two\n"
    )
    # unquoted items under a heading that says they are phrasings
    assert is_phrasing_list(
        "- drop bad soundings\n- junk soundings", "Example questions"
    )
    assert not is_phrasing_list("- drop bad soundings\n- junk soundings", "Checks")


ASK_PROFILE = """
name = "phrasefix"
package = "geo"
roots = ["geo", "recipes"]
suffixes = [".py", ".md"]
recipe_dir = "recipes"
workflow_paths = []
"""

ASK_FILES = {
    "recipes/qc.md": (
        "# Bad soundings\n\nWorkflow: qc\n\n"
        "## How users ask about bad soundings\n\n"
        '- "which soundings should I throw away"\n'
        '- "are any of my soundings junk, which soundings to throw away"\n'
        '- "throw away the soundings nobody can trust"\n\n'
        "## Bad sounding symbols to use\n\n"
        "- `geo.qc.flag_soundings` flags soundings whose error bars are too large.\n"
    ),
    "geo/__init__.py": "",
    "geo/qc.py": (
        "def flag_soundings(table, max_err=0.2):\n"
        '    """Flag the soundings whose relative error exceeds max_err."""\n'
        "    return table\n"
    ),
}


@pytest.fixture()
def phrase_ws(tmp_path, monkeypatch) -> Workspace:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    root = tmp_path / "corpus"
    for rel, text in ASK_FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    for i in range(200):  # a package around it, so the evidence is confident
        (root / "geo" / f"m{i}.py").write_text(
            f'def tool{i}():\n    """Unrelated helper number {i}."""\n',
            encoding="utf-8",
        )
    (root / "phrasefix.toml").write_text(ASK_PROFILE, encoding="utf-8")
    ws = Workspace(
        root, load_profile(root / "phrasefix.toml"), index_dir=root / ".idx", workers=1
    )
    ws.build()
    return ws


def test_offline_answer_never_quotes_a_phrasing_list(phrase_ws):
    q = "which soundings should I throw away"
    top = run_command("pycsamt.query", phrase_ws, {"query": q, "k": 5})["results"]
    # retrieval does return the phrasing section, first
    assert top[0]["label"].endswith("How users ask about bad soundings")
    res = run_command("pycsamt.ask", phrase_ws, {"question": q})
    assert res["path"] == "offline" and res["confident"] is True, res
    body = res["answer"]
    assert "nobody can trust" not in body and "junk" not in body
    assert "How users ask" not in body
