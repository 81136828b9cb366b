"""Warm start of the server (issue 18), through a real LSP client.

The server finds a persisted index, answers the first query as soon as it is
open and loads the package model after that (or as soon as an editor
request needs it). These tests send their requests right after
``initialize``, without waiting for the index to be ready, and check that
each answer is the complete one: the query's ranking, the hover card's
signature, the open buffer's diagnostics (which need the model).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_helpers import write_fixture_corpus
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace
from test_server import _track_index_state, client, command, field  # noqa: F401

SCRIPT = (
    "from pkg.core.shift import correct_shift\n"
    "from pkg import nothing_here\n"
    "correct_shift(data, factor=2.0)\n"
)


def built_corpus(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fixture corpus with its index and package model persisted."""
    root = tmp_path / "corpus"
    root.mkdir()
    profile = write_fixture_corpus(root)
    idx = tmp_path / "idx"
    ws = Workspace(root, load_profile(str(profile)), index_dir=idx)
    ws.rebuild()
    assert (idx / "package_model.json").is_file()
    return root, profile, idx


async def initialize(client: LanguageClient, root: Path, profile: Path, idx: Path):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "corpusRoot": str(root),
                "profile": str(profile),
                "indexDir": str(idx),
                "debounceMs": 0,
            },
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="c")],
        )
    )


def open_script(client: LanguageClient, path: Path) -> str:
    path.write_text(SCRIPT)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=SCRIPT
            )
        )
    )
    return uri


async def diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while client.diagnostics.get(uri) is None and loop.time() < end:
        await asyncio.sleep(0.02)
    got = client.diagnostics.get(uri)
    assert got is not None, "no diagnostics were published"
    return got


def check_answers(query, hover, diags) -> None:
    results = field(query, "results")
    assert field(results[0], "symbol") == "pkg.core.shift.correct_shift"
    assert field(query, "workflow") == "static_shift"
    assert hover is not None
    text = hover.contents.value
    assert "correct_shift" in text and "factor" in text and "method" in text
    [d] = [d for d in diags if d.code == "unknown-name"]
    assert (d.range.start.line, d.range.start.character) == (1, 16)
    assert "nothing_here" in d.message
    assert all(d.range.start.line != 0 for d in diags)  # the real import is fine


async def test_first_query_hover_and_diagnostics_right_after_start(
    client: LanguageClient, tmp_path: Path
):
    root, profile, idx = built_corpus(tmp_path)
    await initialize(client, root, profile, idx)
    uri = open_script(client, tmp_path / "script.py")
    query, hover = await asyncio.gather(
        command(client, "pycsamt.query", {"query": "correct the static shift"}),
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=2, character=3),
            )
        ),
    )
    check_answers(query, hover, await diagnostics(client, uri))
    stats = await command(client, "pycsamt.stats", {})
    assert field(stats, "loaded_from") == "disk"  # a warm start, not a build


async def test_query_first_then_the_editor_requests(
    client: LanguageClient, tmp_path: Path
):
    """The query alone first (the model loads after its answer), then a
    buffer opened and hovered: the model-backed answers are complete."""
    root, profile, idx = built_corpus(tmp_path)
    await initialize(client, root, profile, idx)
    query = await command(
        client, "pycsamt.query", {"query": "correct the static shift"}
    )
    uri = open_script(client, tmp_path / "script.py")
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=2, character=3),
        )
    )
    check_answers(query, hover, await diagnostics(client, uri))
    stats = await command(client, "pycsamt.stats", {})
    assert field(stats, "model_modules")  # loaded by now
