"""Whether a corpus is still exactly what a persisted index was checked against,
from ``stat`` alone (warm start, issue 18).

Why: opening a persisted index proves it follows the corpus's content
(DESIGN 3) by reading and hashing every corpus file: 15-20 MB and 70-100 ms
of a fresh ``pycsamt-lsp query`` process that reads 10 chunks. Once that
content check has passed, this module records what the kernel says about
every path the check depended on: each listed file's ``lstat`` (size,
inode, mtime and ctime in nanoseconds), each walked folder's ``stat`` (a
file added, removed or renamed changes its folder's mtime and ctime) and
whether each profile root and root document exists. A later open that
finds every one of those exactly as recorded knows the listing and every
byte are unchanged without reading them: any write, truncation, rename or
``chmod`` sets the inode's ctime to the current time, and ctime cannot be
set back from user space (``touch -r`` and ``os.utime`` restore mtime, not
ctime). Anything that differs sends the open back to the content check,
which then finds and applies the change as before.

Conservative by construction: no record is written when a recorded time is
within :data:`RACY_NS` of the moment the stats were taken (a change in the
same timestamp tick would be invisible, the "racy git" problem), when the
corpus holds a symbolic link (its target can change without its own stat
changing) or a refused entry, or off POSIX (Windows' ``st_ctime`` is the
creation time). Then every open does the content check, as it always did.
The record names the index ``build_id`` and the profile's
listing rules, so a new index or another profile ignores it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pycsamt_lsp.corpus.discovery import _SKIP_DIRS as SKIP_DIRS
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.storage.atomic import atomic_write_bytes

__all__ = [
    "RACY_NS",
    "RECORD_NAME",
    "StatRecorder",
    "renew_index_keys",
    "still_fresh",
    "trusted_stat",
]

log = logging.getLogger(__name__)

#: The record, in the index folder.
RECORD_NAME = "fresh.json"
#: Version of the record's layout and of the rules below (3: the profile's
#: listing rules recorded as written, not as a SHA-256 of them).
_VERSION = 3
#: A recorded time this close to (or after) the moment the stats were taken
#: could hide a change made in the same timestamp tick: no record then.
RACY_NS = 2_000_000_000


def profile_rules(profile: Profile) -> str:
    """What decides the listing (which files, which folders), as text.

    Recorded and compared as it is (~600 characters for the default
    profile), not as a digest: the comparison is exact either way, and a
    warm start then needs no hashlib (OpenSSL's library: 3-4 ms of a fresh
    query process; issue 18)."""
    rules = (
        profile.name,
        profile.roots,
        profile.root_docs,
        profile.suffixes,
        profile.excludes,
        profile.test_globs,
        profile.max_file_bytes,
        profile.recipe_dir,
        sorted(SKIP_DIRS),
    )
    return repr(rules)


def _file_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def _dir_key(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def _folders(top: str) -> Iterator[tuple[str, os.stat_result]]:
    """*top* and every folder under it the corpus listing walks (the same
    rules as ``corpus.discovery``: skipped names, symlinked folders not
    followed), each with its ``stat``."""
    st = os.stat(top)
    yield top, st
    with os.scandir(top) as it:
        subs = [e.path for e in it if e.name not in SKIP_DIRS and _real_dir(e)]
    for sub in subs:
        yield from _folders(sub)


def _real_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


class StatRecorder:
    """Collects the stats of one content check; :meth:`write` saves them.

    Made *before* the check reads anything (folders are stat'ed here, files
    by :meth:`file` just before each is hashed), so a change made during
    the check shows as a newer ctime on the next open."""

    def __init__(self, root: Path, profile: Profile, bundled: Path | None) -> None:
        self.started_ns = time.time_ns()
        self.ok = os.name == "posix"
        self.root = os.fspath(root)
        self.bundled = os.fspath(bundled) if bundled is not None else None
        self.profile = profile_rules(profile)
        self.paths: dict[str, list[int] | None] = {}
        self.dirs: dict[str, list[int]] = {}
        self.files: dict[str, list[int]] = {}
        if not self.ok:
            return
        try:
            for doc in profile.root_docs:
                p = os.path.join(self.root, doc)
                self.paths[p] = self._lstat(p)
            tops = [os.path.join(self.root, sub) for sub in profile.roots]
            if self.bundled is not None:
                tops.append(self.bundled)
            for top in tops:
                self.paths[top] = self._lstat(top)
                if self.paths[top] is not None:
                    for folder, st in _folders(top):
                        self.dirs[folder] = _dir_key(st)
        except OSError as exc:
            log.debug("no freshness record: %s", exc)
            self.ok = False

    def _lstat(self, path: str) -> list[int] | None:
        """``[kind, ...key]`` of *path* (0 file, 1 folder), None when absent;
        a link makes the record unusable."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            self.ok = False
            return None
        if stat.S_ISDIR(st.st_mode):
            return [1, *_dir_key(st)]
        return [0, *_file_key(st)]

    def file(self, path: Path) -> None:
        """Record the listed file *path* (call before reading it)."""
        if not self.ok:
            return
        try:
            st = os.lstat(path)
        except OSError:
            self.ok = False
            return
        if not stat.S_ISREG(st.st_mode):
            self.ok = False
            return
        self.files[os.fspath(path)] = _file_key(st)

    def write(
        self,
        index_dir: Path,
        build_id: str,
        index_files: dict[str, os.stat_result],
    ) -> bool:
        """Save the record for the index *build_id*; *index_files* are the
        stats (taken before the load read them) of the index files this
        process checked (``chunks.jsonl``'s SHA-256, ``index.npz``'s CRCs),
        by name. False when the record would not be safe (see the module
        doc) or cannot be written."""
        if not self.ok or not build_id:
            return False
        limit = self.started_ns - RACY_NS
        times = [k[-2:] for k in (*self.dirs.values(), *self.files.values())]
        times += [k[-2:] for k in self.paths.values() if k is not None]
        times += [[st.st_mtime_ns, st.st_ctime_ns] for st in index_files.values()]
        if any(t >= limit for pair in times for t in pair):
            log.debug("no freshness record: a path changed in the last 2 s")
            return False
        record = {
            "version": _VERSION,
            "build_id": build_id,
            "profile": self.profile,
            "root": self.root,
            "bundled": self.bundled,
            "index": {name: _file_key(st) for name, st in index_files.items()},
            "paths": self.paths,
            "dirs": self.dirs,
            "files": self.files,
        }
        try:
            atomic_write_bytes(
                index_dir / RECORD_NAME, json.dumps(record).encode("utf-8")
            )
        except OSError as exc:
            log.debug("freshness record not written: %s", exc)
            return False
        return True


