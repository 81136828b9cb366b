"""The corpus: where it is, which files it holds, and its content fingerprint.

Nothing here imports or executes the indexed package. The fingerprint is a
content hash (never mtimes) so that a ``touch`` or a formatter no-op does not
count as a change, and an outside script can recompute it (DESIGN 3).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    "fetch_distribution",
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
    """Download the profile's distribution and unpack it; return its root.

    See :func:`fetch_distribution`; the profile must pin it
    (``distribution = "name==version"``) so the cached root is stable."""
    spec = profile.distribution
    if not spec or "==" not in spec:
        raise CorpusError(
            f"profile {profile.name!r} names no pinned distribution to fetch "
            f'(set distribution = "NAME==VERSION", or run '
            f"`pycsamt-lsp corpus fetch NAME`)"
        )
    return fetch_distribution(spec, dest, package=profile.package)


def _pip(args: list[str], timeout: float) -> tuple[bool, str]:
    import subprocess  # only fetching runs pip (~10 ms of every start)

    cmd = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return False, f"gave up after {timeout:.0f} s"
    if proc.returncode == 0:
        return True, ""
    lines = [x for x in (proc.stderr or proc.stdout).strip().splitlines() if x]
    # pip ends with a generic line; the cause is usually the last ERROR line
    errs = [x for x in lines if x.startswith("ERROR")]
    return False, (errs[-1] if errs else lines[-1] if lines else "?").strip()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def fetch_distribution(
    spec: str,
    dest: Path | None = None,
    *,
    package: str | None = None,
    timeout: float = 300.0,
) -> Path:
    """Fetch any distribution as a corpus: its sdist, else a wheel, else the
    copy installed in this environment; return the unpacked root.

    ``spec`` is ``name`` or ``name==version``. The sdist comes with pip
    (``--no-binary NAME`` only for the package itself, so build tools come
    as wheels); pip builds its metadata, which fails or takes too long for
    packages that need a compiler, so a wheel (``--only-binary :all:``,
    unpacked: the installed layout, ``.so`` and ``.pyi`` included) is next,
    then the installed copy (``package`` or the distribution's
    ``top_level.txt``), copied so the index never writes into site-packages.
    Cached under ``dest`` (default :func:`cache_dir`) as
    ``NAME-VERSION/NAME-VERSION`` with a ``.complete`` mark; a pinned spec
    that is cached is never downloaded again.
    """
    spec = spec.strip()
    name, _, version = (x.strip() for x in spec.partition("=="))
    if not name or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise CorpusError(f"not a distribution name: {spec!r}")
    base = (dest or cache_dir()).expanduser()
    if version:
        target = base / f"{name}-{version}"
        root = target / f"{name}-{version}"
        if (target / ".complete").is_file() and root.is_dir():
            return root
    base.mkdir(parents=True, exist_ok=True)
    tried: list[str] = []
    import shutil  # here: a warm start never fetches (issue 18)
    import tempfile

    with tempfile.TemporaryDirectory(dir=base, prefix=".fetch-") as tmp:
        t = Path(tmp)
        ok, why = _pip(
            ["download", "--no-deps", "--no-binary", name, "-d", str(t / "s"), spec],
            timeout,
        )
        got = _archive(t / "s", (".tar.gz", ".zip")) if ok else None
        if got is not None:
            return _install_unpacked(got, t, base, name, spec, sdist=True)
        tried.append(f"sdist: {why or 'pip downloaded no sdist'}")
        ok, why = _pip(
            [
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                str(t / "w"),
                spec,
            ],
            timeout,
        )
        got = _archive(t / "w", (".whl",)) if ok else None
        if got is not None:
            return _install_unpacked(got, t, base, name, spec, sdist=False)
        tried.append(f"wheel: {why or 'pip downloaded no wheel'}")
        found = _installed_copy(name, version, package)
        if found is not None:
            src, ver = found
            target = base / f"{name}-{ver}"
            root = target / f"{name}-{ver}"
            if target.exists():
                shutil.rmtree(target)
            root.mkdir(parents=True)
            for top in src:
                dst = root / top.name
                if top.is_dir():
                    shutil.copytree(
                        top, dst, ignore=shutil.ignore_patterns("__pycache__")
                    )
                else:
                    shutil.copy2(top, dst)
            (target / ".complete").write_text(f"{name}=={ver}\n", encoding="utf-8")
            return root
        tried.append("installed: not installed in this environment")
    raise CorpusError(f"cannot fetch {spec}: " + "; ".join(tried))


def _archive(folder: Path, suffixes: tuple[str, ...]) -> Path | None:
    if not folder.is_dir():
        return None
    found = sorted(p for p in folder.iterdir() if p.name.endswith(suffixes))
    return found[0] if found else None


def _version_of(archive: Path, name: str) -> str:
    stem = archive.name
    for suf in (".tar.gz", ".zip", ".whl"):
        stem = stem.removesuffix(suf)
    parts = stem.split("-")
    return parts[1] if len(parts) > 1 else "0"


def _install_unpacked(
    archive: Path, tmp: Path, base: Path, name: str, spec: str, *, sdist: bool
) -> Path:
    import shutil

    version = _version_of(archive, name)
    target = base / f"{name}-{version}"
    root = target / f"{name}-{version}"
    unpack = tmp / "unpacked"
    if archive.name.endswith((".zip", ".whl")):
        shutil.unpack_archive(archive, unpack, format="zip")
    else:
        import tarfile  # only fetching unpacks (~15 ms of every start)

        with tarfile.open(archive) as tf:
            tf.extractall(unpack, filter="data")
    if sdist:
        tops = [p for p in unpack.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise CorpusError(f"unexpected sdist layout for {spec}")
        top = tops[0]
    else:
        top = unpack  # a wheel's root is the installed layout
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    top.rename(root)
    (target / ".complete").write_text(
        f"{name}=={version}\n{'sdist' if sdist else 'wheel'}: {archive.name}\n",
        encoding="utf-8",
    )
    return root


def _installed_copy(
    name: str, version: str, package: str | None
) -> tuple[list[Path], str] | None:
    """Top-level files of an installed distribution (read from its
    dist-info, never imported), and its version."""
    from pycsamt_lsp.corpus.installed import site_dirs

    want = _norm(name)
    for sd in site_dirs():
        for info in sorted(sd.glob("*.dist-info")):
            dist, _, ver = info.name.removesuffix(".dist-info").partition("-")
            if _norm(dist) != want or (version and ver != version):
                continue
            tops: list[str] = []
            tl = info / "top_level.txt"
            if tl.is_file():
                tops = tl.read_text(encoding="utf-8").split()
            if package and package not in tops:
                tops.append(package)
            paths = []
            for t in tops:
                for cand in (sd / t, sd / f"{t}.py"):
                    if cand.exists():
                        paths.append(cand)
            if paths:
                return paths, ver
    return None


def discover_root(
    profile: Profile,
    explicit: str | Path | None = None,
    workspace: str | Path | None = None,
) -> Path:
    """Find the corpus root (DESIGN 3).

    Order: the explicit root (a site-packages folder that only points at the
    package, through an editable install's ``.pth``/finder/direct_url.json,
    gives the folder it points at); else the workspace folder when it holds
    the package (flat or ``src/`` layout); else the installed package,
    located with ``importlib.util.find_spec`` (which finds, never imports,
    it) or by reading the site-packages of ``$VIRTUAL_ENV`` and of this
    interpreter; else the fetched cache. A src checkout's root is the
    project folder, not ``src/``.
    """
    # corpus.installed (and its sysconfig) only when reading site-packages
    from pycsamt_lsp.corpus.layout import package_dir

    pkg = profile.package
    if explicit:
        root = Path(explicit).expanduser()
        if not root.is_dir():
            raise CorpusError(f"corpus root {root} does not exist or is not a folder")
        if package_dir(root, pkg) is None and not (root / f"{pkg}.py").is_file():
            from pycsamt_lsp.corpus.installed import find_installed

            pointed = find_installed(pkg, [root])
            if pointed is not None:
                return _project_root(pointed).resolve()
        return root.resolve()
    if workspace:
        ws = Path(workspace).expanduser()
        if package_dir(ws, pkg) is not None:
            return ws.resolve()
    import importlib.util

    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        pkg_dir = Path(next(iter(spec.submodule_search_locations)))
        return _project_root(pkg_dir.parent).resolve()
    from pycsamt_lsp.corpus.installed import find_installed

    found = find_installed(pkg)
    if found is not None:
        return _project_root(found).resolve()
    cached = cache_dir()
    if profile.distribution and "==" in profile.distribution:
        name, version = (s.strip() for s in profile.distribution.split("==", 1))
        root = cached / f"{name}-{version}" / f"{name}-{version}"
        if root.is_dir():
            return root.resolve()
    raise CorpusError(
        f"no corpus found for profile {profile.name!r}: pass --root, open a folder "
        f"that contains {pkg}/ (or src/{pkg}/), install the package, or run "
        f"`pycsamt-lsp corpus fetch`"
    )


def _project_root(folder: Path) -> Path:
    """``…/project/src`` -> ``…/project`` when that is a project folder."""
    if folder.name == "src" and any(
        (folder.parent / f).is_file()
        for f in ("pyproject.toml", "setup.py", "setup.cfg", "PKG-INFO")
    ):
        return folder.parent
    return folder


def _sha256(data: bytes = b"") -> Any:
    """``hashlib.sha256(data)``, hashlib imported on first use: a warm start
    that the freshness record settles hashes nothing (its import, OpenSSL's
    library, was 3-4 ms of a fresh query process; issue 18)."""
    import hashlib

    return hashlib.sha256(data)


def hash_file(path: Path, max_bytes: int) -> tuple[bytes, bytes] | None:
    """Read a file and return ``(data, sha256 digest)``; None when too large.

    A FIFO or device raises :class:`OSError` at once (never blocks)."""
    data = read_regular(path, max_bytes)
    if data is None:
        return None
    return data, _sha256(data).digest()


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
    # every walked path starts with the root's own string: its relative path
    # is a slice (``Path.relative_to`` was a third of a warm start's listing)
    base = os.fspath(root)
    cut = len(base) + (not base.endswith(os.sep))
    for sub in profile.roots:
        top = root / sub
        if not top.is_dir():
            continue
        for p in _walk(top):
            rel = os.fspath(p)[cut:]
            if os.sep != "/":
                rel = rel.replace(os.sep, "/")
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
    h = _sha256()
    for rel, digest in sorted(items):
        h.update(rel.encode("utf-8"))
        h.update(b":")
        h.update(digest)
    return h.hexdigest()
