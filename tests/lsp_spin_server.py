"""A real ``pycsamt-lsp serve`` whose completion spins on a marker (test only).

Why a wrapper and not a production hook: the server must not carry a
"spin" switch. This script patches the buffer analysis' completion so that a
buffer containing ``SPIN_FOR_TEST`` runs a pure-Python busy loop (no sleep:
it competes for the GIL like slow analysis code would) until the file named
by ``PYCSAMT_TEST_SPIN_STOP`` exists (looked for every :data:`POLL_S`) or
``PYCSAMT_TEST_SPIN_SECONDS`` pass, then appends one line to
``PYCSAMT_TEST_SPIN_LOG``. The editor budget is
``PYCSAMT_TEST_BUDGET`` seconds. Everything else is the real server.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from pycsamt_lsp.analysis import editor as editor_analysis
from pycsamt_lsp.lsp.server import PycsamtServer, serve

MARK = "SPIN_FOR_TEST"
#: How often the spin looks for the stop file. Why by the clock and not every
#: N iterations: each look is a ``stat`` call that releases and retakes the
#: GIL. Done every millisecond or two, those hand-offs bump CPython's switch
#: counter faster than the 5 ms interval after which a waiting thread asks
#: for the GIL, so the event loop and the hover thread were starved for
#: seconds (CI failure of 2026-12-01). That is an I/O convoy, not the pure
#: CPU loop this file stands for.
POLL_S = 0.2
_real_complete = editor_analysis.complete


def _spinning_complete(ws, index, line, col, current=None):
    if any(MARK in text for text in index.lines):
        stop = Path(os.environ["PYCSAMT_TEST_SPIN_STOP"])
        end = time.monotonic() + float(
            os.environ.get("PYCSAMT_TEST_SPIN_SECONDS", "30")
        )
        n, look = 0, time.monotonic() + POLL_S
        while (now := time.monotonic()) < end:
            n += 1
            if now >= look:
                if stop.exists():
                    break
                look = now + POLL_S
        with open(os.environ["PYCSAMT_TEST_SPIN_LOG"], "a", encoding="utf-8") as f:
            f.write(f"spun {n}\n")
    return _real_complete(ws, index, line, col, current)


# the completion handler imports ``complete`` from here when it runs
editor_analysis.complete = _spinning_complete
PycsamtServer.editor_budget = float(os.environ.get("PYCSAMT_TEST_BUDGET", "1.0"))

if __name__ == "__main__":
    sys.exit(serve())
