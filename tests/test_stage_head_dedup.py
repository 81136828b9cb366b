"""Stages ``field_head`` and ``dedup`` (search/head.py, search/dedup.py, issue 14).

- each stage on a small fixture index, alone (every other stage off): it
  changes the seed's ranking the way its docstring says, and the seed's
  ranking comes back when it is off;
- a save: the ranking arrays updated in place (their per-slot caches
  carried, warm) rank exactly as arrays built from scratch, and a saved
  file's new chunks get the stages' data (through ``Workspace.refresh``);
- on the real corpus and the *tuning* split: what each stage does there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.corpus.profile import load_profile, profile_from_dict
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.tokenize import tokenize
from pycsamt_lsp.search.dedup import BodyCache, copies, header_text
from pycsamt_lsp.search.fields import CODE_KINDS as CODE
from pycsamt_lsp.search.head import (
    HeadCache,
    _raw_head,
    first_sentence,
    fold,
    head_scores,
    head_text,
)
from pycsamt_lsp.search.retrieval import RankAux, search
from pycsamt_lsp.search.stages import OFF_BY_DEFAULT, STAGES
from pycsamt_lsp.workspace.facade import Workspace

REPO = Path(__file__).resolve().parents[1]

PROFILE = profile_from_dict(
    {"name": "fixture", "package": "pkg", "roots": ["pkg"], "workflows": {}}
)


def code(
    path: str,
    line: int,
    symbol: str,
    doc: str,
    body: str,
    *,
    kind: str = "python_symbol",
) -> Chunk:
    """A code chunk written the way the Python chunker writes one."""
    text = (
        f"Symbol: {symbol}\nSignature: {symbol.rsplit('.', 1)[-1]}()\n"
        f"File: {path}\n\nDocstring:\n{doc}\n\nCode:\n{body}"
    )
    return Chunk(
        id=f"{path}:{line}:{line + 5}",
        text=text,
        source_path=path,
        kind=kind,
        symbol=symbol,
        priority=1,
        metadata={"line_start": line, "line_end": line + 5, "docstring": doc},
    )


#: unrelated symbols, so the statistics (idf) are those of a package
PAD = [
    code(
        f"pkg/z{i}.py",
        1,
        f"pkg.z{i}.tool{i}",
        f"Tool number {i}.",
        " ".join(f"word{j}" for j in range(i % 7 + 3)),
    )
    for i in range(30)
]


def files_of(chunks: list[Chunk]) -> dict[str, tuple[str, list[Chunk]]]:
    out: dict[str, tuple[str, list[Chunk]]] = {}
    for c in chunks:
        out.setdefault(c.source_path, ("0" * 64, []))[1].append(c)
    return out


def index(chunks: list[Chunk]) -> tuple[Snapshot, RankAux]:
    snap = Snapshot.build(files_of([*chunks, *PAD]), "f" * 64)
    return snap, RankAux.of(snap)


def ranked(snap, aux, query, *, only: str | None = None, k: int = 50) -> list[str]:
    """Symbols in rank order with at most stage *only* on (``+name`` switches
    on a stage that is off by default)."""
    disable = [s for s in STAGES if s != only]
    if only in OFF_BY_DEFAULT:
        disable.append(f"+{only}")
    hits, _ = search(snap, aux, PROFILE, query, k=k, disable=disable)
    return [snap.table.symbols[h.slot] or snap.table.ids[h.slot] for h in hits]


def test_the_stages_are_registered_in_run_order():
    assert STAGES.index("field_bm25") < STAGES.index("field_head")
    assert STAGES.index("field_head") < STAGES.index("inherit")
    assert STAGES.index("code_first") < STAGES.index("dedup")
    assert STAGES.index("dedup") < STAGES.index("workflow_keep")
    assert set(STAGES) >= OFF_BY_DEFAULT


# -- field_head ---------------------------------------------------------------


def test_head_is_the_first_sentence_of_the_docstring():
    doc = "Convert conductivity in mS/cm to resistivity. Uses a factor.\n\nMore."
    assert first_sentence(doc) == "Convert conductivity in mS/cm to resistivity."
    assert first_sentence("One line\nwrapped here\n\nParameters") == (
        "One line wrapped here"
    )
    assert head_text("python_method", {"docstring": doc}) == first_sentence(doc)
    # no docstring entry: the text's Docstring block
    c = code("pkg/a.py", 1, "pkg.a.f", "Read a station file.", "return 1")
    assert head_text(c.kind, {}, c.text) == "Read a station file."
    assert head_text("recipe", {"docstring": doc}, "x") == ""
    assert head_text("module_doc", {"docstring": doc}, "x") == ""


SUMMARY = code(
    "pkg/units.py",
    1,
    "pkg.units.to_ohm",
    "Convert water conductivity to resistivity.",
    "def to_ohm(x):\n    return 1.0 / x * factor * scale * offset * gain",
)
BODY = code(
    "pkg/grid.py",
    1,
    "pkg.grid.cells",
    "Cells of the grid.",
    "def cells(g):\n    conductivity = g.conductivity\n"
    "    resistivity = 1 / conductivity\n    water = resistivity",
)


def test_field_head_lifts_the_symbol_whose_summary_says_it():
    snap, aux = index([SUMMARY, BODY])
    q = "water conductivity to resistivity"
    off = ranked(snap, aux, q)
    on = ranked(snap, aux, q, only="field_head")
    assert off.index("pkg.grid.cells") < off.index("pkg.units.to_ohm")
    assert on.index("pkg.units.to_ohm") < on.index("pkg.grid.cells")
    # off by default: the default ranking is the seed-plus-stages one without it
    if "field_head" in OFF_BY_DEFAULT:
        hits, _ = search(snap, aux, PROFILE, q, k=50, disable=[*STAGES])
        assert [snap.table.symbols[h.slot] for h in hits] == off


def test_field_head_reads_a_chunk_once_and_only_for_the_pool():
    snap, aux = index([SUMMARY, BODY])
    heads = aux.stages.heads
    ranked(snap, aux, "water conductivity to resistivity", only="field_head")
    first = heads.reads
    assert 0 < first <= 20  # HEAD_POOL
    ranked(snap, aux, "water conductivity to resistivity", only="field_head")
    assert heads.reads == first  # warm: nothing read again


# -- dedup --------------------------------------------------------------------

COPY_BODY = (
    "def conductivity(self):\n"
    '    """Cell conductivities of the mesh, shape of the grid."""\n'
    "    return 1.0 / self.resistivity_of_cells"
)
COPY_A = code(
    "pkg/grid2d.py",
    40,
    "pkg.grid2d.Grid2D.conductivity",
    "Cell conductivities of the mesh, shape of the grid.",
    COPY_BODY,
    kind="python_method",
)
COPY_B = code(
    "pkg/grid3d.py",
    40,
    "pkg.grid3d.Grid3D.conductivity",
    "Cell conductivities of the mesh, shape of the grid.",
    COPY_BODY,
    kind="python_method",
)
OTHER = code(
    "pkg/petro.py",
    1,
    "pkg.petro.ec_to_rho",
    "Resistivity from a conductivity reading.",
    "def ec_to_rho(ec):\n    return 10.0 / ec",
)
#: a sibling that differs in what it is about (as EMAP2DInversion and
#: MT2DInversion do): not a copy
SIBLING = code(
    "pkg/grid1d.py",
    40,
    "pkg.grid1d.Grid1D.conductivity",
    "Layer conductivities of a layered earth model.",
    "def conductivity(self):\n"
    '    """Layer conductivities of a layered earth model."""\n'
    "    return 1.0 / self.layer_resistivity",
    kind="python_method",
)


def test_dedup_moves_a_copy_below_the_others():
    snap, aux = index([COPY_A, COPY_B, OTHER])
    q = "cell conductivities of the mesh resistivity"
    off = ranked(snap, aux, q)
    on = ranked(snap, aux, q, only="dedup")
    copies_ = {COPY_A.symbol, COPY_B.symbol}
    assert set(off[:2]) == copies_  # the two copies fill the top
    assert on[0] in copies_ and on[1] == OTHER.symbol
    assert on[2] in copies_ - {on[0]}
    # the copy kept is the better one; equal scores: the smaller chunk id
    assert on[0] == off[0] == min(copies_, key=lambda s: s.replace(".", "/"))


def test_dedup_keeps_siblings_that_say_different_things():
    snap, aux = index([COPY_A, SIBLING, OTHER])
    q = "conductivities resistivity"
    assert ranked(snap, aux, q, only="dedup") == ranked(snap, aux, q)


def test_dedup_compares_bodies_not_headers():
    snap, _ = index([COPY_A, COPY_B, SIBLING])
    slot = {s: i for i, s in enumerate(snap.table.symbols)}
    cache = BodyCache()
    a, b, c = (slot[x.symbol] for x in (COPY_A, COPY_B, SIBLING))
    assert copies(snap, cache, [a, b, c]) == [1]
    assert copies(snap, cache, [c, b, a]) == [2]
    assert copies(snap, cache, [a, c]) == []
    # the header's terms are taken off by their counts, not as words: the
    # body keeps "conductivity" although the symbol names it
    body = dict(zip(*cache.body(snap, a)[:2], strict=True))
    assert body[snap.bm25.vocab["conductivity"]] >= 2
    assert "Grid2D" in header_text("python_method", COPY_A.symbol, COPY_A.source_path)


# -- a save: updated arrays rank as rebuilt ones; new chunks get the data -----

BASE = [SUMMARY, BODY, COPY_A, COPY_B, OTHER]
QUERIES = [
    "water conductivity to resistivity",
    "cell conductivities of the mesh resistivity",
    "conductivity",
    "grid cells",
]
ON = [("+field_head",), ("+dedup",), ("+field_head", "+dedup")]


def rankings(snap: Snapshot, aux: RankAux) -> list:
    out = []
    for q in QUERIES:
        for on in ON:
            for off in [(), ("field_bm25", "code_first")]:
                hits, _ = search(
                    snap, aux, PROFILE, q, k=20, disable=(*on, *off), per_file=2
                )
                out.append([(snap.table.ids[h.slot], h.score) for h in hits])
    return out


def test_a_save_keeps_the_caches_and_ranks_as_a_rebuild():
    snap = Snapshot.build(files_of([*BASE, *PAD]), "f" * 64)
    aux = RankAux.of(snap)
    rankings(snap, aux)  # warm both caches
    st = aux.stages
    assert st.heads.terms and st.bodies.rows
    # the save: grid3d.py's copy is edited into a different method, and a new
    # function whose summary says what the first query asks
    new_b = code(
        "pkg/grid3d.py",
        40,
        "pkg.grid3d.Grid3D.conductivity",
        "Voxel conductivities of the 3-D volume.",
        "def conductivity(self):\n    return self.voxels",
        kind="python_method",
    )
    fresh = code(
        "pkg/grid3d.py",
        60,
        "pkg.grid3d.water_to_ohm",
        "Water conductivity to resistivity, per voxel.",
        "def water_to_ohm(v):\n    return v",
    )
    changed = files_of([new_b, fresh])
    new = snap.updated(changed, [], "1" * 64)
    upd = aux.extended(new, len(snap.table))
    n_old = len(snap.table)
    # carried: the old live slots' entries, not re-read; the removed slots' gone
    kept = upd.stages.heads.terms
    assert kept and all(k < n_old and new.bm25.alive[k] for k in kept)
    assert set(kept) == {k for k in st.heads.terms if new.bm25.alive[k]}
    assert upd.stages.heads.reads == 0
    ref = RankAux.of(new)
    assert rankings(new, upd) == rankings(new, ref)
    # the new chunks were read and scored
    new_slots = {
        i for i in range(n_old, len(new.table)) if new.table.symbols[i] == fresh.symbol
    }
    assert new_slots and new_slots <= set(upd.stages.heads.terms)
    (slot,) = new_slots
    assert {"water", "conductivity", "resistivity"} <= upd.stages.heads.terms[slot]
    assert slot in upd.stages.bodies.rows


#: docstrings the stored line escapes: quotes, backslashes, non-ASCII, a
#: literal "Code:" line inside the docstring, a first paragraph on 2 lines
ESCAPES = (
    "def ohm(v):\n"
    '    r"""Resistivity in \u03a9\u00b7m from "raw" \\n counts.\n'
    "\n"
    "    Code:\n"
    '    more."""\n'
    "    return v\n\n\n"
    "def tab(v):\n"
    '    """Tab\\tseparated values of a\n    station table. Then more."""\n'
    "    return v\n"
)
FILES = {
    "geo/__init__.py": "",
    "geo/units.py": (
        "def scale(x, factor=2.0):\n"
        '    """Scale a value by a factor."""\n'
        "    return x * factor\n"
    ),
    "geo/esc.py": ESCAPES,
    "geo/grid.py": (
        "def cells(g):\n"
        '    """Cells of the grid."""\n'
        "    conductivity = g.conductivity\n"
        "    resistivity = 1 / conductivity\n"
        "    water = resistivity\n"
        "    return water\n"
    ),
}
WS_PROFILE = """
name = "headfix"
package = "geo"
roots = ["geo"]
suffixes = [".py"]
workflow_paths = []
"""


