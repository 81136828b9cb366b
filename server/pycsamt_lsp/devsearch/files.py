"""What developer search may open, and the one way it reads a file.

Path policy is structural: a request is confined lexically first (absolute,
``..``, hidden, sensitive, outside the eligible roots) so a refusal never
depends on what exists on disk, then by its resolved target (symlinks).
Every read goes through :func:`_read_bytes` (tests patch it).
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PureWindowsPath

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.errors import DevSearchError

__all__ = [
    "PY_SUFFIXES",
    "TEST_ROLE",
    "TEXT_SUFFIXES",
    "SearchLimits",
    "dir_refusal",
    "eligible_roots",
    "file_refusal",
    "load",
    "now_iso",
    "read_bytes",
    "real_roots",
    "reread",
    "resolve_request",
    "role",
    "root_dir",
    "target_refusal",
]

TEST_ROLE = "test (expected-behaviour example)"


def _words(text: str) -> tuple[str, ...]:
    """Policy tables below read as one line of words each."""
    return tuple(text.split())


# Text types worth searching besides the profile's own suffixes; binary and
# data formats never hold an implementation and would only burn the budget.
TEXT_SUFFIXES = _words(".py .pyi .pyx .pxd .rst .md .txt .toml .cfg .ini .yml .yaml")
PY_SUFFIXES = (".py", ".pyi")
_CACHE_DIRS = frozenset(
    _words("__pycache__ node_modules build dist _build site-packages htmlcov venv")
)
_ASSET_DIRS = frozenset(
    _words("_static static assets images _images generated _generated _autosummary")
)
# Matched on the lowercased file name; a match is never opened, not even to mask it.
_SENSITIVE_GLOBS = _words(
    "*.env *.pem *.key *.p12 *.pfx *.jks *.keystore *.kdbx *.ppk *.gpg id_rsa* "
    "id_dsa* id_ecdsa* id_ed25519* *credential* *secret* *password* htpasswd netrc "
    "pypirc"
)
_GENERATED_GLOBS = ("*.min.js", "*.min.css", "*.map", "*_pb2.py", "*_pb2_grpc.py")


@dataclass(frozen=True)
class SearchLimits:
    """Hard upper bounds of one search; each one is reported when reached.

    The defaults keep an editor request interactive on a large checkout;
    tests inject tiny values (and a fake ``clock``) to exercise every bound.
    """

    max_files: int = 6000
    max_bytes: int = 32 * 1024 * 1024
    scan_seconds: float = 10.0
    enumerate_seconds: float = 5.0
    max_file_bytes: int = 1_000_000
    clock: Callable[[], float] = field(
        default=time.monotonic, repr=False, compare=False
    )


def _read_bytes(path: Path, max_bytes: int) -> bytes | None:
    """The only way file content is read (tests patch it); None when too large."""
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    return None if len(data) > max_bytes else data


def now_iso() -> str:
    """UTC now as ISO 8601 with milliseconds and a ``Z`` (``read_at`` stamps)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_bytes(path: Path, max_bytes: int) -> bytes | None:
    """Read *path* through :func:`_read_bytes` (looked up at call time)."""
    return _read_bytes(path, max_bytes)


# -- path policy ---------------------------------------------------------------


def eligible_roots(profile: Profile) -> list[str]:
    """The profile's devsearch roots (else its corpus roots) as normalised
    relative POSIX paths; any root climbing out with ``..`` is dropped.
    """
    out: list[str] = []
    for r in profile.devsearch_roots or profile.roots:
        parts = [p for p in r.replace("\\", "/").split("/") if p not in ("", ".")]
        if parts and ".." not in parts and "/".join(parts) not in out:
            out.append("/".join(parts))
    return out


def dir_refusal(name: str) -> str | None:
    """Why a folder called *name* is never searched (hidden, cache or build,
    generated assets), or None when it may be.
    """
    low = name.lower()
    if name.startswith("."):
        return "hidden folder"
    if low in _CACHE_DIRS or low.endswith((".egg-info", ".dist-info")):
        return "cache or build folder"
    if low in _ASSET_DIRS:
        return "generated or static assets folder"
    return None


def file_refusal(name: str, profile: Profile) -> str | None:
    """Why a file called *name* is never read (hidden, a sensitive name such
    as a key or credentials file, a generated asset, not a text type of the
    profile), or None when it may be.
    """
    low = name.lower()
    if name.startswith("."):
        return "hidden or environment file"
    if any(fnmatch.fnmatchcase(low, g) for g in _SENSITIVE_GLOBS):
        return "sensitive file name"
    if any(fnmatch.fnmatchcase(low, g) for g in _GENERATED_GLOBS):
        return "generated asset"
    if not low.endswith(tuple(profile.suffixes) + TEXT_SUFFIXES):
        return "not a searchable text file type"
    return None


