"""``pycsamt.eval`` through a real LSP client."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from test_server import _track_index_state, client, start  # noqa: F401 - fixtures


async def test_eval_command_over_lsp(client: LanguageClient, tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    await start(client, corpus)
    suites = tmp_path / "suites"
    suites.mkdir()
    records = [
        {
            "query": "correct the static shift",
            "expected_workflow": "static_shift",
            "expected_symbols": ["pkg.core.shift.correct_shift"],
        },
        {
            "query": "strike from the phase tensor",
            "expected_workflow": "phase_analysis",
        },
    ]
    (suites / "mini.jsonl").write_text(
        "# a comment\n" + "\n".join(json.dumps(r) for r in records) + "\n"
    )
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="pycsamt.eval", arguments=[{"suiteDir": str(suites), "k": 5}]
        )
    )
    m = res["overall"]["metrics"]
    assert m["symbol_recall"] == 1.0
    assert m["workflow_in_topk"] == 1.0