@pytest.fixture()
def ws(tmp_path, monkeypatch) -> Workspace:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    root = tmp_path / "corpus"
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    for i in range(40):
        (root / "geo" / f"m{i}.py").write_text(
            f'def tool{i}(a):\n    """Unrelated helper number {i}."""\n    return a\n',
            encoding="utf-8",
        )
    (root / "headfix.toml").write_text(WS_PROFILE, encoding="utf-8")
    w = Workspace(
        root, load_profile(root / "headfix.toml"), index_dir=root / ".idx", workers=1
    )
    w.build()
    return w


def test_a_saved_files_new_function_gets_its_head(ws):
    q = "water conductivity to resistivity"
    on = ("+field_head",) if "field_head" in OFF_BY_DEFAULT else ()
    off = () if "field_head" in OFF_BY_DEFAULT else ("field_head",)
    ws.query(q, 5, disable=on, snippets=False)  # caches warm before the save
    path = ws.root / "geo" / "units.py"
    path.write_text(
        FILES["geo/units.py"] + "\n\ndef to_ohm(v):\n"
        '    """Water conductivity to resistivity."""\n'
        "    return 1.0 / v\n",
        encoding="utf-8",
    )
    assert ws.refresh([path])["changed"] == ["geo/units.py"]

    def top(disable):
        res = ws.query(q, 5, disable=disable, snippets=False)["results"]
        return [r["symbol"] for r in res]

    assert top(on)[0] == "geo.units.to_ohm"
    assert top(off).index("geo.grid.cells") < top(off).index("geo.units.to_ohm")


