"""Keeping a long-lived process's heap quiet and small.

The index, its chunk table and the package model are a few hundred thousand
Python objects that live as long as the server. CPython's cyclic collector
walks all of them on every full collection, and an edit of a large module
allocates enough (its parse tree alone) to trigger one: a ~100 ms pause in the
middle of a refresh, a hover or a diagnostics pass. After a snapshot is
published the long-lived objects are *frozen* (moved out of the collector's
reach, ``gc.freeze``); they are still freed by reference counting when a
newer snapshot replaces them. Cyclic garbage among frozen objects would never
be collected, so once an update burst has settled (after the index is
persisted) :func:`compact` unfreezes, collects once, hands freed memory back
to the operating system (glibc ``malloc_trim``) and freezes again.

Only the server opts in (``Workspace(long_lived=True)``); a one-shot CLI
process has nothing to gain.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

__all__ = [
    "compact",
    "freeze",
    "no_gc",
    "one_arena",
    "paused_gc",
    "trim",
    "tune_malloc",
]

log = logging.getLogger(__name__)


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection inside the block (for ``ast.parse``: a syntax
    tree is acyclic, and the collections its many allocations trigger each
    scan every live object: a quarter of a full build, or a 100 ms stall of
    an edit when the heap holds an index)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def no_gc() -> None:
    """Initializer of a build's worker processes: no cyclic collection at all.

    A worker lives for one build and makes no cyclic garbage worth
    collecting (parse trees and chunks are freed by reference counting);
    each collection would only walk the trees being worked on.
    """
    gc.disable()


def freeze() -> None:
    """Move every object alive now out of the cyclic collector's reach."""
    gc.freeze()


def _libc_name() -> str | None:
    """What ``ctypes.CDLL`` opens for the C library's functions: on Linux
    None, the process's own symbols (``dlopen(NULL)``: the interpreter's
    libc is among them), elsewhere the library ``find_library`` names.

    Why not ``find_library`` on Linux too: it runs ``/sbin/ldconfig -p`` in
    a child process (and imports ``subprocess``) on every call, twice at
    the start of a ``pycsamt-lsp build`` (:func:`one_arena`), before its
    worker is started: 15-20 ms there on a quiet machine, 0.18-0.20 s on a
    loaded one (issue 18). The functions found are the same ones."""
    if sys.platform.startswith("linux"):
        return None
    import ctypes.util

    return ctypes.util.find_library("c") or "libc.so.6"


@cache
def _malloc_trim():
    """glibc's ``malloc_trim`` or None (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(_libc_name())
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


#: glibc ``mallopt`` parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def tune_malloc(mmap_threshold: int = 1 << 20, arena_max: int = 2) -> bool:
    """Make glibc give a long-lived process's big transient blocks back.

    glibc serves blocks over its mmap threshold (128 KB at first) with their
    own mappings, freed to the system on ``free``, but raises the threshold
    to the size of every such block freed (up to 32 MB). After a build, a
    persist or a save has freed its multi-megabyte arrays, later ones come
    from the heap and leave it fragmented: most of the server's growth after
    a few saves and a persist (issue 18). A fixed threshold (setting it stops
    the raising) keeps them in mappings; two arenas instead of eight per core
    keep the worker threads from each fragmenting its own. Before any thread
    or big allocation (the server calls it first). False off glibc.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    try:
        libc = ctypes.CDLL(_libc_name())
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold))
    return bool(mallopt(_M_ARENA_MAX, arena_max)) and ok


def one_arena() -> bool:
    """One glibc malloc arena for the whole process (``M_ARENA_MAX`` 1);
    before any thread. False off glibc.

    Why: a one-shot build writes ``index.npz`` from a thread (its BM25
    arrays made there) while its main thread writes ``meta.json``; that
    thread's allocations came from an arena of its own, which the main
    thread's could not reuse: +4.8 MB on the build process's peak RSS on the
    sdist (87.9 MB against 83.1 MB with one arena, 81.2 MB with no thread).
    The threads of a build take turns on the GIL, so one arena costs them
    no waiting worth measuring.
    """
    if _malloc_trim() is None:
        return False
    try:
        mallopt = ctypes.CDLL(_libc_name()).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, 1))


def trim() -> bool:
    """Hand the C heap's free pages back to the OS (glibc ``malloc_trim``),
    without a collection; False off glibc.

    Why: a parse of a large module (the editor opened it, or saved it)
    frees its tokens and the parser's arena when it returns, ~8 MB for the
    245 KB ``funcutils.py``, and glibc keeps those pages until something
    trims; :func:`compact` does, but only after the next persist. About a
    millisecond on the server's heap (issue 18: an editing session's
    memory)."""
    do = _malloc_trim()
    if do is None:
        return False
    do(0)
    return True


def compact() -> None:
    """One full collection, freed heap back to the OS, then freeze again."""
    gc.unfreeze()
    found = gc.collect()
    trim()
    gc.freeze()
    log.debug("heap compacted: %d unreachable objects collected", found)
