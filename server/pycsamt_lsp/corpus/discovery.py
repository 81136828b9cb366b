"""The corpus: where it is, which files it holds, and its content fingerprint.

Nothing here imports or executes the indexed package. The fingerprint is a
content hash (never mtimes) so that a ``touch`` or a formatter no-op does not
count as a change, and an outside script can recompute it (DESIGN 3).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.corpus.safety import read_regular, screen
from pycsamt_lsp.errors import CorpusError

__all__ = [
    "CorpusError",
    "FileEntry",
    "SkipReport",
    "bundled_recipes_dir",
    "cache_dir",
    "discover_root",
    "fetch_corpus",
    "fingerprint",
    "hash_file",
    "iter_corpus_files",
    "scan_corpus",
]

log = logging.getLogger(__name__)

#: Prefix under which the recipes shipped with the server appear in the corpus.
BUNDLED_PREFIX = "assistant_recipes"
_SKIP_DIRS = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".pycsamt_rag",
        ".venv",
        "venv",
    }
)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One corpus file: its corpus-relative POSIX path, absolute path, SHA-256."""

    rel: str
    path: Path
    sha256: bytes
    size: int


@dataclass
class SkipReport:
    """Files passed over while scanning, by reason (never fatal)."""

    too_large: list[str]
    unreadable: list[str]

    @property
    def count(self) -> int:
        """How many files were passed over, for every reason."""
        return len(self.too_large) + len(self.unreadable)