def renew_index_keys(
    index_dir: Path, record: dict[str, Any], index_files: dict[str, os.stat_result]
) -> bool:
    """Record *index_files*' stats in *record* (whose corpus entries an open
    has just found unchanged by ``stat``) when they differ from those it
    holds; True when the record was rewritten.

    Why: a copy of the index folder (``cp -a``, a restore), or a rewrite of
    its files with the same bytes, gives them new inodes and ctimes while
    the corpus keeps its stats. The open then verifies them by content
    (``chunks.jsonl``'s SHA-256, ``index.npz``'s CRCs: about a third of a
    warm start) and, since the corpus was found fresh by ``stat``, wrote
    no record: every later open verified them again. The load that has
    just succeeded checked these very files (*index_files* were taken
    before it read them), so they are recorded for the next open, unless
    one was written in the racy window (see the module doc)."""
    want = {name: _file_key(st) for name, st in index_files.items()}
    if os.name != "posix" or not want or record.get("index") == want:
        return False
    limit = time.time_ns() - RACY_NS
    if any(
        t >= limit
        for st in index_files.values()
        for t in (st.st_mtime_ns, st.st_ctime_ns)
    ):
        return False
    try:
        atomic_write_bytes(
            index_dir / RECORD_NAME,
            json.dumps({**record, "index": want}).encode("utf-8"),
        )
    except OSError as exc:
        log.debug("freshness record not renewed: %s", exc)
        return False
    return True


def read_record(index_dir: Path) -> dict[str, Any] | None:
    """The record in *index_dir*, or None (missing, unreadable, other layout)."""
    try:
        raw = (index_dir / RECORD_NAME).read_bytes()
        rec = json.loads(raw)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("version") != _VERSION:
        return None
    return rec


def trusted_stat(record: dict[str, Any] | None, build_id: str, path: Path) -> bool:
    """Whether *path* (an index file: ``chunks.jsonl``, ``index.npz``) is the
    very file that was checked when *record* was written for the index
    *build_id*."""
    if record is None or os.name != "posix" or record.get("build_id") != build_id:
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    files = record.get("index")
    return isinstance(files, dict) and files.get(path.name) == _file_key(st)


def still_fresh(
    record: dict[str, Any] | None,
    build_id: str,
    root: Path,
    profile: Profile,
    bundled: Path | None,
) -> bool:
    """Whether every path *record* holds is exactly as recorded (so the corpus
    listing and every file's bytes are those the index was checked against)."""
    if (
        record is None
        or os.name != "posix"
        or record.get("build_id") != build_id
        or record.get("root") != os.fspath(root)
        or record.get("bundled") != (os.fspath(bundled) if bundled else None)
        or record.get("profile") != profile_rules(profile)
    ):
        return False
    try:
        for path, want in record["paths"].items():
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                if want is not None:
                    return False
                continue
            if want is None or stat.S_ISLNK(st.st_mode):
                return False
            if want != [1, *_dir_key(st)] and want != [0, *_file_key(st)]:
                return False
            if want[0] == 1 and not stat.S_ISDIR(st.st_mode):
                return False
        for path, want in record["dirs"].items():
            st = os.stat(path)
            if not stat.S_ISDIR(st.st_mode) or want != _dir_key(st):
                return False
        lstat, isreg = os.lstat, stat.S_ISREG
        for path, want in record["files"].items():
            st = lstat(path)
            if not isreg(st.st_mode) or want != [
                st.st_size,
                st.st_ino,
                st.st_mtime_ns,
                st.st_ctime_ns,
            ]:
                return False
    except (OSError, KeyError, TypeError, AttributeError):
        return False
    return True
