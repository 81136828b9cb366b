"""A raw JSON-RPC client over a server's stdio, for what pytest-lsp cannot
send: malformed requests, bodies that are not JSON, ``exit`` without
``shutdown``. Responses are matched by id; stderr is kept for inspection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVE = [sys.executable, "-m", "pycsamt_lsp", "serve"]


def read_message(out: Any) -> Any:
    """The next framed JSON-RPC message on the binary stream *out*, decoded;
    None at end of stream."""
    length = None
    while True:
        line = out.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(out.read(length))


class RawClient:
    """Framed writes, a reader thread, answers to the server's own requests."""

    def __init__(self, command: list[str] | None = None, env: dict | None = None):
        self.proc = subprocess.Popen(
            command or SERVE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.messages: list[dict] = []
        self.stderr = b""
        self._next = 1000
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    # -- wire ------------------------------------------------------------------

    def send_bytes(self, body: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        self.send_bytes(json.dumps(msg).encode())

    def _read(self) -> None:
        out = self.proc.stdout
        while (msg := read_message(out)) is not None:
            with self._lock:
                self.messages.append(msg)
            if "method" in msg and "id" in msg:  # a request of the server
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr += line

    # -- requests --------------------------------------------------------------

    def new_id(self) -> int:
        self._next += 1
        return self._next

    def response(self, msg_id: Any, timeout: float = 60.0) -> dict:
        """The response with *msg_id* (``None``: the next id-less error)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            with self._lock:
                msgs = list(self.messages)
            for m in msgs[seen:]:
                if "method" in m:
                    continue
                if "id" in m and m["id"] == msg_id:
                    with self._lock:
                        self.messages.remove(m)
                    return m
                if msg_id is None and "id" not in m and "error" in m:
                    with self._lock:
                        self.messages.remove(m)
                    return m
            seen = 0
            time.sleep(0.02)
        raise AssertionError(f"no response to {msg_id!r} in {timeout} s")

    def request(self, method: str, params: Any = ..., timeout: float = 60.0) -> dict:
        msg_id = self.new_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not ...:
            msg["params"] = params
        self.send(msg)
        return self.response(msg_id, timeout)

    def notify(self, method: str, params: Any = ...) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not ...:
            msg["params"] = params
        self.send(msg)

    def notifications(self, method: str) -> list[dict]:
        with self._lock:
            return [m for m in self.messages if m.get("method") == method]

    def initialize(self, root: Path, profile: Path, **opts: Any) -> dict:
        got = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": {},
                "initializationOptions": {
                    "corpusRoot": str(root),
                    "profile": str(profile),
                    "watch": "off",
                    **opts,
                },
            },
        )
        self.notify("initialized", {})
        return got

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = [
                n["params"]["state"] for n in self.notifications("pycsamt/indexState")
            ]
            if states and states[-1] in ("ready", "error"):
                assert states[-1] == "ready", states
                return
            time.sleep(0.05)
        raise AssertionError("index not ready")

    def open(self, uri: str, text: str, language: str = "python") -> None:
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": language,
                    "version": 1,
                    "text": text,
                }
            },
        )

    def close(self, timeout: float = 20.0) -> int:
        try:
            self.request("shutdown", timeout=timeout)
            self.notify("exit")
        except (OSError, AssertionError):
            pass
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
