"""The index opens while the client answers the progress token (issue 18).

``run_with_progress`` starts the work before the client's answer to
``window/workDoneProgress/create`` arrives. A client that takes its time
answering must still see a well-formed progress: the token created before
any ``$/progress``, ``begin`` first, ``end`` last with the summary, and the
index ready and answering.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import wait_for, write_fixture_corpus

SERVER = [sys.executable, "-m", "pycsamt_lsp", "serve"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    lsp_client.states = []

    async def _slow_create(params: types.WorkDoneProgressCreateParams):
        await asyncio.sleep(0.6)  # a slow client: the open runs meanwhile
        lsp_client.progress_reports.setdefault(params.token, [])

    # pytest-lsp's own handler answers at once; this client answers late
    lsp_client.protocol.fm._features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = (
        _slow_create
    )

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(_params):
        return None

    @lsp_client.feature("pycsamt/indexState")
    def _state(params):
        lsp_client.states.append(
            params["state"] if isinstance(params, dict) else params.state
        )

    yield
    await lsp_client.shutdown_session()


async def test_a_slow_progress_create_still_gets_begin_reports_end(
    client: LanguageClient, tmp_path: Path
):
    profile = write_fixture_corpus(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown-token $/progress fails here
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                initialization_options={
                    "corpusRoot": str(tmp_path),
                    "profile": str(profile),
                },
                root_uri=tmp_path.as_uri(),
            )
        )
        await wait_for(lambda: "ready" in client.states, timeout=60)
    tokens = [t for t in client.progress_reports if str(t).startswith("pycsamt-index")]
    assert tokens
    reports = client.progress_reports[tokens[0]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert "chunks" in reports[-1].message
    assert not any(isinstance(r, types.WorkDoneProgressBegin) for r in reports[1:])
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="pycsamt.query",
            arguments=[{"query": "correct the static shift", "k": 3}],
        )
    )
    top = res["results"][0] if isinstance(res, dict) else res.results[0]
    symbol = top["symbol"] if isinstance(top, dict) else top.symbol
    assert symbol.startswith("pkg.core.shift")
