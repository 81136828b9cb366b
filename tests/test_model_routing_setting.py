"""The ``pycsamt.openai.modelRouting`` setting and ``ask --model-routing``.

The model-assisted routing decision existed only as an ``AskSettings``
field no user could reach. These tests drive it through the real entry
points: a language server started with the key and the fake OpenAI server
in its environment (settings in the nested VS Code form), and the CLI.
Off by default: without the setting, no chat request is made for routing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities, make_test_lsp_client

from fake_openai import FakeOpenAI
from lsp_helpers import wait_for
from pycsamt_lsp import cli
from test_routing_wiring import write_corpus

DECISION = {
    "intent": "plot",
    "workflow": "phase_analysis",
    "line": "l18plt",
    "scope": "science",
    "confidence": 0.9,
    "clarify_question": None,
}
QUESTION = "have a look at L18PLT"


def _routing_requests(fake: FakeOpenAI) -> list[dict]:
    """Chat requests whose prompt lists the workflows (the routing prompt)."""
    return [
        r
        for r in fake.requests_to("chat")
        if "phase_analysis" in r["body"]["messages"][0]["content"]
        and "intent" in r["body"]["messages"][0]["content"]
    ]


async def _ask_through_server(tmp_path: Path, fake: FakeOpenAI, options: dict) -> dict:
    root = tmp_path / "corpus"
    prof = write_corpus(root)
    env = {
        **os.environ,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake.url,
        "PYCSAMT_LSP_CACHE": str(tmp_path / "cache"),
    }
    client = make_test_lsp_client()
    states: list[str] = []

    @client.feature("pycsamt/indexState")
    def _on_state(params):
        states.append(params["state"] if isinstance(params, dict) else params.state)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _on_register(_params):
        return None

    await client.start_io(sys.executable, "-m", "pycsamt_lsp", "serve", env=env)
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                initialization_options={
                    "corpusRoot": str(root),
                    "profile": str(prof),
                    **options,
                },
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="c")],
            )
        )
        await wait_for(lambda: states and states[-1] in ("ready", "error"))
        assert states[-1] == "ready"
        return await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="pycsamt.ask", arguments=[{"question": QUESTION}]
            )
        )
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.parametrize("on", [True, False])
async def test_the_nested_setting_turns_model_routing_on(tmp_path: Path, on: bool):
    with FakeOpenAI() as fake:
        fake.reply = json.dumps(DECISION)
        options = {"openai": {"modelRouting": True}} if on else {}
        res = await _ask_through_server(tmp_path, fake, options)
        route = res["route"]
        if on:
            assert route["source"] == "model"
            assert (route["intent"], route["workflow"], route["line"]) == (
                "plot",
                "phase_analysis",
                "L18PLT",  # the registry's spelling, not the model's
            )
            assert _routing_requests(fake)
        else:
            assert route["source"] == "offline"
            assert not _routing_requests(fake)


def test_cli_model_routing_flag(tmp_path: Path, capsys, monkeypatch):
    root = tmp_path / "corpus"
    prof = write_corpus(root)
    common = ["--root", str(root), "--profile", str(prof)]
    common += ["--index-dir", str(tmp_path / "idx")]
    assert cli.main(["build", *common]) == 0
    capsys.readouterr()
    with FakeOpenAI() as fake:
        fake.reply = json.dumps(DECISION)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        assert cli.main(["ask", QUESTION, "--json", *common]) == 0
        assert json.loads(capsys.readouterr().out)["route"]["source"] == "offline"
        assert not _routing_requests(fake)
        args = ["ask", QUESTION, "--json", "--model-routing", *common]
        assert cli.main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["route"]["source"] == "model"
        assert out["route"]["workflow"] == "phase_analysis"
        assert _routing_requests(fake)


def test_one_section_carries_both_openai_settings() -> None:
    # VS Code answers {"openai": {"model": ..., "modelRouting": ...}}: one
    # nested section holding two settings (the second was dropped once)
    from pycsamt_lsp.lsp.settings import Settings

    got, problems = Settings().merged(
        {"pycsamt": {"openai": {"model": "gpt-x", "modelRouting": True}}}
    )
    assert problems == []
    assert (got.openaiModel, got.openaiModelRouting) == ("gpt-x", True)
