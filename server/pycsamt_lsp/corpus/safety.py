"""What a corpus path may be, and reading a corpus file without hanging (issue 19).

Why one module: the index walk, the package model's walk, watched-file
events and the readers each had their own idea of a file. A symlink inside
the corpus to a file outside it was followed (its text came back from query,
ask and hover), a file name that is not UTF-8 ended the whole build with
"'utf-8' codec can't encode character '\\udcff'", and a FIFO named ``x.py``
hung the package model on ``open()``. Every walker screens its files with
:func:`screen`, every reader reads with :func:`read_regular`, and an
editor-supplied path goes through :func:`contained` first.

Rules (documented in docs/robustness.md):

* a corpus-relative path is UTF-8, holds no NUL, no ``..`` part, is not
  absolute, and holds no percent-encoded ``.``/``/``/``\\``/NUL (``%2e``,
  ``%2f``, ``%5c``, ``%00``): a name that needs decoding to be understood is
  refused rather than decoded;
* a symlink is followed only when its resolved target stays inside the
  corpus root (so ``pkg/alias.py -> pkg/real.py`` works, ``-> /etc`` does not);
* only regular files are read (``stat.S_ISREG`` after opening with
  ``O_NONBLOCK``, so a FIFO never blocks), at most *max_bytes* of them.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = [
    "MODEL_MAX_BYTES",
    "PathRefused",
    "contained",
    "file_refusal",
    "read_regular",
    "rel_refusal",
    "screen",
    "shown",
]

log = logging.getLogger(__name__)

#: The package model parses no module larger than this (a 50 MB ``.py`` took
#: 27.9 s and 2.6 GB to parse); the index has the profile's own limit.
MODEL_MAX_BYTES = 4_000_000

_ENCODED = re.compile(r"%(?:2e|2f|5c|00)", re.I)


class PathRefused(ValueError):
    """A path that may not be read: outside the corpus or malformed."""


def shown(name: str) -> str:
    """*name* safe to log and to store as JSON text: undecodable bytes of a
    file name (lone surrogates) become ``\\xff`` escapes."""
    try:
        raw = os.fsencode(name)  # the file name's own bytes: ``\xff``, not ``\udcff``
    except (UnicodeError, TypeError):
        raw = name.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def rel_refusal(rel: str) -> str | None:
    """Why the corpus-relative path *rel* is refused, or None when it is fine."""
    if not rel:
        return "empty path"
    if "\x00" in rel:
        return "path contains a NUL byte"
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not valid UTF-8"
    if rel.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", rel):
        return "absolute path"
    if ".." in re.split(r"[\\/]", rel):
        return "'..' path traversal"
    if _ENCODED.search(rel):
        return "percent-encoded separator or dot"
    return None


def _real_root(root: Path) -> Path:
    return Path(os.path.realpath(root))


def contained(root: Path, path: str | Path) -> Path:
    """The resolved *path* (absolute, or relative to *root*) when it lies
    inside *root* after following every symlink; :class:`PathRefused` else."""
    raw = os.fspath(path)
    if "\x00" in raw:
        raise PathRefused("path contains a NUL byte")
    if not os.path.isabs(raw) and (why := rel_refusal(raw)):
        raise PathRefused(f"refused {shown(raw)!r}: {why}")
    base = _real_root(root)
    real = Path(os.path.realpath(base / raw))
    if real != base and not real.is_relative_to(base):
        raise PathRefused(f"refused {shown(raw)!r}: it resolves outside the corpus")
    return real


def read_regular(path: Path | str, max_bytes: int) -> bytes | None:
    """At most *max_bytes* of the regular file *path*; None when it is larger.

    Opens with ``O_NONBLOCK`` and checks ``S_ISREG`` on the open descriptor:
    a FIFO, socket or device named ``x.py`` raises :class:`OSError` at once
    instead of blocking, and the check cannot race a rename.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if st.st_size > max_bytes:
            return None
        chunks, left = [], max_bytes + 1
        while left > 0 and (block := os.read(fd, min(left, 1 << 20))):
            chunks.append(block)
            left -= len(block)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    return None if len(data) > max_bytes else data


def file_refusal(
    root: Path, rel: str, path: Path, *, _dirs: dict[str, str] | None = None
) -> str | None:
    """Why the corpus file *rel* at *path* may not be read (None: it may):
    an unsafe name, a loop or dangling link, a target outside *root*, or not
    a regular file.

    ``_dirs`` (:func:`screen`'s, for one listing) caches resolved folders
    and the resolved root: a file that is not a link resolves to its
    resolved folder plus its name, one ``lstat`` instead of one per path
    part (most of a listing's time; issue 18, warm start)."""
    if why := rel_refusal(rel):
        return why
    try:
        if _dirs is None:
            real = os.path.realpath(path, strict=True)
            base = os.fspath(_real_root(root))
            st = os.stat(real)
        else:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(path, strict=True)
                st = os.stat(real)
            else:
                folder, name = os.path.split(os.fspath(path))
                top = _dirs.get(folder)
                if top is None:
                    top = _dirs[folder] = os.path.realpath(folder, strict=True)
                real = os.path.join(top, name)
            base = _dirs.get("\0") or _dirs.setdefault(
                "\0", os.fspath(_real_root(root))
            )  # NUL: never a folder
    except FileNotFoundError:
        return "no such file"
    except (OSError, RuntimeError, ValueError) as exc:  # a loop, a bad name
        return f"unresolvable ({type(exc).__name__})"
    # both resolved (normalised, absolute): inside is a prefix up to a separator
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        return "symlink to a target outside the corpus"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return None


def screen(
    root: Path,
    items: Iterable[tuple[str, Path]],
    refused: dict[str, str] | None = None,
    *,
    max_bytes: int | None = None,
) -> Iterator[tuple[str, Path]]:
    """The ``(rel, path)`` of *items* that may be read: a safe name, a regular
    file (after symlinks), inside *root*. The others are logged once and put in
    *refused* (``shown(rel) -> reason``) for the build's skip counts."""
    dirs: dict[str, str] = {}  # resolved folders of this listing
    for rel, path in items:
        why = file_refusal(root, rel, path, _dirs=dirs)
        if why is None and max_bytes is not None:
            try:
                if os.stat(path).st_size > max_bytes:
                    why = f"larger than {max_bytes} bytes"
            except OSError as exc:
                why = f"unreadable ({exc.strerror})"
        if why:
            log.info("skipped %s: %s", shown(rel), why)
            if refused is not None:
                refused[shown(rel)] = why
            continue
        yield rel, path
