"""The card warm-up after a save derives the symbol maps and the symbol
table from the previous snapshot's (cards/service.py): after random saves,
added and deleted files, persists (a reloaded snapshot with other slots) and
refreshes of several files at once, both equal a full pass over the new
snapshot (``symbol_map``, ``SymbolTable(snap)``), and a save's own
derivation reads only the saved files (no full pass).

The fixture holds symbols in more than one file (``pkg/dup.py`` and
``pkg/dup/__init__.py`` are both module ``pkg.dup``), a symbol defined twice
in one file, and docstrings with and without workflow keywords, so that
"the first workflow wins" and the module_doc precedence, which depend on the
order of the snapshot's files (a save moves its file to the end), are
exercised.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lsp_helpers import write_fixture_corpus
from pycsamt_lsp.cards import service as card_service
from pycsamt_lsp.cards.card import card_for, warm
from pycsamt_lsp.cards.service import SymbolMaps, symbol_map
from pycsamt_lsp.cards.symbols import SymbolTable
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

#: files the random saves write, delete and re-create
POOL = (
    "pkg/dup.py",
    "pkg/dup/__init__.py",
    "pkg/dup/extra.py",
    "pkg/phase.py",
    "pkg/core/shift.py",
    "pkg/more.py",
    "pkg/core/__init__.py",
)
NAMES = ("f", "g", "Shift", "strike_angle", "correct_shift", "h")
DOCS = ("", "Correct the static shift.", "The phase tensor strike.", "Plain words.")


def module_text(rng: random.Random) -> str:
    """A small module: maybe a docstring, then defs and a class, names drawn
    from a small pool (so symbols repeat within and across files)."""
    parts: list[str] = []
    doc = rng.choice((*DOCS, "Module about galvanic distortion."))
    if doc or rng.random() < 0.5:
        parts.append(f'"""{doc or "A module."}"""\n')
    for i in range(rng.randint(0, 5)):
        name = rng.choice(NAMES)
        body = rng.choice(DOCS)
        if name[0].isupper():
            parts.append(
                f'class {name}:\n    """{body or "A class."}"""\n\n'
                f'    def run(self):\n        """{rng.choice(DOCS) or "Run."}"""\n'
                f"        return {i}\n"
            )
        else:
            doc_line = f'    """{body}"""\n' if body else ""
            parts.append(f"def {name}(x={i}):\n{doc_line}    return x\n")
        if rng.random() < 0.3:
            parts.append(f"LIMIT = {i}\n")
    return "\n\n".join(parts) + "\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "corpus"
    root.mkdir()
    profile = write_fixture_corpus(root)
    rng = random.Random(7)
    for rel in POOL:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(module_text(rng), encoding="utf-8")
    (root / "pkg/dup.py").write_text(
        '"""Dup as a module: static shift."""\n\ndef f():\n    """Phase tensor."""\n'
    )
    (root / "pkg/dup/__init__.py").write_text(
        '"""Dup as a package."""\n\ndef f():\n    return 1\n\ndef f(y):\n'
        '    """Static shift again."""\n    return y\n'
    )
    w = Workspace(
        root, load_profile(str(profile)), index_dir=tmp_path / "idx", workers=1
    )
    w.build()
    return w


def assert_like_full(ws: Workspace) -> None:
    """The workspace's derived maps and table equal a full pass's."""
    snap = ws.snapshot
    maps = ws.cards.maps_for(snap)
    wf, slots = symbol_map(snap)
    assert maps.snapshot is snap
    assert maps.workflows == wf
    assert maps.slots == slots
    assert maps.multi == SymbolMaps.full(snap).multi
    got = ws.cards.symbol_table(snap)
    want = SymbolTable(snap)
    assert got.entries == want.entries
    assert got.by_file == want.by_file


def test_maps_after_random_saves_equal_a_full_pass(ws: Workspace, monkeypatch):
    full_calls: list[int] = []
    real_full = SymbolMaps.full.__func__

    def counted(cls, snap):
        full_calls.append(1)
        return real_full(cls, snap)

    monkeypatch.setattr(card_service.SymbolMaps, "full", classmethod(counted))
    rng = random.Random(2026)
    root = ws.root
    warm(ws)
    assert_like_full(ws)
    multi_seen = 0
    derived = 0
    for step in range(60):
        n_full = len(full_calls)
        persisted = False
        if step % 17 == 16:
            ws.persist()  # the reloaded snapshot: other slots, files sorted
            persisted = True
        else:
            rels = rng.sample(POOL, 2 if rng.random() < 0.2 else 1)
            for rel in rels:
                p = root / rel
                if p.exists() and rng.random() < 0.2:
                    p.unlink()
                else:
                    p.write_text(module_text(rng), encoding="utf-8")
            ws.refresh([root / rel for rel in rels])
        warm(ws)  # what the server runs after a new snapshot
        # a save's maps were derived, not recomputed; the full pass below
        # (the reference) is counted separately
        if not persisted:
            assert len(full_calls) == n_full, f"step {step}: a full pass after a save"
            derived += 1
        n_ref = len(full_calls)
        assert_like_full(ws)
        assert len(full_calls) == n_ref + 2  # symbol_map and SymbolMaps.full
        multi_seen += bool(ws.cards.maps_for(ws.snapshot).multi)
    assert derived >= 50
    assert multi_seen >= 10  # the cross-file rules were in play


def test_cards_follow_saves(ws: Workspace):
    """A card after a save shows the save's workflow and summary (the maps
    are derived, so this checks they are the new snapshot's)."""
    root = ws.root
    (root / "pkg/more.py").write_text(
        '"""More."""\n\nLIMIT = 3\n"""Plain words."""\n', encoding="utf-8"
    )
    ws.refresh([root / "pkg/more.py"])
    warm(ws)
    first = card_for(ws, "pkg.more.LIMIT")
    assert first is not None and first.workflow is None
    (root / "pkg/more.py").write_text(
        '"""More."""\n\nLIMIT = 4\n"""Correct the static shift first."""\n',
        encoding="utf-8",
    )
    ws.refresh([root / "pkg/more.py"])
    warm(ws)
    card = card_for(ws, "pkg.more.LIMIT")
    assert card is not None
    assert card.workflow == "static_shift"
    assert "static shift" in card.summary
    assert_like_full(ws)
