"""Atomic file writes: a reader sees the old file or the new one, never half.

Why one module: the index store, the package model, the dense vectors and
the PDF text cache each wrote "temp file + rename" by hand, and two of them
skipped ``fsync`` (after a crash the rename could land before the data) or
left the temp file behind on failure. Here the data is flushed and synced
before ``os.replace``, and the temp file is removed whatever goes wrong.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "Staged",
    "atomic_open",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "staged_write",
]


@contextmanager
def atomic_open(path: Path, *, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file handle whose content replaces *path* when the block ends
    normally (flushed, synced, renamed); on any exception the temp file is
    removed and *path* is untouched.

    ``durable=False`` skips the sync (a reader still sees the old file or
    the new one, never half): only for a file whose loss, or emptiness, after
    a crash is detected and repaired, and which nothing else depends on
    having reached the disk. The index's manifest is one: it is its commit
    point (the other index files are synced before it is renamed, and every
    load reads and checks it whole), so without the sync a crash can only
    leave the previous manifest (a torn set, refused) or an unreadable one
    (refused), and the index is rebuilt either way.

    For writers that produce a file piece by piece over a long operation (a
    streamed build writes ``chunks.jsonl`` while its workers still parse),
    so the whole content never has to exist in memory at once. The temp file
    sits next to *path* (same file system, so the rename is atomic) and is
    named ``.<name>.*`` so directory listings skip it.
    """
    import tempfile  # here: a warm start writes nothing (issue 18)

    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write(
    path: Path, write: Callable[[BinaryIO], object], *, durable: bool = True
) -> None:
    """Replace *path* with what ``write(fh)`` writes to a binary file handle
    (:func:`atomic_open` for a writer that is one call)."""
    with atomic_open(path, durable=durable) as fh:
        write(fh)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace *path* with *data*."""
    atomic_write(path, lambda fh: fh.write(data))


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Replace *path* with *text* in *encoding*."""
    atomic_write_bytes(path, text.encode(encoding))


class Staged:
    """A file written and synced under its temporary name
    (:func:`staged_write`), not yet in place: :meth:`commit` renames it over
    its path, :meth:`discard` removes it. Why: a set of files that must
    appear together (an index's ``meta.json`` and ``index.npz`` before its
    manifest) can then be written and synced side by side, and put in place
    only once every one of them, and what must precede them, is written;
    a failure before that leaves the old set as it was."""

    def __init__(self, tmp: str, path: Path) -> None:
        self.tmp: str | None = tmp
        self.path = path

    def commit(self) -> None:
        """Rename over the path (once)."""
        if self.tmp is None:
            raise ValueError(f"{self.path} was committed or discarded already")
        tmp, self.tmp = self.tmp, None
        try:
            os.replace(tmp, self.path)
        except BaseException:
            _unlink(tmp)
            raise

    def discard(self) -> None:
        """Remove the temporary file (nothing when committed already)."""
        if self.tmp is not None:
            tmp, self.tmp = self.tmp, None
            _unlink(tmp)


def staged_write(path: Path, write: Callable[[BinaryIO], object]) -> Staged:
    """What ``write(fh)`` writes, flushed and synced in a temporary file
    next to *path*, to be put in place by :meth:`Staged.commit`; on any
    exception the temporary file is removed and *path* is untouched."""
    import tempfile  # here: a warm start writes nothing (issue 18)

    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink(tmp)
        raise
    return Staged(tmp, path)


def _unlink(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass
