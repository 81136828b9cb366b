"""Work functions for the pipe workers of ``tests/test_build_pool.py``.

A pipe worker imports its function by name (``module:function``) in a fresh
interpreter that gets the parent's ``sys.path``, so these live in a module
of their own, importable from the tests folder.
"""

from __future__ import annotations

import os
from typing import Any


def square(args: tuple[Any, ...]) -> list[int]:
    """``(offset, items)`` -> each item squared plus offset."""
    offset, items = args
    return [i * i + offset for i in items]


def die_on_seven(args: tuple[Any, ...]) -> list[int]:
    """:func:`square`, except that a batch holding 7 kills the worker (a
    build's jobs are not numbers: the worker dies on any of those)."""
    if not all(isinstance(i, int) for i in args[-1]) or 7 in args[-1]:
        os._exit(3)
    return square(args)


def raise_on_seven(args: tuple[Any, ...]) -> list[int]:
    """:func:`square`, except that a batch holding 7 raises."""
    if 7 in args[1]:
        raise ValueError("seven")
    return square(args)


def big_answer(args: tuple[Any, ...]) -> list[bytes]:
    """Each item as *offset* MB of its own byte: answers larger than a pipe
    holds (the pool's 1 MiB or the default 64 KiB)."""
    offset, items = args
    return [bytes([i % 256]) * (offset << 20) for i in items]