def test_a_stored_chunks_head_is_read_from_a_prefix_of_its_line(ws):
    """The fast path (a prefix of the stored JSON line, not parsed) gives the
    head the parsed chunk gives, escapes included."""
    loaded = Workspace(ws.root, ws.profile, index_dir=ws.root / ".idx", workers=1)
    loaded.open()
    snap = loaded.require_published().snapshot
    t = snap.table
    assert t.source is not None and not t.in_memory  # loaded from chunks.jsonl
    code_slots = [i for i, k in enumerate(t.kinds) if k in CODE]
    heads = {}
    for slot in code_slots:
        fast = _raw_head(snap, slot)
        c = t.get(slot)
        assert fast is not None, t.ids[slot]
        assert fast == head_text(c.kind, c.metadata, c.text), t.ids[slot]
        heads[t.symbols[slot]] = fast
    assert heads["geo.esc.ohm"] == 'Resistivity in \u03a9\u00b7m from "raw" \\n counts.'
    # a real tab in the docstring: whitespace joined, like the line breaks
    assert heads["geo.esc.tab"] == "Tab separated values of a station table."
    # and the cache reads it so: the same terms as the parsed chunk's head
    cache = HeadCache()
    for slot in code_slots:
        c = t.get(slot)
        assert cache.head(snap, slot) == frozenset(
            map(fold, tokenize(head_text(c.kind, c.metadata, c.text)))
        )