def role(rel: str, profile: Profile) -> str:
    """``TEST_ROLE``, ``source`` or ``documentation``: how a hit is labelled
    (a test shows expected behaviour, not the implementation).
    """
    if profile.is_test_path(rel):
        return TEST_ROLE
    return "source" if rel.endswith((*PY_SUFFIXES, ".pyx", ".pxd")) else "documentation"


def root_dir(root: Path) -> Path:
    """The corpus root resolved; :class:`DevSearchError` when it cannot be
    resolved or is not a folder.
    """
    try:
        real = Path(root).expanduser().resolve()
    except (OSError, RuntimeError, TypeError) as exc:
        raise DevSearchError(f"corpus root {root} cannot be resolved: {exc}") from None
    if not real.is_dir():
        raise DevSearchError(f"corpus root {root} is not a folder")
    return real


def resolve_request(root: Path, path: object, profile: Profile) -> tuple[str, Path]:
    """Confine a user-supplied corpus-relative *path*; ``(rel, real path)``.

    Lexical checks come first (absolute, ``..``, hidden, sensitive, outside
    the eligible roots) so a refusal never depends on what exists on disk;
    then the resolved path must still lie inside an eligible root, which
    catches symlinks that leave it.
    """
    if not isinstance(path, str) or not path.strip():
        raise DevSearchError("path must be a non-empty corpus-relative string")
    raw = path.strip()
    if "\x00" in raw:
        raise DevSearchError("path contains a NUL byte")
    win = PureWindowsPath(raw)
    if raw.startswith(("/", "\\", "~")) or win.drive or win.is_absolute():
        raise DevSearchError(
            f"refused {raw!r}: absolute paths are not allowed; "
            "give a path relative to the corpus root"
        )
    parts = [p for p in raw.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise DevSearchError(f"refused {raw!r}: '..' path traversal is not allowed")
    rel = "/".join(parts)
    roots = eligible_roots(profile)
    if not any(rel.startswith(r + "/") for r in roots):
        raise DevSearchError(
            f"refused {rel!r}: outside the eligible roots ({', '.join(roots)})"
        )
    for part in parts[:-1]:
        if why := dir_refusal(part):
            raise DevSearchError(f"refused {rel!r}: inside a {why} ({part})")
    if why := file_refusal(parts[-1], profile):
        raise DevSearchError(f"refused {rel!r}: {why}")
    base = root_dir(root)
    try:
        real = (base / rel).resolve()
    except RuntimeError:  # Python < 3.13 raises on a symlink loop (issue 19)
        raise DevSearchError(f"refused {rel!r}: a symlink loop") from None
    if why := target_refusal(real, real_roots(base, roots), profile):
        raise DevSearchError(f"refused {rel!r}: {why}")
    if not real.is_file():
        raise DevSearchError(f"no such file in the corpus: {rel}")
    return rel, real


def real_roots(base: Path, roots: list[str]) -> list[Path]:
    """The eligible roots that exist, resolved, and do not themselves leave *base*."""
    out = []
    for r in roots:
        if (base / r).is_dir() and (real := (base / r).resolve()).is_relative_to(base):
            out.append(real)
    return out


def target_refusal(real: Path, allowed: list[Path], profile: Profile) -> str | None:
    """Why a resolved path may not be read (a symlink can point anywhere)."""
    top = next((a for a in allowed if real.is_relative_to(a)), None)
    if top is None:
        return "it resolves outside the eligible roots (a symlink leaves the corpus)"
    parts = real.relative_to(top).parts
    for part in parts[:-1]:
        if why := dir_refusal(part):
            return f"it resolves into a {why} ({part})"
    if parts and (why := file_refusal(parts[-1], profile)):
        return f"it resolves to a refused file ({why})"
    return None


def load(real: Path, rel: str, max_bytes: int) -> tuple[bytes, str, str]:
    """Read a requested file: ``(bytes, text, read_at)``; refuses binary/oversize."""
    read_at = now_iso()
    try:
        data = read_bytes(real, max_bytes)
    except OSError as exc:
        raise DevSearchError(f"cannot read {rel}: {exc.strerror or exc}") from None
    if data is None:
        raise DevSearchError(f"refused {rel}: larger than {max_bytes:,} bytes")
    if b"\x00" in data:
        raise DevSearchError(f"refused {rel}: binary file")
    return data, data.decode("utf-8", errors="replace"), read_at


def reread(real: Path, max_bytes: int) -> bytes | None:
    """*real* read again after a search, for ``changed_during_search``; None
    when it is gone, unreadable or now too large (counted as changed).
    """
    try:
        return read_bytes(real, max_bytes)
    except OSError:
        return None
