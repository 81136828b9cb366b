"""A save updates the ranking arrays; the result equals a rebuild (issue 18).

``RankAux.extended`` (and with it ``StageAux.updated`` and
``NameField.updated``) touch only the slots an update removed or appended.
These tests build a small index, apply several updates (a changed file, a
removed file, an added file, a module name held by two files, a file whose
module docstring disappears) and check after each that every array, the
module tree, the name field's statistics and scores, the prose-name resolver
and the rankings are exactly those of ranking arrays built from scratch for
the same snapshot.
"""

from __future__ import annotations

import numpy as np
import pytest

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.search.retrieval import COMPONENTS, STAGES, RankAux, search
from pycsamt_lsp.search.stages import OFF_BY_DEFAULT, StageAux

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
        priority=2 if kind == "python_symbol" else 1,
        metadata={"line_start": line, "line_end": line + 1},
    )


def module(name: str, funcs: list[str], doc: str, *, method: str = "") -> list[Chunk]:
    path = name.replace(".", "/") + ".py"
    out = [chunk(path, 1, f"{name} {doc}", kind="module_doc", symbol=name)]
    for i, f in enumerate(funcs, 2):
        out.append(chunk(path, i * 10, f"{f} {doc} values", symbol=f"{name}.{f}"))
    if method:
        out.append(
            chunk(
                path,
                99,
                f"{method} of the grid {doc}",
                kind="python_method",
                symbol=f"{name}.Grid.{method}",
            )
        )
    return out


def files_of(chunks: list[Chunk]) -> dict[str, tuple[str, list[Chunk]]]:
    out: dict[str, tuple[str, list[Chunk]]] = {}
    for c in chunks:
        out.setdefault(c.source_path, ("0" * 64, []))[1].append(c)
    return out


RECIPE = chunk(
    "recipes/denoise.md",
    1,
    "Denoise a station with `pkg.filt.hampel_filter`, then check with "
    "pkg.filt.plot_noise and SpectrumTool; denoise hampel spikes",
    kind="recipe",
    workflow="denoise",
)
DOC = chunk(
    "docs/guide.rst",
    1,
    "Guide: pkg.io.read_station reads a station; pkg.filt.hampel_filter "
    "removes spikes from the noise",
    kind="doc_section",
)

BASE = [
    *module("pkg.io", ["read_station", "write_station"], "station files"),
    *module(
        "pkg.filt",
        ["hampel_filter", "plot_noise", "median_noise"],
        "noise spikes filter",
        method="smooth",
    ),
    *module("pkg.spec", ["SpectrumTool", "spectra"], "spectrum noise power"),
    *module("pkg.pad", [f"tool{i}" for i in range(20)], "unrelated padding words"),
    RECIPE,
    DOC,
]


def assert_same(a: StageAux, b: StageAux, snap: Snapshot) -> None:
    for name in ("code", "prose", "module_doc", "workflow", "alive", "mod_of"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), name)
    assert a.module_children.keys() == b.module_children.keys()
    for k in a.module_children:
        np.testing.assert_array_equal(a.module_children[k], b.module_children[k])
    fa, fb = a.names, b.names
    assert (fa.n_slots, fa.n_docs, fa.total) == (fb.n_slots, fb.n_docs, fb.total)
    np.testing.assert_array_equal(fa.lens, fb.lens)
    assert fa.postings.keys() == fb.postings.keys()
    for term, (slots, tf) in fa.postings.items():
        order_a = np.argsort(slots)
        order_b = np.argsort(fb.postings[term][0])
        np.testing.assert_array_equal(slots[order_a], fb.postings[term][0][order_b])
        np.testing.assert_array_equal(tf[order_a], fb.postings[term][1][order_b])
    every = np.arange(len(snap.table))
    for term in fa.postings:
        # bit for bit: the weights come from the same exact integers
        assert np.array_equal(fa.scores([term], every), fb.scores([term], every))
    prose = np.flatnonzero(b.prose).tolist()
    for slot in prose:
        np.testing.assert_array_equal(a.named_by(snap, slot), b.named_by(snap, slot))
    ra, rb = a._names, b._names
    assert ra is not None and rb is not None
    assert ra.exact == rb.exact
    assert ra.by_leaf == rb.by_leaf


QUERIES = [
    "how to denoise a station with hampel",
    "hampel_filter",
    "plot noise spikes",
    "read station files",
    "spectrum power SpectrumTool",
    "smooth the grid",
    "filter",
    "station writer",
]


def rankings(snap: Snapshot, aux: RankAux) -> list:
    out = []
    for q in QUERIES:
        # every component off in turn, and each opt-in stage switched on
        ons = [(f"+{c}",) for c in sorted(OFF_BY_DEFAULT)]
        for off in [(), STAGES, *((c,) for c in COMPONENTS), *ons]:
            hits, info = search(snap, aux, PROFILE, q, k=20, disable=off, per_file=2)
            out.append(([(h.slot, h.score) for h in hits], info["top_score"]))
    return out