# -- the real corpus, tuning split ---------------------------------------------


@pytest.fixture(scope="module")
def sdist(real_corpus, tmp_path_factory) -> Workspace:
    w = Workspace(real_corpus, load_profile(), index_dir=tmp_path_factory.mktemp("idx"))
    w.open()
    return w


@pytest.mark.corpus
def test_dedup_on_the_sdist_keeps_one_copy_on_the_first_page(sdist):
    # a tuning-split query whose first page holds Grid2D.conductivity and its
    # copy Grid3D.conductivity (same body, sibling classes)
    q = "turn water conductivity in millisiemens into ohm metres"
    snap = sdist.require_published().snapshot
    slots = {i: s for i, s in enumerate(snap.table.ids)}
    by_id = {v: k for k, v in slots.items()}

    def page(disable):
        res = sdist.query(q, 10, disable=disable, snippets=False)["results"]
        return [by_id[r["id"]] for r in res]

    on = ("+dedup",) if "dedup" in OFF_BY_DEFAULT else ()
    off = () if "dedup" in OFF_BY_DEFAULT else ("dedup",)
    cache = BodyCache()
    assert copies(snap, cache, page(off)), "the first page holds two copies"
    assert not copies(snap, cache, page(on))


@pytest.fixture(scope="module")
def ablation_rows(sdist):
    from pycsamt_lsp.commands.catalog import run_command

    rep = run_command(
        "pycsamt.eval",
        sdist,
        {"suiteDir": str(REPO / "suites" / "tuning"), "ablate": True},
    )
    return {row["component"]: row for row in rep["rows"]}


