"""A second workspace folder's large modules are outlined once its index is
open, as the primary's are (lsp/folders.py ``outline``), through a real LSP
client: the server says it outlined them, and the first save of one nobody
opened is re-chunked in its changed statements only (the refresh's log line),
not parsed whole; the folder's buffers follow the save."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import wait_for
from test_lsp_multiroot import corpus, names, open_doc, start
from test_save_prime_lsp import _big_module
from test_server import _track_index_state, client  # noqa: F401 - fixtures


async def test_a_second_folder_outlines_and_rechunks_its_first_save(
    client: LanguageClient, tmp_path: Path
):
    a = tmp_path / "a"
    profile = corpus(a)
    b = tmp_path / "b"
    corpus(b)
    big = b / "pkg" / "grids.py"
    big.write_text(_big_module(200), encoding="utf-8")
    await start(client, [a, b], profile)

    def logs(needle: str) -> list[str]:
        return [m.message for m in client.log_messages if needle in m.message]

    # b is not the primary (a is the first corpus folder): its own workspace
    await wait_for(lambda: logs(f"corpus root {b.resolve()} (workspace folder"))
    got = await wait_for(lambda: logs(f"large modules of {b.resolve()} "), 120)
    assert "outlined 1 large modules" in got[-1], got
    assert logs(f"outlined 0 large modules of {a.resolve()} "), logs("outlined")

    uses = open_doc(client, b / "s.py", "from pkg.grids import later_resampled_grid\n")
    await wait_for(lambda: names(client, uses))  # not there yet: a squiggle
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
    refreshed = await wait_for(lambda: logs("refresh of 1 paths"), 120)
    assert "1 changed" in refreshed[-1], refreshed
    assert "1 re-chunked in their changed statements" in refreshed[-1], refreshed
    await wait_for(lambda: names(client, uses) == [], 120)  # b followed the save
