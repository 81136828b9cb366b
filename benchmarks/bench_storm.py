"""Hover and query latency during a branch-switch file storm (issue 19).

A fixture corpus with 560 generated modules; a server (stdio) with client
watched-file events (one batch, as VS Code sends) or its own watcher
(``watchfiles``). A second thread probes hover and ``pycsamt.query`` in a
loop: first while idle (baseline), then from the start of the storm (500
files rewritten, 20 deleted, 20 added in about a second) until the index has
converged to the final tree. Prints a table and writes JSON.

The reference (pycsamt 2.6.4's own assistant) has no editor server and no
file watching, so there is no ratio column here: the comparison is against
the idle baseline of the same server.

    .venv/bin/python benchmarks/bench_storm.py [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from lsp_helpers import write_fixture_corpus  # noqa: E402
from lsp_raw import RawClient  # noqa: E402
from storm import Prober, converged, p95, storm, write_storm_corpus  # noqa: E402

DEFAULT_OUT = HERE / "results" / "bench_storm.json"
USE = "from pkg.core.shift import correct_shift\ncorrect_shift(1)\n"


def one_round(watch: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        profile = write_fixture_corpus(root)
        write_storm_corpus(root)
        client = RawClient()
        try:
            client.initialize(root, profile, watch=watch, debounceMs=250)
            client.wait_ready(timeout=300)
            uri = (root / "use.py").as_uri()
            client.open(uri, USE)
            time.sleep(1.0)
            idle = Prober(client, uri)
            idle.start()
            time.sleep(3.0)
            idle.stop()
            time.sleep(0.3)
            busy = Prober(client, uri)
            busy.start()
            t0 = time.perf_counter()
            res = storm(root)
            if watch == "client":
                changes = [{"uri": p.as_uri(), "type": 2} for p in res.changed]
                changes += [{"uri": p.as_uri(), "type": 3} for p in res.deleted]
                changes += [{"uri": p.as_uri(), "type": 1} for p in res.added]
                client.notify("workspace/didChangeWatchedFiles", {"changes": changes})
            while not converged(client, res):
                if time.perf_counter() - t0 > 300:
                    raise RuntimeError("no convergence in 300 s")
                time.sleep(0.1)
            converge_s = time.perf_counter() - t0
            busy.stop()
            time.sleep(0.3)
        finally:
            client.close()
    return {
        "watch": watch,
        "idle_hover_p95_ms": round(p95(idle.hover_ms), 1),
        "idle_query_p95_ms": round(p95(idle.query_ms), 1),
        "storm_hover_p95_ms": round(p95(busy.hover_ms), 1),
        "storm_query_p95_ms": round(p95(busy.query_ms), 1),
        "storm_hover_max_ms": round(max(busy.hover_ms), 1),
        "storm_query_max_ms": round(max(busy.query_ms), 1),
        "storm_probes": len(busy.hover_ms),
        "storm_write_s": round(res.seconds, 2),
        "converged_s": round(converge_s, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    rows = [one_round(w) for _ in range(args.rounds) for w in ("client", "server")]
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rounds": rows}, indent=2) + "\n", "utf-8")
    print(json.dumps({"rounds": rows}))


if __name__ == "__main__":
    main()
