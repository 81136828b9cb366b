"""A progress line on stderr for ``pycsamt-lsp build --embed``.

Why: embedding a corpus takes minutes on a laptop CPU, and a command that
says nothing for minutes looks hung. The callback has the signature every
build progress uses (``(percent, message)``, as the server's ``$/progress``
reporter), so the same :func:`~.store.build_embeddings` drives both.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["stderr_progress"]


def stderr_progress(
    stream: TextIO | None = None, *, every_s: float = 5.0
) -> Callable[[int, str], None]:
    """A ``(percent, message)`` callback writing ``embedding: 42% ...``.

    On a terminal one line is rewritten in place; otherwise (a log, CI) a
    line is written at most every *every_s* seconds and at 100%, so a log
    is not flooded.
    """
    out = stream if stream is not None else sys.stderr
    tty = bool(getattr(out, "isatty", lambda: False)())
    last = [float("-inf")]

    def report(pct: int, message: str) -> None:
        now = time.monotonic()
        if tty:
            end = "\n" if pct >= 100 else ""
            out.write(f"\rembedding: {pct:3d}% {message}\x1b[K{end}")
        elif pct >= 100 or now - last[0] >= every_s:
            out.write(f"embedding: {pct:3d}% {message}\n")
        else:
            return
        last[0] = now
        out.flush()

    return report