UPDATES = [
    # a changed file (a function renamed, one added, the docstring reworded)
    (
        files_of(
            module(
                "pkg.filt",
                ["hampel_filter", "plot_noise_map", "spike_count", "median_noise"],
                "noise spikes filter despike",
                method="smooth",
            )
        ),
        [],
    ),
    # a removed file, and a new file whose module another file also names
    (
        files_of(
            [
                chunk(
                    "pkg/io/__init__.py",
                    1,
                    "pkg.io package station readers",
                    kind="module_doc",
                    symbol="pkg.io",
                ),
                chunk("pkg/io/__init__.py", 5, "open station", symbol="pkg.io.opener"),
            ]
        ),
        ["pkg/spec.py"],
    ),
    # the module docstring of a file disappears, its functions stay; the recipe
    # changes (it now names a function of the new file)
    (
        {
            **files_of(
                [
                    chunk(
                        "pkg/io.py",
                        20,
                        "read station files",
                        symbol="pkg.io.read_station",
                    ),
                    chunk(
                        "pkg/io.py", 30, "write station", symbol="pkg.io.write_station"
                    ),
                ]
            ),
            **files_of(
                [
                    chunk(
                        RECIPE.source_path,
                        1,
                        RECIPE.text + " and pkg.io.opener",
                        kind="recipe",
                        workflow="denoise",
                    )
                ]
            ),
        },
        [],
    ),
    # the spectrum module comes back
    (files_of(module("pkg.spec", ["SpectrumTool"], "spectrum power")), []),
]


@pytest.mark.parametrize("resolver_first", [True, False])
def test_updates_equal_a_rebuild(resolver_first: bool):
    snap = Snapshot.build(files_of(BASE), "f" * 64)
    aux = RankAux.of(snap)
    if resolver_first:  # the resolver was built before the save: it is updated
        for slot in np.flatnonzero(aux.stages.prose).tolist():
            aux.stages.named_by(snap, slot)
    for i, (changed, removed) in enumerate(UPDATES):
        new = snap.updated(changed, removed, f"{i}" * 64)
        aux = aux.extended(new, len(snap.table))
        snap = new
        ref = RankAux.of(snap)
        if i == 0:  # later updates follow queries, which build the resolver
            assert (aux.stages._names is not None) == resolver_first
        assert rankings(snap, aux) == rankings(snap, ref)
        assert_same(aux.stages, ref.stages, snap)


def test_the_updates_change_what_they_should():
    """The fixture is not vacuous: the updates move slots, modules and names."""
    snap = Snapshot.build(files_of(BASE), "f" * 64)
    aux = RankAux.of(snap)
    first = aux.stages
    for i, (changed, removed) in enumerate(UPDATES):
        new = snap.updated(changed, removed, f"{i}" * 64)
        aux = aux.extended(new, len(snap.table))
        snap = new
    st = aux.stages
    assert st.names.n_docs != first.names.n_docs
    assert "spike" in st.names.postings and "spike" not in first.names.postings
    assert st.module_children.keys() != first.module_children.keys()
    # pkg.io has two files; the module docstring left is the package's
    io_doc = max(st.mod_slots["pkg.io"])
    assert snap.table.paths[io_doc] == "pkg/io/__init__.py"
    assert len(st.module_children[io_doc]) == 3


def test_a_name_without_terms_is_no_name_document():
    """``NameField.updated`` counts a document as ``build`` does: a name that
    has terms. A leaf of one letter or a stopword (``x``, ``get``) has none;
    counting it on the way in (and never off, since its length is 0) made a
    saved index's name statistics drift from a fresh build's, and every
    score the name field adds with them (checkout corpus: 357 of 362 suite
    rankings after 40 saves)."""
    from pycsamt_lsp.search.fields import NameField

    symbols = ["pkg.mod.read_station", "pkg.mod.x", None, "pkg.mod.spectrum_power"]
    kinds = ["python_symbol", "python_symbol", "doc_section", "python_symbol"]
    field = NameField.build(symbols, kinds)
    # slot 1 (``x``) dropped, and a ``get`` and a ``plot_map`` appended
    grown_symbols = [*symbols, "pkg.mod.get", "pkg.mod.plot_map"]
    grown_kinds = [*kinds, "python_symbol", "python_symbol"]
    alive = np.array([True, False, True, True, True, True])
    got = field.updated(grown_symbols, grown_kinds, [1], len(symbols))
    want = NameField.build(grown_symbols, grown_kinds, alive)
    assert (got.n_docs, got.total) == (want.n_docs, want.total)
    assert got.n_docs == 3  # read_station, spectrum_power, plot_map
    assert np.array_equal(got.lens, want.lens)
