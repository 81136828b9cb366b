"""A branch-switch file storm on a fixture corpus (issue 19), for the
convergence test and ``benchmarks/bench_storm.py``.

:func:`write_storm_corpus` adds ``N_FILES`` generated modules; :func:`storm`
rewrites 500 of them (each gains a unique function), deletes 20 and adds 20
new ones, all within about a second, and returns what the final tree holds.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsp_raw import RawClient

N_FILES = 560
N_REWRITE, N_DELETE, N_ADD = 500, 20, 20


def _module(i: int, extra: str = "") -> str:
    return (
        f'"""Generated module {i} about station resistivity."""\n\n\n'
        f"def compute_station_{i}(data, factor=1.0):\n"
        f'    """Compute station {i} apparent resistivity."""\n'
        f"    return data * factor\n\n\n"
        f"class Survey{i}:\n"
        f'    """Survey number {i}."""\n\n'
        f"    def run(self):\n"
        f'        """Run survey {i}."""\n'
        f"        return {i}\n" + extra
    )


def write_storm_corpus(root: Path) -> None:
    gen = root / "pkg" / "gen"
    gen.mkdir(parents=True, exist_ok=True)
    (gen / "__init__.py").write_text("", "utf-8")
    for i in range(N_FILES):
        (gen / f"mod_{i}.py").write_text(_module(i), "utf-8")


@dataclass
class StormResult:
    changed: list[Path]
    deleted: list[Path]
    added: list[Path]
    rewrite_token: str  # a function only the rewritten files define
    deleted_token: str  # a function only a deleted file defined
    added_token: str  # a function only an added file defines
    seconds: float = 0.0


def storm(root: Path) -> StormResult:
    gen = root / "pkg" / "gen"
    t0 = time.perf_counter()
    changed = []
    for i in range(N_REWRITE):
        p = gen / f"mod_{i}.py"
        extra = f"\n\ndef rewritten_marker_{i}_qzx():\n    return {i}\n"
        p.write_text(_module(i, extra), "utf-8")
        changed.append(p)
    deleted = []
    for i in range(N_FILES - N_DELETE, N_FILES):
        p = gen / f"mod_{i}.py"
        p.unlink()
        deleted.append(p)
    added = []
    for j in range(N_ADD):
        p = gen / f"new_{j}.py"
        p.write_text(_module(10_000 + j, f"\n\ndef brand_new_qzx_{j}():\n    pass\n"))
        added.append(p)
    return StormResult(
        changed,
        deleted,
        added,
        rewrite_token="rewritten_marker_7_qzx",
        deleted_token=f"compute_station_{N_FILES - 1}",
        added_token="brand_new_qzx_3",
        seconds=time.perf_counter() - t0,
    )


def query_paths(client: RawClient, q: str, k: int = 5) -> list[str]:
    got = client.request(
        "workspace/executeCommand",
        {"command": "pycsamt.query", "arguments": [{"query": q, "k": k}]},
    )
    return [r["source_path"] for r in got["result"]["results"]]


def converged(client: RawClient, res: StormResult) -> bool:
    """The index holds exactly the final tree's markers."""
    return (
        "pkg/gen/mod_7.py" in query_paths(client, res.rewrite_token)
        and "pkg/gen/new_3.py" in query_paths(client, res.added_token)
        and f"pkg/gen/mod_{N_FILES - 1}.py"
        not in query_paths(client, res.deleted_token, k=20)
    )


@dataclass
class Prober:
    """Hover and query from a second client thread; latencies in ms."""

    client: RawClient
    uri: str
    hover_ms: list[float] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _n: int = 0

    def _ask(self, method: str, params: dict) -> float:
        """One request with an id of the prober's own (the test thread has
        the client's counter); its round trip in ms."""
        self._n += 1
        msg_id = f"probe-{self._n}"
        t = time.perf_counter()
        self.client.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        )
        # poll every millisecond (RawClient.response polls every 20 ms: too
        # coarse to time a 2 ms hover)
        c = self.client
        while True:
            with c._lock:
                hit = next((m for m in c.messages if m.get("id") == msg_id), None)
                if hit is not None:
                    c.messages.remove(hit)
                    return (time.perf_counter() - t) * 1000
            if time.perf_counter() - t > 60:
                raise AssertionError(f"no response to {method} in 60 s")
            time.sleep(0.001)

    def run(self) -> None:
        hover = {
            "textDocument": {"uri": self.uri},
            "position": {"line": 0, "character": 30},
        }
        query = {
            "command": "pycsamt.query",
            "arguments": [{"query": "static shift correction", "k": 5}],
        }
        while not self._stop.is_set():
            self.hover_ms.append(self._ask("textDocument/hover", hover))
            self.query_ms.append(self._ask("workspace/executeCommand", query))
            time.sleep(0.002)

    def start(self) -> threading.Thread:
        th = threading.Thread(target=self.run, daemon=True)
        th.start()
        return th

    def stop(self) -> None:
        self._stop.set()


def p95(xs: list[float]) -> float:
    if len(xs) < 2:
        return xs[0] if xs else float("nan")
    return statistics.quantiles(xs, n=20, method="inclusive")[-1]
