"""Save -> searchable through a real LSP client (issue 18).

A large corpus module the editor opens is parsed in the background
(``Workspace.prime_tree``), so its first save re-parses only what changed;
the saved module's package model update waits for the model's first use
(here: the diagnostics pass of an open script). Checked end to end: the
new function is found by ``pycsamt.query`` right after the save, the
import of it in an open script stops being an error, and the server's
rankings equal those of an index built from scratch on the saved tree.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace
from test_diagnostics_lsp import diagnostics_of, open_doc
from test_server import (  # noqa: F401
    _track_index_state,
    client,
    command,
    field,
    start,
    until,
)

QUERIES = (
    "later_resampled_grid",
    "resample the impedance grid",
    "static shift correction",
    "helper 42 phase tensor",
)


def _big_module(n: int) -> str:
    """Over the incremental parser's 16,000 characters."""
    parts = ['"""Grid helpers."""', ""]
    for i in range(n):
        parts += [
            f"def grid_helper_{i}(z, step={i}):",
            f'    """Helper {i}: resample the phase tensor grid by {i} steps."""',
            f"    return [v * step + {i} for v in z]",
            "",
            "",
        ]
    return "\n".join(parts)


def _ranked(res) -> list[tuple[str, float]]:
    return [(field(r, "id"), field(r, "score")) for r in field(res, "results")]


async def test_opened_module_saved_is_found_and_ranks_as_a_rebuild(
    client: LanguageClient, tmp_path: Path
):
    big = tmp_path / "pkg" / "grids.py"
    big.parent.mkdir(parents=True)
    big.write_text(_big_module(200), encoding="utf-8")
    profile = await start(client, tmp_path)
    assert len(big.read_text(encoding="utf-8")) > 16_000

    # the editor opens the module (primed) and a script importing a name
    # the module does not have yet (an error)
    open_doc(client, big, big.read_text(encoding="utf-8"))
    script = tmp_path / "use.py"
    code = "from pkg.grids import grid_helper_3\nfrom pkg.grids import later_resampled_grid\n"
    script.write_text(code, encoding="utf-8")
    uri = open_doc(client, script, code)
    diags = await diagnostics_of(
        client, uri, lambda d: any("later_resampled_grid" in x.message for x in d)
    )
    assert {x.range.start.line for x in diags} == {1}, diags  # not grid_helper_3

    async def primed():
        stats = await command(client, "pycsamt.stats", {})
        return field(stats, "parse_trees_kept") >= 1

    assert await until(client, primed)

    # the module is saved with a new function in the middle
    lines = big.read_text(encoding="utf-8").split("\n")
    lines[500:500] = [
        "def later_resampled_grid(z):",
        '    """Resample the impedance grid onto new frequencies."""',
        "    return z",
        "",
        "",
    ]
    big.write_text("\n".join(lines), encoding="utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=big.as_uri())
        )
    )
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=big.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )

    async def found():
        res = await command(
            client, "pycsamt.query", {"query": "later_resampled_grid", "k": 3}
        )
        return [
            r
            for r in field(res, "results")
            if field(r, "symbol") == "pkg.grids.later_resampled_grid"
        ]

    [hit] = await until(client, found)
    assert field(hit, "line_start") == 501
    # the deferred model update reached the diagnostics of the open script
    await diagnostics_of(
        client, uri, lambda d: not any("later_resampled_grid" in x.message for x in d)
    )

    # the server's rankings (incremental, primed) equal a fresh build's
    fresh = Workspace(tmp_path, load_profile(str(profile)), index_dir=tmp_path / "x")
    fresh.build()
    for q in QUERIES:
        res = await command(client, "pycsamt.query", {"query": q, "k": 10})
        want = fresh.query(q, k=10)
        assert _ranked(res) == _ranked(want), q
        assert _ranked(res), q


async def test_closing_an_opened_module_drops_its_tree(
    client: LanguageClient, tmp_path: Path
):
    """The tree an opened module keeps (~30 bytes a character) goes when the
    editor closes it; opening it again keeps one again."""
    big = tmp_path / "pkg" / "grids.py"
    big.parent.mkdir(parents=True)
    big.write_text(_big_module(200), encoding="utf-8")
    await start(client, tmp_path)

    async def kept() -> int:
        stats = await command(client, "pycsamt.stats", {})
        return field(stats, "parse_trees_kept")

    open_doc(client, big, big.read_text(encoding="utf-8"))
    assert await until(client, lambda: _is(kept, 1))
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=big.as_uri())
        )
    )
    assert await until(client, lambda: _is(kept, 0))
    open_doc(client, big, big.read_text(encoding="utf-8"))
    assert await until(client, lambda: _is(kept, 1))
    # a query still answers from the same index
    res = await command(client, "pycsamt.query", {"query": "grid_helper_7", "k": 3})
    assert field(field(res, "results")[0], "symbol") == "pkg.grids.grid_helper_7"


async def _is(get, want: int) -> bool:
    return await get() == want
