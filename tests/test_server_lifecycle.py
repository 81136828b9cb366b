"""The server's process life: a cold build of a large corpus runs in a child
process group, and a client that goes away mid-build (shutdown, or just its
pipe closing) gets a server that exits at once and leaves no process behind.

Driven over raw stdio JSON-RPC (the client must be able to vanish), on the
real corpus (a fixture corpus builds too fast to be caught mid-build).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc"),
]


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class RawClient:
    """Just enough of an LSP client: framed writes, a reader thread."""

    def __init__(self, root: Path, index_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pycsamt_lsp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.messages: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "rootUri": None,
                    "capabilities": {"window": {"workDoneProgress": True}},
                    "initializationOptions": {
                        "corpusRoot": str(root),
                        "indexDir": str(index_dir),
                    },
                },
            }
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            self.messages.append(msg)
            if msg.get("method") == "window/workDoneProgress/create":
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    def wait_for_build_progress(self, timeout: float = 120) -> None:
        """Until the build reports a percentage above its start."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in list(self.messages):
                v = m.get("params", {}).get("value", {}) if m.get("params") else {}
                if (
                    m.get("method") == "$/progress"
                    and v.get("kind") == "report"
                    and (v.get("percentage") or 0) > 5
                ):
                    return
            time.sleep(0.05)
        raise AssertionError("no build progress reported")


@pytest.mark.parametrize("how", ["shutdown", "pipe closed"])
def test_a_client_leaving_mid_build_stops_the_build_processes(
    real_corpus: Path, tmp_path: Path, how: str
):
    client = RawClient(real_corpus, tmp_path / "index")
    try:
        client.wait_for_build_progress()
        procs = _descendants(client.proc.pid)
        # the build child, its two pool workers (and multiprocessing's tracker)
        assert len(procs) >= 3, procs
        if how == "shutdown":
            client.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            client.send({"jsonrpc": "2.0", "method": "exit"})
        else:
            client.proc.stdin.close()
        client.proc.wait(timeout=20)  # not the rest of the build
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in procs):
            time.sleep(0.05)
        assert [p for p in procs if _alive(p)] == []
        # nothing half-written was left as if it were an index
        assert not (tmp_path / "index" / "manifest.json").exists()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