@pytest.mark.corpus
def test_the_ablation_lists_both_stages(ablation_rows):
    for name in ("field_head", "dedup"):
        label = f"+{name}" if name in OFF_BY_DEFAULT else name
        assert label in ablation_rows, sorted(ablation_rows)
    assert np.isfinite(ablation_rows["baseline"]["metrics"]["mrr_at_k"])


def test_head_terms_match_across_singular_and_plural():
    """A head that says "Site objects" answers "a Sites object" as well as a
    head that says "sites" does: the fold takes a plural s off both sides
    (without it a writer of sites outranked the Sites class on a bundled
    loading question), and leaves words such as "class" or "status" alone."""
    assert [fold(t) for t in ("sites", "objects", "class", "status", "gis")] == [
        "site",
        "object",
        "class",
        "status",
        "gis",
    ]


def test_head_term_weights_are_kept_per_index(ws):
    """The (fold, idf) of each query term is computed once per index: a warm
    cache scores as a fresh one, an unknown term is remembered as such, and a
    save's updated index starts a new cache (its df changed)."""
    snap = ws.require_published().snapshot
    slots = [i for i, k in enumerate(snap.table.kinds) if k in CODE]
    tokens = ["cells", "grid", "resistivity", "nosuchterm", "cells"]
    warm = HeadCache()
    first = head_scores(snap, warm, tokens, slots)
    assert warm.weights["nosuchterm"] is None
    assert warm.weights["cells"] is not None and warm.weights["cells"][0] == "cell"
    assert first.any()
    assert (head_scores(snap, warm, tokens, slots) == first).all()
    assert (head_scores(snap, HeadCache(), tokens, slots) == first).all()
    carried = warm.carried(snap.bm25.alive, len(snap.bm25.alive))
    assert carried.weights == {} and carried.terms == warm.terms
