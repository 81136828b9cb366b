"""Odd corpus files, paths out of the corpus, bad watched-file paths (issue 19).

A fixture tree gets one file of each kind that used to fail or hang a whole
build (a non-UTF-8 name, a deeply nested expression, a FIFO and a folder
named ``.py``, symlink loops, a binary, invalid UTF-8, a 50 MB module, a BOM)
and symlinks leading out of the corpus. Through the CLI and the server:
the build succeeds, each odd file is a counted skip, the BOM file and its
neighbour are indexed, nothing from outside the root is indexed or shown,
the 50 MB module is not in the package model, and a watched-files batch
with bad paths still indexes its real change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostile_tree import (
    BOM_TOKEN,
    GOOD_TOKEN,
    OUTSIDE_TOKEN,
    write_odd_files,
    write_outside_links,
)
from lsp_helpers import write_fixture_corpus
from lsp_raw import RawClient
from pycsamt_lsp.corpus.safety import PathRefused, contained, read_regular, rel_refusal
from pycsamt_lsp.storage.cleanup import remove_stale_temps

CLI = [sys.executable, "-m", "pycsamt_lsp"]


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "corpus"
    root.mkdir()
    profile = write_fixture_corpus(root)
    write_odd_files(root / "pkg")
    outside = tmp_path / "elsewhere"
    write_outside_links(root, outside)
    return root, profile, outside


def _cli(root: Path, profile: Path, *argv: str) -> dict:
    got = subprocess.run(
        [
            *CLI,
            argv[0],
            "--root",
            str(root),
            "--profile",
            str(profile),
            "--json",
            *argv[1:],
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


def _paths(result: dict) -> list[str]:
    return [r["source_path"] for r in result["results"]]


@pytest.mark.e2e
def test_cli_build_survives_every_odd_file_and_counts_the_skips(hostile):
    root, profile, _ = hostile
    report = _cli(root, profile, "build")
    # refused (not regular / outside / bad name / loops) + unparsable + 50 MB
    assert report["skipped"] >= 12, report
    meta = json.loads((root / ".pycsamt_rag" / "meta.json").read_text("utf-8"))
    skipped = meta["skipped"]
    for rel in (
        "pkg/fifo.py",
        "pkg/deep.py",
        "pkg/binary.py",
        "pkg/latin.py",
        "pkg/huge.py",
        "pkg/loop_a.py",
        "pkg/linked_out.py",
        "docs/linked_out.md",
        "pkg/bad_name_\\xff.py",
    ):
        assert rel in skipped, (rel, skipped)
    assert "outside the corpus" in skipped["pkg/linked_out.py"]
    assert _cli(root, profile, "stats")["skipped"] == report["skipped"]
    assert "pkg/bom.py" in _paths(_cli(root, profile, "query", BOM_TOKEN))
    assert "pkg/good_neighbour.py" in _paths(_cli(root, profile, "query", GOOD_TOKEN))
    # a symlink inside the root to a file inside it is followed
    assert "pkg/linked_in.py" in meta["files"]
    # nothing from outside: not indexed, not in the package model
    assert _cli(root, profile, "query", OUTSIDE_TOKEN)["results"] == [] or all(
        "linked" not in p or p == "pkg/linked_in.py"
        for p in _paths(_cli(root, profile, "query", OUTSIDE_TOKEN))
    )
    idx = root / ".pycsamt_rag"
    for name in ("chunks.jsonl", "package_model.json", "meta.json"):
        assert OUTSIDE_TOKEN not in (idx / name).read_text("utf-8"), name
    model = (idx / "package_model.json").read_text("utf-8")
    assert "pkg/huge.py" not in model  # the model never parsed the 50 MB file
    assert BOM_TOKEN in model


@pytest.mark.e2e
def test_cli_reads_outside_the_corpus_are_refused(hostile):
    root, profile, outside = hostile
    _cli(root, profile, "build")
    bad = [
        "../elsewhere/leak.py",
        str(outside / "leak.py"),
        "pkg/linked_out.py",
        "pkg/linked_dir/leak.py",
        "pkg/%2e%2e/%2e%2e/elsewhere/leak.py",
        "pkg%2f..%2f..%2felsewhere%2fleak.py",
    ]
    for path in bad:
        for argv in (["read-source", path], ["inspect-symbol", path, OUTSIDE_TOKEN]):
            got = subprocess.run(
                [
                    *CLI,
                    argv[0],
                    "--root",
                    str(root),
                    "--profile",
                    str(profile),
                    *argv[1:],
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert got.returncode != 0, (argv, got.stdout)
            assert OUTSIDE_TOKEN not in got.stdout + got.stderr, argv


def _wait_for_path(client: RawClient, query: str, path: str, timeout: float = 30.0):
    """The result paths of *query* once *path* is among them (or at the timeout)."""
    end = time.monotonic() + timeout
    while True:
        got = client.request(
            "workspace/executeCommand",
            {"command": "pycsamt.query", "arguments": [{"query": query, "k": 5}]},
        )
        paths = [r["source_path"] for r in got["result"]["results"]]
        if path in paths or time.monotonic() > end:
            return paths
        time.sleep(0.2)


@pytest.mark.e2e
def test_server_on_a_hostile_tree_answers_and_refuses(hostile):
    root, profile, outside = hostile
    client = RawClient()
    try:
        client.initialize(root, profile, watch="client", debounceMs=100)
        client.wait_ready(timeout=120)
        uri = (root / "use.py").as_uri()
        client.open(
            uri, "from pkg.core.shift import correct_shift\nimport pkg.linked_out\n"
        )
        hover = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 30}},
        )
        assert "def correct_shift(" in hover["result"]["contents"]["value"]
        assert "pkg/bom.py" in _wait_for_path(client, BOM_TOKEN, "pkg/bom.py")

        # one watched-files batch: a real new file and bad or outside paths
        fresh = root / "pkg" / "fresh_module.py"
        fresh.write_text("def fresh_token_function_qzx():\n    pass\n", "utf-8")
        (outside / "leak2.py").write_text(f"def {OUTSIDE_TOKEN}2():\n    pass\n")
        changes = [
            {"uri": fresh.as_uri(), "type": 1},
            {"uri": "file:///%00bad.py", "type": 2},
            {"uri": (outside / "leak2.py").as_uri(), "type": 1},
            {"uri": f"{root.as_uri()}/pkg/../../elsewhere/leak2.py", "type": 1},
            {"uri": f"{root.as_uri()}/pkg/%2e%2e/%2e%2e/elsewhere/leak2.py", "type": 1},
            {"uri": (root / "pkg" / "linked_out.py").as_uri(), "type": 2},
            {"uri": (root / "pkg" / "fifo.py").as_uri(), "type": 2},
        ]
        client.notify("workspace/didChangeWatchedFiles", {"changes": changes})
        assert "pkg/fresh_module.py" in _wait_for_path(
            client, "fresh_token_function_qzx", "pkg/fresh_module.py"
        )
        for q in (OUTSIDE_TOKEN, OUTSIDE_TOKEN + "2"):
            got = client.request(
                "workspace/executeCommand",
                {"command": "pycsamt.query", "arguments": [{"query": q, "k": 5}]},
            )
            assert OUTSIDE_TOKEN not in json.dumps(got["result"]["results"])
        for path in (
            "../elsewhere/leak.py",
            str(outside / "leak.py"),
            "pkg/linked_out.py",
            "pkg/linked_dir/leak.py",
            "pkg/\x00x.py",
            "pkg/%2e%2e/x.py",
            "pkg/loop_a.py",
            "pkg/fifo.py",
        ):
            for cmd, args in (
                ("pycsamt.readSource", {"path": path}),
                ("pycsamt.inspectSymbol", {"path": path, "symbol": "x"}),
            ):
                got = client.request(
                    "workspace/executeCommand", {"command": cmd, "arguments": [args]}
                )
                assert "error" in got, (cmd, path, got)
                assert OUTSIDE_TOKEN not in json.dumps(got)
        hover = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 14}},
        )
        assert OUTSIDE_TOKEN not in json.dumps(hover)
        got = client.request(
            "workspace/executeCommand",
            {
                "command": "pycsamt.searchSource",
                "arguments": [{"query": OUTSIDE_TOKEN}],
            },
        )
        assert "error" not in got, got
        assert got["result"]["results"] == []  # the query itself is echoed back
    finally:
        client.close()
    logged = json.dumps(client.notifications("window/logMessage"))
    assert "ignored" in logged
    assert "Traceback" not in client.stderr.decode("utf-8", "replace")


def test_safety_helpers(tmp_path: Path):
    for rel in (
        "../x",
        "a/../../x",
        "/etc/passwd",
        "a/%2e%2e/x",
        "a%2Fb",
        "a\x00b",
        "bad\udcff.py",
        "C:\\x",
        "",
    ):
        assert rel_refusal(rel), rel
    assert rel_refusal("pkg/core/shift.py") is None
    (tmp_path / "in.py").write_text("x")
    os.symlink("/etc", tmp_path / "out")
    assert contained(tmp_path, "in.py") == (tmp_path / "in.py").resolve()
    for bad in ("out/passwd", "../x", "/etc/passwd"):
        with pytest.raises(PathRefused):
            contained(tmp_path, bad)
    os.mkfifo(tmp_path / "f.py")
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(tmp_path / "f.py", 100)  # returns at once, never blocks
    assert read_regular(tmp_path / "in.py", 0) is None
    assert read_regular(tmp_path / "in.py", 1) == b"x"


def test_stale_temps_of_a_killed_write_are_removed(tmp_path: Path):
    names = (".chunks.jsonl.abc123", ".meta.json.x9", ".index.npz.q")
    for name in (*names, ".fresh.json.k2", ".names.npz.z7"):
        (tmp_path / name).write_bytes(b"partial")
        os.utime(tmp_path / name, (1, 1))
    (tmp_path / ".chunks.jsonl.live").write_bytes(b"being written")
    (tmp_path / "chunks.jsonl").write_bytes(b"kept")
    assert remove_stale_temps(tmp_path) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".chunks.jsonl.live",
        "chunks.jsonl",
    ]


@pytest.mark.e2e
def test_a_build_killed_while_writing_leaves_no_temp_after_the_next_start(tmp_path):
    profile = write_fixture_corpus(tmp_path)
    idx = tmp_path / ".pycsamt_rag"
    idx.mkdir()
    stale = idx / ".chunks.jsonl.k1ll3d"
    stale.write_bytes(b'{"id": "half')  # what a killed build child leaves
    os.utime(stale, (1, 1))
    _cli(tmp_path, profile, "build")
    client = RawClient()
    try:
        client.initialize(tmp_path, profile)
        client.wait_ready()
    finally:
        client.close()
    assert not [p.name for p in idx.iterdir() if p.name.startswith(".chunks.jsonl.")]


@pytest.mark.e2e
def test_eval_suite_dir_skips_a_fifo_named_jsonl(tmp_path: Path):
    """``suiteDir`` is the user's own folder (not corpus content, so it may
    lie anywhere), but only its regular ``*.jsonl`` files are read."""
    profile = write_fixture_corpus(tmp_path)
    suites = tmp_path / "my_suites"
    suites.mkdir()
    os.mkfifo(suites / "blocked.jsonl")
    line = {"id": "s1", "query": "correct the static shift", "expected_symbols": []}
    (suites / "ok.jsonl").write_text(json.dumps(line) + "\n", "utf-8")
    got = _cli(tmp_path, profile, "eval", "--suite-dir", str(suites))
    assert "ok" in json.dumps(got)
    assert "blocked" not in json.dumps(got)
