"""Developer source search commands through a real LSP client."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from test_server import _track_index_state, client, start  # noqa: F401 - fixtures


async def run(client: LanguageClient, name: str, arg: dict):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[arg])
    )


async def test_search_inspect_read_and_refusal(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path)
    res = await run(
        client, "pycsamt.searchSource", {"query": "Where is correct_shift implemented?"}
    )
    first = res["results"][0]
    assert first["path"] == "pkg/core/shift.py"
    assert first["line_start"] == 4
    assert len(first["evidence"]["sha256"]) == 64
    assert first["uri"].endswith("pkg/core/shift.py")

    res = await run(
        client,
        "pycsamt.inspectSymbol",
        {"path": "pkg/core/shift.py", "symbol": "ShiftAgent.run"},
    )
    assert res["line_start"] > 1 and "Run the correction" in res["docstring"]

    res = await run(
        client, "pycsamt.readSource", {"path": "pkg/phase.py", "start": 1, "lines": 3}
    )
    assert res["text"].startswith('"""Phase tensor analysis."""')

    for bad in ("../../etc/passwd", "/etc/passwd"):
        with pytest.raises(Exception) as info:
            await run(client, "pycsamt.readSource", {"path": bad})
        assert "pycsamt.readSource" in str(info.value)
    # still serving
    res = await run(client, "pycsamt.stats", {})
    assert res["n_chunks"] > 0
