"""The one way handlers run blocking work: off the event loop, bounded.

Why one helper: every handler (hover, completion, diagnostics, commands,
index refreshes) reads the workspace, which parses, scores and sometimes
loads from disk. Run on the event loop, any of it would stop every other
request; run through ``asyncio.to_thread`` without a bound, a buffer that
makes the analysis slow piles up threads and one slow answer blocks the
others. So each kind of work has a *lane*: a small dedicated thread pool and
a cap on the jobs it holds.

- An **editor** job (hover, completion, definition, diagnostics) has a time
  budget. When it expires the request answers its empty value and the log
  says why; the thread is left to finish (Python cannot stop it). Each job
  gets a thread at once (so one stuck job delays nobody), and the lane
  holds at most ``limit`` jobs: past that a request is answered empty at
  once ("busy") instead of starting yet another thread.
- A **command** job (``workspace/executeCommand``, refreshes, persisting)
  has no budget (a rebuild takes what it takes) and its own pool, so a
  burst of commands never delays a hover.

A pure-Python loop in a worker releases the GIL every switch interval, so
the event loop keeps answering while a job spins; C code that holds the GIL
(a backtracking regex) is the one thing a thread cannot bound, which is why
the analysis code keeps its patterns linear.

**The GIL convoy, and the switch interval** (:func:`tune_gil`). A thread that
wants the GIL waits on a condition for the switch interval, and only when
that wait times out does it ask the running thread to let go. Every release
of the GIL (each ``stat``, ``read`` or ``write``, a ``hashlib`` update over
2 KB, a socket send) signals that condition and restarts the wait. So a
worker that makes a short system call every millisecond or two, with Python
in between, never lets the wait time out; the waiter gets the GIL only by
winning the race in the microseconds the call lasts, which a thread that
must first be woken by the kernel usually loses. The event loop (pygls
reads each message through an executor thread: about ten GIL hand-offs per
hover) and the editor threads then starve: 6-11 s in 3 of about 100 runs of
a test whose spin called ``stat`` every 1-2 ms (CI, 2026-12-01; the test now
looks by the clock).

Measured with the product's own background work (``benchmarks/bench_editor.py
--load``: the real server on copies of the checkout and the sdist; broad
``searchSource``, ``rebuild``, ``eval`` with ablation, ``ask``, a 200-module
save burst, and all at once), the convoy did not show: each file a search or
a refresh reads costs several system calls in a row, so a waiter gets in
within a file or two. In-process, the event loop's worst wake-up while a
worker looped over the real code was 0.02-0.23 s (source search, listing the
corpus, reading and hashing every file, persisting, a refresh of 100 modules,
MiniLM embedding), against up to 0.07 s with no worker at all on this
loaded machine. What remained
was the tail of plain CPU contention, where each hand-off waits up to one
interval: with CPython's 5 ms, hover p99 was 41-314 ms and the worst hover
0.44 s while a search ran on the checkout. The server runs with a 1 ms
interval (:data:`SWITCH_INTERVAL_S`): hover p99 0.37-0.64x (checkout) and
0.35-0.86x (sdist) under search, eval, the burst and all at once, the
background work's wall time 0.54-1.01x, and the CPU of three contending
threads unchanged (1.91 vs 1.81 s; medians of 3). It also
puts Python loops of 1-5 ms between system calls back under the wait's
timeout, which leaves the convoy only to calls closer together than 1 ms.

The one request over its budget that the benchmark found was not the GIL's:
the first hover after a save burst applied the burst's deferred package-model
updates in its own thread (3.6-5.0 s on the sdist, answered empty; since
those updates were deferred, f567976: at aa98add the same burst's worst
hover was 0.11-0.15 s); the
server's refresh job now applies them (``Workspace.refresh_modelled``), and
what is left of a hover's tail under a burst is the refresh's own C work
(``ast.parse`` holds the GIL for a whole file): 0.06-1.3 s.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["SWITCH_INTERVAL_S", "Lane", "Offload", "tune_gil"]

log = logging.getLogger("pycsamt_lsp")
T = TypeVar("T")

#: The GIL switch interval of the server process (CPython's default: 5 ms).
SWITCH_INTERVAL_S = 0.001


def tune_gil(interval: float = SWITCH_INTERVAL_S) -> None:
    """Set the server process's GIL switch interval (see the module docstring).

    Process-wide, so it is called once by ``serve()``, never on import: a
    tool importing the engine keeps CPython's default. It changes how soon a
    waiting thread asks for the GIL, not how much work a thread does, so the
    cost is only the extra hand-offs while two threads both want to run.
    """
    sys.setswitchinterval(interval)


@dataclass
class Lane:
    """A pool of at most ``limit`` threads and the jobs it holds.

    A lane with a budget admits at most ``limit`` jobs (running, or overdue
    and still running): each admitted job gets a thread of its own at once,
    so a stuck job never delays the next request, and stuck jobs cannot pile
    up past ``limit``. A lane without a budget queues in its pool instead.
    """

    name: str
    limit: int
    budget: float | None
    executor: ThreadPoolExecutor | None = None
    running: int = 0

    def pool(self) -> ThreadPoolExecutor:
        """The lane's thread pool, created on first use (a server that never runs
        a job of this lane starts no threads).
        """
        if self.executor is None:
            self.executor = ThreadPoolExecutor(
                max_workers=self.limit, thread_name_prefix=f"pycsamt-{self.name}"
            )
        return self.executor


class Offload:
    """Runs blocking callables in bounded lanes (see the module docstring)."""

    def __init__(
        self,
        *,
        editor_budget: float = 5.0,
        editor_limit: int = 8,
        command_workers: int = 4,
    ) -> None:
        self.lanes = {
            "editor": Lane("editor", editor_limit, editor_budget),
            "command": Lane("command", command_workers, None),
        }
        self._lock = threading.Lock()
        #: requests answered empty: {"timeout": n, "busy": n}
        self.dropped = {"timeout": 0, "busy": 0}

    def busy(self, lane: str = "editor") -> int:
        """Jobs the lane holds now (running, queued or overdue)."""
        return self.lanes[lane].running

    async def run(
        self,
        what: str,
        fn: Callable[..., T],
        *args: Any,
        lane: str = "editor",
        budget: float | None = None,
        default: Any = None,
    ) -> T | Any:
        """``fn(*args)`` in a worker of *lane*; *default* when over budget or
        when the lane is full. Exceptions of *fn* propagate."""
        ln = self.lanes[lane]
        limit = ln.budget if budget is None else budget
        with self._lock:
            full = ln.budget is not None and ln.running >= ln.limit
            if full:
                self.dropped["busy"] += 1
            else:
                ln.running += 1
        if full:
            log.warning(
                "%s answered empty: %d earlier %s jobs are still running",
                what,
                ln.running,
                ln.name,
            )
            return default
        try:
            fut = ln.pool().submit(fn, *args)
        except RuntimeError:  # the pool was shut down: the server is stopping
            self._release(ln)
            return default
        fut.add_done_callback(lambda _f: self._release(ln))
        wrapped = asyncio.wrap_future(fut)
        if limit is None:
            return await wrapped
        try:
            return await asyncio.wait_for(asyncio.shield(wrapped), limit)
        except TimeoutError:
            self.dropped["timeout"] += 1
            log.warning(
                "%s answered empty: over its %.1f s budget (the work goes on in "
                "the background; %d %s jobs held)",
                what,
                limit,
                ln.running,
                ln.name,
            )
            wrapped.add_done_callback(_consume)
            return default

    def _release(self, ln: Lane) -> None:
        with self._lock:
            ln.running -= 1

    def shutdown(self) -> None:
        """Stop accepting work; running jobs finish in their threads."""
        for ln in self.lanes.values():
            if ln.executor is not None:
                ln.executor.shutdown(wait=False, cancel_futures=True)


def _consume(fut: asyncio.Future | Future) -> None:
    """Read the late result of a job nobody waits for (no 'never retrieved')."""
    if not fut.cancelled():
        exc = fut.exception()
        if exc is not None:
            log.info("a job that ran over its budget failed later: %s", exc)
