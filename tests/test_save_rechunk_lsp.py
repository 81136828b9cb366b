"""Save -> searchable of a module nobody opened, through a real LSP client
(issue 18).

Once the index is open the server outlines its large modules
(``Workspace.prepare_saves``), so the first save of one the editor never
opened is re-chunked in its changed statements only; the save's event
(one path, after a quiet spell) is refreshed at once rather than after the
``debounceMs`` spell (the leading edge of the debounce). Checked end to end
with a spell of ten minutes: the saved function is found, the server's log
says the file was re-chunked, and the rankings equal a fresh build's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace
from test_save_prime_lsp import QUERIES, _big_module, _ranked
from test_server import (  # noqa: F401
    _track_index_state,
    client,
    command,
    field,
    start,
    until,
)


async def test_a_never_opened_module_is_refreshed_at_once_and_rechunked(
    client: LanguageClient, tmp_path: Path
):
    big = tmp_path / "pkg" / "grids.py"
    big.parent.mkdir(parents=True)
    big.write_text(_big_module(200), encoding="utf-8")
    # a spell no save would ever wait out: only the leading edge refreshes it
    profile = await start(client, tmp_path, debounceMs=600_000)

    # polled with sleeps, not ``until``: no index state comes meanwhile, and
    # a wait for one that timed out last is answered by the save's state
    # with an error in pytest-lsp (a cancelled future)
    for _ in range(1200):
        stats = await command(client, "pycsamt.stats", {})
        if field(stats, "save_outlines") >= 1:
            break
        await asyncio.sleep(0.1)
    assert field(stats, "save_outlines") >= 1

    lines = big.read_text(encoding="utf-8").split("\n")
    lines[500:500] = [
        "def later_resampled_grid(z):",
        '    """Resample the impedance grid onto new frequencies."""',
        "    return z",
        "",
        "",
    ]
    big.write_text("\n".join(lines), encoding="utf-8")
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

    [hit] = await until(client, found, timeout=120)
    assert field(hit, "line_start") == 501
    refreshes = [m.message for m in client.log_messages if "refresh of" in m.message]
    assert refreshes and "1 changed" in refreshes[-1], refreshes
    assert "1 re-chunked in their changed statements" in refreshes[-1], refreshes

    fresh = Workspace(tmp_path, load_profile(str(profile)), index_dir=tmp_path / "x")
    fresh.build()
    for q in QUERIES:
        res = await command(client, "pycsamt.query", {"query": q, "k": 10})
        assert _ranked(res) == _ranked(fresh.query(q, k=10)), q
        assert _ranked(res), q
