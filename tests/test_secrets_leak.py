"""Credentials planted in corpus files never appear in any output (issue 19).

24 fake credentials of the shapes found leaking (default arguments,
docstring examples, class attributes, Markdown ``export`` lines, reST code
blocks, AWS keys, bearer tokens, passwords in URLs, private-key blocks...)
are planted in a fixture corpus. Every output path is then collected over
LSP (query snippets, ask, hover, completion + resolve, searchSource,
inspectSymbol, readSource, log messages, stderr) and the CLI (query, ask,
search, inspect-symbol, read-source), and ``chunks.jsonl`` itself is read:
no planted value may appear anywhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_tree import SECRETS, write_secrets
from lsp_helpers import write_fixture_corpus
from lsp_raw import RawClient

QUERIES = [
    "connect to the cloud with an api key",
    "cloud vault password",
    "export OPENAI_API_KEY",
    "token bearer authorization headers",
    "aws secret access key",
    "database url postgres",
    "private key",
    "CloudClient token",
]
BUFFER = (
    "from pkg.cloud import connect_cloud, open_vault, CloudClient, SECRET_KEY\n"
    "connect_cloud()\n"
    "open_vault('x')\n"
    "CloudClient.token\n"
    "CloudClient.password\n"
    "SECRET_KEY\n"
    "CloudClient.\n"
    "from pkg.cloud import \n"
)


def _leaks(outputs: dict[str, str]) -> dict[str, list[str]]:
    """``output path -> planted names seen in it``."""
    got: dict[str, list[str]] = {}
    for where, text in outputs.items():
        seen = [name for name, value in SECRETS.items() if value in text]
        if seen:
            got[where] = seen
    return got


def _cmd(client: RawClient, name: str, args: dict) -> str:
    return json.dumps(
        client.request(
            "workspace/executeCommand", {"command": name, "arguments": [args]}
        )
    )


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    profile = write_fixture_corpus(tmp_path)
    write_secrets(tmp_path)
    return tmp_path, profile


@pytest.mark.e2e
def test_no_planted_credential_in_any_lsp_output(planted):
    root, profile = planted
    client = RawClient()
    out: dict[str, str] = {}
    try:
        client.initialize(root, profile)
        client.wait_ready()
        for i, q in enumerate(QUERIES):
            out[f"query {i}"] = _cmd(client, "pycsamt.query", {"query": q, "k": 20})
            out[f"ask {i}"] = _cmd(client, "pycsamt.ask", {"question": q})
            out[f"searchSource {i}"] = _cmd(
                client, "pycsamt.searchSource", {"query": q}
            )
        for rel in ("pkg/cloud.py", "docs/cloud.md", "docs/vault.rst"):
            out[f"readSource {rel}"] = _cmd(
                client, "pycsamt.readSource", {"path": rel, "lines": 80}
            )
        for sym in ("connect_cloud", "open_vault", "CloudClient", "SECRET_KEY"):
            out[f"inspectSymbol {sym}"] = _cmd(
                client, "pycsamt.inspectSymbol", {"path": "pkg/cloud.py", "symbol": sym}
            )
        uri = (root / "use.py").as_uri()
        client.open(uri, BUFFER)
        lines = BUFFER.split("\n")
        for line, text in enumerate(lines):
            for char in range(0, len(text) + 1, 3):
                pos = {"line": line, "character": char}
                doc = {"textDocument": {"uri": uri}, "position": pos}
                out[f"hover {line}:{char}"] = json.dumps(
                    client.request("textDocument/hover", doc)
                )
        for line in (6, 7):
            pos = {"line": line, "character": len(lines[line])}
            got = client.request(
                "textDocument/completion",
                {"textDocument": {"uri": uri}, "position": pos},
            )
            out[f"completion {line}"] = json.dumps(got)
            result = got.get("result") or []
            items = result.get("items", []) if isinstance(result, dict) else result
            for item in items[:40]:
                out[f"resolve {line} {item.get('label')}"] = json.dumps(
                    client.request("completionItem/resolve", item)
                )
    finally:
        client.close()
    out["logMessage"] = json.dumps(client.notifications("window/logMessage"))
    out["stderr"] = client.stderr.decode("utf-8", "replace")
    out["chunks.jsonl"] = (root / ".pycsamt_rag" / "chunks.jsonl").read_text("utf-8")
    out["package_model.json"] = (
        root / ".pycsamt_rag" / "package_model.json"
    ).read_text("utf-8")
    # the test really looked: hover and query answered about the planted file
    assert "connect_cloud" in "".join(
        v for k, v in out.items() if k.startswith("hover")
    )
    assert "pkg/cloud.py" in out["query 0"]
    assert "docs/cloud.md" in "".join(
        v for k, v in out.items() if k.startswith("query")
    )
    assert len(out) > 100
    assert _leaks(out) == {}


@pytest.mark.e2e
def test_no_planted_credential_in_any_cli_output(planted):
    root, profile = planted
    base = [sys.executable, "-m", "pycsamt_lsp"]
    common = ["--root", str(root), "--profile", str(profile), "--json"]
    runs = {"build": ["build", *common]}
    for i, q in enumerate(QUERIES):
        runs[f"query {i}"] = ["query", *common, "-k", "20", q]
        runs[f"search {i}"] = ["search", *common, q]
    runs["ask"] = ["ask", *common, "--offline", QUERIES[0]]
    for rel in ("pkg/cloud.py", "docs/cloud.md", "docs/vault.rst"):
        runs[f"read-source {rel}"] = ["read-source", *common, "--lines", "80", rel]
    for sym in ("connect_cloud", "open_vault", "CloudClient"):
        runs[f"inspect {sym}"] = ["inspect-symbol", *common, "pkg/cloud.py", sym]
    out: dict[str, str] = {}
    for where, argv in runs.items():
        got = subprocess.run(
            [*base, *argv, "-v"], capture_output=True, text=True, timeout=120
        )
        assert got.returncode == 0, (where, got.stderr[-2000:])
        out[where] = got.stdout + got.stderr
    assert "pkg/cloud.py" in out["query 0"]
    assert "connect_cloud" in out["inspect connect_cloud"]
    assert _leaks(out) == {}
