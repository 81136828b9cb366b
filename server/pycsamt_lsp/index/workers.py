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

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["main_script_hidden"]


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
