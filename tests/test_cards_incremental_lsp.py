"""Hover cards through a real LSP client (pytest-lsp) after random saves
equal the cards a full pass over the same snapshots gives: the server derives
its symbol maps save after save (cards/service.py), the reference drops them
before each card. The fixture and the saves are test_cards_incremental's."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace
from test_cards_incremental import POOL, module_text
from test_server import (  # noqa: F401 - the client fixture and its state tracking
    _track_index_state,
    client,
    command,
    field,
    start,
)

SCRIPT = """import pkg.dup
from pkg.dup import f, LIMIT
from pkg.dup.extra import g, Shift
from pkg.more import LIMIT as MORE_LIMIT, h
from pkg.phase import strike_angle
from pkg.core.shift import correct_shift
pkg.dup.f(1)
"""
#: (line, needle) of each hover: every name the script imports or uses
HOVERS = [
    (0, "pkg.dup"),
    (1, "f,"),
    (1, "LIMIT"),
    (2, "extra"),
    (2, "g,"),
    (2, "Shift"),
    (3, "MORE_LIMIT"),
    (3, "h\n"),
    (4, "strike_angle"),
    (5, "correct_shift"),
    (6, "dup"),
    (6, "f("),
]


def _hover_positions() -> list[tuple[int, int]]:
    lines = SCRIPT.splitlines(keepends=True)
    return [(ln, lines[ln].index(needle) + 1) for ln, needle in HOVERS]


def _expected(ref: Workspace) -> list[str | None]:
    """The hover texts a full pass over *ref*'s snapshot gives (the maps and
    tables are dropped first)."""
    from pycsamt_lsp.analysis.buffer import analyze
    from pycsamt_lsp.analysis.editor import card_at

    index = analyze(SCRIPT, "pkg")
    out: list[str | None] = []
    for line, char in _hover_positions():
        ref.cards.clear()
        got = card_at(ref, index, line, char)
        out.append(None if got is None else got[1].to_markdown(focus=got[0].param))
    return out


async def _hovers(client: LanguageClient, uri: str) -> list[str | None]:
    out: list[str | None] = []
    for line, char in _hover_positions():
        h = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=char),
            )
        )
        out.append(None if h is None else h.contents.value)
    return out


async def test_hover_cards_after_saves_equal_a_full_pass(
    client: LanguageClient, tmp_path: Path
):
    """Through a real LSP client: after each random save (reported with
    ``didChangeWatchedFiles``) the server's hover cards, made from maps it
    derived save after save, equal the cards a full pass over the same
    snapshot history gives (an in-process workspace refreshed with the
    same saves, its maps dropped before each card). The server persists 2 s
    after a save (its snapshot then comes from disk, files sorted); when it
    did, the reference persists too and the step's hovers are asked again."""
    root = tmp_path / "corpus"
    root.mkdir()
    rng = random.Random(11)
    for rel in POOL:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(module_text(rng), encoding="utf-8")
    profile = await start(client, root)
    ref = Workspace(
        root, load_profile(str(profile)), index_dir=tmp_path / "ref", workers=1
    )
    ref.build()
    script = tmp_path / "script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    uri = script.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=SCRIPT
            )
        )
    )

    async def synced() -> dict:
        """Wait until the server's snapshot is the reference's (same content)."""
        for _ in range(600):
            stats = await command(client, "pycsamt.stats", {})
            if field(stats, "fingerprint") == ref.snapshot.fingerprint:
                return stats
            await asyncio.sleep(0.05)
        raise AssertionError("the server never indexed the save")

    stats = await synced()
    assert await _hovers(client, uri) == _expected(ref)
    compared = 0
    for _step in range(12):
        rels = rng.sample(POOL, 1)
        p = root / rels[0]
        if p.exists() and rng.random() < 0.2:
            p.unlink()
            kind = types.FileChangeType.Deleted
        else:
            p.write_text(module_text(rng), encoding="utf-8")
            kind = types.FileChangeType.Changed
        ref.refresh([p])
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=p.as_uri(), type=kind)]
            )
        )
        stats = await synced()
        want = _expected(ref)
        got = await _hovers(client, uri)
        after = await command(client, "pycsamt.stats", {})
        if field(after, "generation") != field(stats, "generation"):
            # the server persisted meanwhile: so does the reference
            ref.persist()
            assert field(after, "generation") == ref.snapshot.generation
            want = _expected(ref)
            got = await _hovers(client, uri)
        assert got == want, f"step {_step}: {rels}"
        compared += sum(g is not None for g in got)
    assert compared >= 40  # most names existed in most steps
