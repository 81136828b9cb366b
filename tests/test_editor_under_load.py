"""Editor requests keep answering while heavy commands run (no request can
freeze the server).

A real ``pycsamt-lsp serve`` on a fixture corpus whose developer-search roots
hold a large generated tree (3,000 modules, 12 MB, none of it indexed). Broad
``pycsamt.searchSource`` requests read and match every file of it, in the
command lane, one after another; meanwhile hover, completion and a request the
event loop answers itself are sent back to back. Every one of them must
answer with its real result: a hover that came back ``null`` would be one over
the editor budget (the server's own 5 s), which is what a starved event loop
or editor thread looks like from the client (CI failure of 2026-12-01, a GIL
convoy). Nothing here is timed against a threshold; the test checks that the
requests overlapped the searches, so it cannot pass without testing anything.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lsp_helpers import write_fixture_corpus
from lsp_raw import RawClient

GOOD = "from pkg.core.shift import correct_shift\ncorrect_shift(1)\nimport pkg\npkg.\n"
N_DIRS, N_FILES = 30, 100
METHOD_NOT_FOUND = -32601


def _write_vendor_tree(root: Path) -> None:
    """3,000 modules of about 4 KB under ``vendor/`` (searched, not indexed):
    every file matches the broad queries below, so each is read and scanned."""
    body = "".join(
        f"def get_value_{j}(self, data, factor=1.0):\n"
        f"    '''Return the value of data {j} scaled by factor.'''\n"
        f"    return data * factor + {j}\n\n\n"
        for j in range(30)
    )
    for d in range(N_DIRS):
        sub = root / "vendor" / f"part{d}"
        sub.mkdir(parents=True)
        for i in range(N_FILES):
            (sub / f"mod_{i}.py").write_text(
                f'"""Vendored module {d}.{i}: data processing."""\n\n\n{body}',
                encoding="utf-8",
            )


def _corpus(tmp_path: Path) -> Path:
    profile = write_fixture_corpus(tmp_path)
    text = profile.read_text(encoding="utf-8").replace(
        'devsearch_roots = ["pkg", "docs"]',
        'devsearch_roots = ["pkg", "docs", "vendor"]',
    )
    assert "vendor" in text
    profile.write_text(text, encoding="utf-8")
    _write_vendor_tree(tmp_path)
    return profile


def _hover(client: RawClient, uri: str) -> dict:
    return client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 4}},
        timeout=120,
    )


def _complete(client: RawClient, uri: str) -> dict:
    return client.request(
        "textDocument/completion",
        {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 4}},
        timeout=120,
    )


def test_editor_requests_answer_while_broad_source_searches_run(tmp_path):
    profile = _corpus(tmp_path)
    client = RawClient()
    try:
        client.initialize(tmp_path, profile)
        client.wait_ready(timeout=120)
        uri = (tmp_path / "use.py").as_uri()
        client.open(uri, GOOD)
        got = _hover(client, uri)
        assert "def correct_shift(" in got["result"]["contents"]["value"], got

        searches: list[tuple[float, float, dict]] = []
        failures: list[BaseException] = []

        def search() -> None:
            try:
                for q in ("data value", "self factor", "get_value_7 data"):
                    t0 = time.monotonic()
                    got = client.request(
                        "workspace/executeCommand",
                        {
                            "command": "pycsamt.searchSource",
                            "arguments": [{"query": q}],
                        },
                        timeout=300,
                    )
                    searches.append((t0, time.monotonic(), got))
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        worker = threading.Thread(target=search)
        worker.start()
        answers: list[tuple[float, float, str, dict]] = []
        while worker.is_alive():
            for kind, ask in (
                ("hover", lambda: _hover(client, uri)),
                ("completion", lambda: _complete(client, uri)),
                ("loop", lambda: client.request("pycsamt/noSuchMethod", {}, 120)),
            ):
                t0 = time.monotonic()
                got = ask()
                answers.append((t0, time.monotonic(), kind, got))
        worker.join()
        assert not failures, failures

        # every search really read the tree (all of it, or for its whole 10 s
        # scan budget on a very slow machine) and answered
        for _t0, _t1, got in searches:
            res = got["result"]
            bounds = {h["limit"] for h in res["limits_hit"]}
            assert bounds <= {"scan_seconds"}, res["limits_hit"]
            if not bounds:
                assert res["counts"]["files_scanned"] >= N_DIRS * N_FILES, res
            assert res["results"], res
        # the editor requests overlapped the searches (else this tested nothing)
        during = [
            a for a in answers if any(s0 < a[0] and a[1] < s1 for s0, s1, _ in searches)
        ]
        kinds = {a[2] for a in during}
        assert kinds == {"hover", "completion", "loop"}, len(during)
        # and each answered with its result, none empty (= over its budget)
        for _t0, _t1, kind, got in answers:
            if kind == "hover":
                value = got["result"]["contents"]["value"]
                assert "def correct_shift(" in value, got
            elif kind == "completion":
                labels = {item["label"] for item in got["result"]["items"]}
                assert "correct_shift" in labels, got
            else:
                assert got["error"]["code"] == METHOD_NOT_FOUND, got
        logs = " ".join(
            n["params"]["message"] for n in client.notifications("window/logMessage")
        )
        assert "over its" not in logs and "still running" not in logs
    finally:
        client.close()
