"""Unknown stage names in ``disable`` through a real LSP client
(pytest-lsp): ``pycsamt.query`` and ``pycsamt.eval`` answer an error that
names the known stages, and the server keeps answering
(test_disable_names checks the engine, the commands and the CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from test_disable_names import Q, assert_names_known
from test_server import (  # noqa: F401 - the client fixture and its state tracking
    _track_index_state,
    client,
    command,
    field,
    start,
)


async def test_server_answers_an_error_and_keeps_running(
    client: LanguageClient, tmp_path: Path
):
    await start(client, tmp_path)
    for name, arg in (
        ("pycsamt.query", {"query": Q, "disable": ["feild_head"]}),
        ("pycsamt.query", {"query": Q, "dense": True, "disable": ["bm25_frist"]}),
        ("pycsamt.eval", {"disable": ["nope"]}),
    ):
        with pytest.raises(Exception) as info:
            await command(client, name, arg)
        assert_names_known(str(info.value), fusion="bm25_frist" in arg["disable"])
    res = await command(client, "pycsamt.query", {"query": Q, "disable": ["+dedup"]})
    assert field(res, "results")
    assert field(await command(client, "pycsamt.stats", {}), "n_chunks") > 0