def cache_dir() -> Path:
    """``$PYCSAMT_LSP_CACHE`` or ``~/.cache/pycsamt-lsp``."""
    env = os.environ.get("PYCSAMT_LSP_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pycsamt-lsp"


def bundled_recipes_dir() -> Path | None:
    """The recipes shipped with the server (checkout or installed wheel)."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "assistant_recipes", here.parents[1] / "assistant_recipes"):
        if cand.is_dir():
            return cand.resolve()  # the package's entry may be a link to the top folder
    return None


def fetch_corpus(
    profile: Profile, dest: Path | None = None, *, quiet: bool = True
) -> Path:
    """Download the profile's sdist with pip and unpack it; return its root.

    Idempotent and offline once cached: a completed unpack is marked with a
    ``.complete`` file, and nothing is downloaded when it is present.
    """
    spec = profile.distribution
    if not spec or "==" not in spec:
        raise CorpusError(
            f"profile {profile.name!r} names no pinned distribution to fetch"
        )
    name, version = (s.strip() for s in spec.split("==", 1))
    base = (dest or cache_dir()).expanduser()
    target = base / f"{name}-{version}"
    root = target / f"{name}-{version}"
    if (target / ".complete").is_file() and root.is_dir():
        return root
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix=".fetch-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            "-d",
            tmp,
            spec,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            raise CorpusError(f"pip could not download {spec}: {tail[0]}")
        archives = [
            p for p in Path(tmp).iterdir() if p.name.endswith((".tar.gz", ".zip"))
        ]
        if not archives:
            raise CorpusError(f"pip downloaded no sdist for {spec}")
        unpack = Path(tmp) / "unpacked"
        if archives[0].name.endswith(".zip"):
            shutil.unpack_archive(archives[0], unpack)
        else:
            with tarfile.open(archives[0]) as tf:
                tf.extractall(unpack, filter="data")
        tops = [p for p in unpack.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise CorpusError(f"unexpected sdist layout for {spec}")
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        tops[0].rename(root)
        (target / ".complete").write_text(spec + "\n", encoding="utf-8")
    return root


def discover_root(
    profile: Profile,
    explicit: str | Path | None = None,
    workspace: str | Path | None = None,
) -> Path:
    """Find the corpus root (DESIGN 3).

    Order: the explicit root; else the workspace folder when it contains the
    package directory; else the installed package located with
    ``importlib.util.find_spec`` (which finds, never imports, it); else the
    fetched cache.
    """
    if explicit:
        root = Path(explicit).expanduser()
        if not root.is_dir():
            raise CorpusError(f"corpus root {root} does not exist or is not a folder")
        return root.resolve()
    if workspace:
        ws = Path(workspace).expanduser()
        if (ws / profile.package).is_dir():
            return ws.resolve()
    try:
        spec = importlib.util.find_spec(profile.package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        pkg_dir = Path(next(iter(spec.submodule_search_locations)))
        return pkg_dir.parent.resolve()
    cached = cache_dir()
    if profile.distribution and "==" in profile.distribution:
        name, version = (s.strip() for s in profile.distribution.split("==", 1))
        root = cached / f"{name}-{version}" / f"{name}-{version}"
        if root.is_dir():
            return root.resolve()
    raise CorpusError(
        f"no corpus found for profile {profile.name!r}: pass --root, open a folder "
        f"that contains {profile.package}/, install the package, or run "
        f"`pycsamt-lsp corpus fetch`"
    )


def hash_file(path: Path, max_bytes: int) -> tuple[bytes, bytes] | None:
    """Read a file and return ``(data, sha256 digest)``; None when too large.

    A FIFO or device raises :class:`OSError` at once (never blocks)."""
    data = read_regular(path, max_bytes)
    if data is None:
        return None
    return data, hashlib.sha256(data).digest()


def _walk(top: Path) -> Iterator[Path]:
    """Files under *top*, sorted, skipping caches and not descending into
    symlinked dirs; anything that is not a directory is yielded, for
    :func:`~pycsamt_lsp.corpus.safety.screen` to keep or refuse (and count)."""
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except OSError as exc:
        log.warning("cannot list %s: %s", top, exc)
        return
    for entry in entries:
        if entry.name in _SKIP_DIRS:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path))
            else:
                yield Path(entry.path)
        except OSError:
            continue


def iter_corpus_files(
    root: Path, profile: Profile, refused: dict[str, str] | None = None
) -> Iterator[tuple[str, Path]]:
    """``(rel, path)`` of every file the profile indexes, bundled recipes included.

    Recipes shipped with the server are listed under ``assistant_recipes/``
    unless the corpus has its own file of the same relative path. Files that
    are not regular, lead out of the corpus or have unsafe names are left out
    and put in *refused* (``rel -> reason``; :mod:`corpus.safety`).
    """
    own: set[str] = set()
    for rel, p in screen(root, _own_files(root, profile), refused):
        own.add(rel)
        yield rel, p
    bundled = bundled_recipes_dir()
    if bundled is not None:
        for p in _walk(bundled):
            rel = f"{BUNDLED_PREFIX}/{p.relative_to(bundled).as_posix()}"
            if rel not in own and profile.should_index(rel):
                yield from screen(bundled, [(rel, p)], refused)


def _own_files(root: Path, profile: Profile) -> Iterator[tuple[str, Path]]:
    seen: set[str] = set()
    for doc in profile.root_docs:
        p = root / doc
        if p.is_file() and profile.should_index(doc):
            seen.add(doc)
            yield doc, p
    for sub in profile.roots:
        top = root / sub
        if not top.is_dir():
            continue
        for p in _walk(top):
            rel = p.relative_to(root).as_posix()
            if rel not in seen and profile.should_index(rel):
                seen.add(rel)
                yield rel, p


def scan_corpus(
    root: Path, profile: Profile, paths: Iterable[tuple[str, Path]] | None = None
) -> tuple[dict[str, FileEntry], dict[str, bytes], SkipReport]:
    """Hash every corpus file: ``(entries by rel, contents by rel, skips)``.

    Files over the profile's size limit or unreadable are skipped, counted,
    and logged; never fatal.
    """
    entries: dict[str, FileEntry] = {}
    contents: dict[str, bytes] = {}
    skips = SkipReport([], [])
    for rel, path in paths if paths is not None else iter_corpus_files(root, profile):
        try:
            got = hash_file(path, profile.max_file_bytes)
        except OSError as exc:
            log.info("skipped unreadable %s: %s", rel, exc)
            skips.unreadable.append(rel)
            continue
        if got is None:
            log.info("skipped %s: larger than %d bytes", rel, profile.max_file_bytes)
            skips.too_large.append(rel)
            continue
        data, digest = got
        entries[rel] = FileEntry(rel, path, digest, len(data))
        contents[rel] = data
    return entries, contents, skips


def fingerprint(digests: dict[str, bytes] | Iterable[tuple[str, bytes]]) -> str:
    """DESIGN 3: SHA-256 over ``rel || b":" || sha256(bytes)`` sorted by rel."""
    items = digests.items() if isinstance(digests, dict) else digests
    h = hashlib.sha256()
    for rel, digest in sorted(items):
        h.update(rel.encode("utf-8"))
        h.update(b":")
        h.update(digest)
    return h.hexdigest()
