"""Starting a build's worker processes without re-running the main script.

Build workers are started with ``spawn`` (a server has threads; forking it
can deadlock). A spawned child first re-runs the parent's main module when
that module was a script file, as ``pycsamt-lsp`` is: every worker then
imported the whole command line (answers, commands, evaluation, PDF
support) before parsing a single file, ~0.8 s of CPU and ~40 MB each on
two cores. The workers only need importable functions
(:func:`pycsamt_lsp.model.state.process_file`), so the main module is
hidden from ``multiprocessing`` while they start.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.context import BaseContext

__all__ = ["main_script_hidden", "plan_batches", "pool_context"]

#: batches per worker in a parallel build: more balance the end, fewer
#: cost less in messages (each is one round trip of the pool's queues)
_BATCHES_PER_WORKER = 24


@contextmanager
def main_script_hidden() -> Iterator[None]:
    """While inside, spawned children do not re-run ``__main__``'s file.

    ``multiprocessing.spawn`` re-runs the main module by path when it has a
    ``__file__`` and no import name (``python -m x`` and the interactive
    interpreter are left alone already). Only process start-up reads it, so
    wrap the calls that start the processes.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if main is None or spec is not None or "__file__" not in vars(main):
        yield
        return
    path = vars(main).pop("__file__")
    try:
        yield
    finally:
        main.__file__ = path


def pool_context() -> BaseContext:
    """How a build starts its workers: ``spawn`` (see the module docstring).

    ``PYCSAMT_LSP_START=fork`` forks instead (Linux, a process with no
    other thread only): the workers then start at once with the parent's
    imports, at the price of sharing its pages (which ``ps`` counts in each).
    """
    method = os.environ.get("PYCSAMT_LSP_START", "spawn")
    if method == "fork" and (
        not sys.platform.startswith("linux") or threading.active_count() > 1
    ):
        method = "spawn"
    return multiprocessing.get_context(method)


def plan_batches(sizes: Sequence[int], workers: int) -> list[list[int]]:
    """Work items of a parallel build: lists of job positions.

    About :data:`_BATCHES_PER_WORKER` batches per worker of similar byte
    totals (parse time grows with size), so the last one to finish is
    short; files larger than a batch go first, each alone, largest first,
    so no long parse starts at the end. The rest keep path order (results
    are written in that order: early ones need not wait for late ones).
    """
    total = sum(sizes)
    target = max(total // max(workers * _BATCHES_PER_WORKER, 1), 1)
    big = sorted(
        (i for i, n in enumerate(sizes) if n >= target), key=lambda i: -sizes[i]
    )
    out: list[list[int]] = [[i] for i in big]
    taken = set(big)
    cur: list[int] = []
    acc = 0
    for i, n in enumerate(sizes):
        if i in taken:
            continue
        cur.append(i)
        acc += n
        if acc >= target:
            out.append(cur)
            cur, acc = [], 0
    if cur:
        out.append(cur)
    return out
