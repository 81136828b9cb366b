"""A small OpenAI-compatible HTTP server for tests (127.0.0.1 only).

Serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` with the
response shapes the ``openai`` package parses. Each endpoint's behaviour is
set per test: ``"ok"``, ``"timeout"`` (sleep ``delay`` seconds before
answering, longer than the client's timeout) or ``"error500"``. Every
request (path, lower-cased headers, JSON body) is recorded. The server runs in a
daemon thread and stops when the context manager exits; sleeps are bounded
so nothing outlives a test for long.

    with FakeOpenAI() as fake:
        fake.reply = "Use `correct_shift` [1]."
        fake.mode["chat"] = "timeout"
        ... OpenAI(base_url=fake.url, api_key="test-key") ...
        fake.requests[-1]["body"]["messages"]
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAI", "fake_vector"]

EMBED_DIM = 16


def fake_vector(text: str, dim: int = EMBED_DIM) -> list[float]:
    """A deterministic, non-normalised vector for *text* (word-hash bag)."""
    vec = [0.0] * dim
    for word in text.lower().split():
        h = hashlib.sha256(word.encode()).digest()
        vec[h[0] % dim] += 1.0 + h[1] / 255.0
    vec[0] += 0.1  # never all zero
    return vec


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *_args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def do_POST(self) -> None:  # http.server naming
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        endpoint = (
            "chat"
            if path.endswith("/chat/completions")
            else "embeddings"
            if path.endswith("/embeddings")
            else None
        )
        with fake.lock:
            fake.requests.append(
                {
                    "path": path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
            )
        if endpoint is None:
            self._send(
                404,
                {"error": {"message": "not found", "type": "invalid_request_error"}},
            )
            return
        mode = fake.mode.get(endpoint, "ok")
        if mode == "timeout":
            fake.stop.wait(min(fake.delay, 10.0))
        elif mode == "error500":
            self._send(
                500,
                {
                    "error": {
                        "message": "the fake server failed",
                        "type": "server_error",
                    }
                },
            )
            return
        if endpoint == "chat":
            self._send(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": fake.reply},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "total_tokens": 2,
                    },
                },
            )
            return
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        self._send(
            200,
            {
                "object": "list",
                "data": [
                    {"object": "embedding", "index": i, "embedding": fake_vector(t)}
                    for i, t in enumerate(inputs)
                ],
                "model": body.get("model", "fake"),
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOpenAI


class FakeOpenAI:
    """Context manager running the fake API; ``url`` is the ``base_url``."""

    def __init__(self) -> None:
        self.reply = "The excerpts cover this [1]."
        self.mode: dict[str, str] = {"chat": "ok", "embeddings": "ok"}
        self.delay = 3.0
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def requests_to(self, endpoint: str) -> list[dict[str, Any]]:
        suffix = "/chat/completions" if endpoint == "chat" else "/embeddings"
        with self.lock:
            return [r for r in self.requests if r["path"].endswith(suffix)]

    def __enter__(self) -> FakeOpenAI:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()  # wake sleeping "timeout" handlers
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
