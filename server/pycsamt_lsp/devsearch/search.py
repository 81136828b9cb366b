"""Live, bounded developer source search with evidence (issue 6).

Why a second search next to the science index: implementation questions
("where is ``_dispatch_code`` implemented?") need the checkout as it is *now*,
line numbers that are right, and proof of what was read. The BM25 index ranks
chunks for conceptual questions and changes only on a rebuild; this module
reads the eligible roots on every call (no index, so a saved edit is found at
once) and attaches evidence to every hit: the file's SHA-256, when it was
read, the checkout revision, the package version, and flags when the two
disagree or the file changed while it was being read.

Safety is structural rather than best effort: nothing is imported or
executed (files are read as bytes, Python is parsed with :mod:`ast` only);
every path is resolved and confined to the eligible roots; hidden folders,
caches, generated assets and sensitive file names are never opened; and
credential assignments are masked in every line of text handed back.
Every bound (files, bytes, time) is reported when it is reached, and an empty
answer says what was searched instead of guessing.
"""

from __future__ import annotations

import ast
import bisect
import configparser
import fnmatch
import hashlib
import math
import os
import re
import time
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PureWindowsPath

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.devsearch.git import git_dirs, read_head
from pycsamt_lsp.errors import DevSearchError

__all__ = [
    "MAX_RESULTS",
    "TEST_ROLE",
    "DevSearchError",
    "SearchLimits",
    "inspect_symbol",
    "mask_secrets",
    "read_checkout",
    "read_source",
    "search_source",
]

MAX_RESULTS = 6
READ_MAX_LINES = 80
READ_MAX_CHARS = 4000
MAX_QUERY_CHARS = 1000
TEST_ROLE = "test (expected-behaviour example)"


def _words(text: str) -> tuple[str, ...]:
    """Policy tables below read as one line of words each."""
    return tuple(text.split())


# Text types worth searching besides the profile's own suffixes; binary and
# data formats never hold an implementation and would only burn the budget.
_TEXT_SUFFIXES = _words(".py .pyi .pyx .pxd .rst .md .txt .toml .cfg .ini .yml .yaml")
_PY_SUFFIXES = (".py", ".pyi")
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


def _parse(source: str | bytes) -> ast.Module:
    """``ast.parse`` without the SyntaxWarnings of someone else's source."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- secret masking ----------------------------------------------------------

_SECRET_NAME = (
    r"(?:api[_-]?key|apikey|secret|passw(?:or)?d|pwd|tokens?|credentials?"
    r"|private[_-]?key|access[_-]?key|auth|authorization)"
)
_ASSIGN = re.compile(
    r"(?P<name>(?P<q>[\"']?)\b[A-Za-z0-9_.-]*?"
    + _SECRET_NAME
    + r"(?:[_-][A-Za-z0-9_]*)?\b(?P=q))"
    r"(?P<sep>[ \t]*(?::(?!:)|=>|=(?!=))[ \t]*)"
    r"(?P<val>[rRbBfFuU]{0,2}(?P<vq>\"\"\"|'''|\"|')(?:(?!(?P=vq)).)*(?P=vq)?"
    r"|[^\s,;)\]}#]+)",
    re.I,
)
_KEEP_BARE = frozenset(
    {"none", "null", "nil", "true", "false", "...", "undefined", "~"}
)
_VALUE_PATTERNS = (
    (re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{8,}"), "sk-***"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "***"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 ***"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), "***"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "***"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), "***"),
    (re.compile(r"(?<=://)([^/\s:@]+):[^/\s@]+@"), r"\1:***@"),
)
_KEY_BLOCK = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


def _mask_value(m: re.Match[str], python: bool) -> str:
    val = m.group("val")
    if m.group("vq"):
        inner = val.lstrip("rRbBfFuU")[len(m.group("vq")) :]
        if inner in ("", m.group("vq")):
            return m.group(0)  # an empty string literal hides nothing
        return f'{m.group("name")}{m.group("sep")}"***"'
    if val.lower() in _KEEP_BARE or re.fullmatch(r"[-+]?\d[\d_.]*", val):
        return m.group(0)
    if val.lower() in ("bearer", "basic"):
        return m.group(0)  # an auth scheme: the credential after it is masked below
    if python and re.match(r"[A-Za-z_(\[{]", val):
        return m.group(0)  # a variable, call or annotation in code, not a literal
    return f"{m.group('name')}{m.group('sep')}***"


def mask_secrets(text: str, *, python: bool = True) -> tuple[str, int]:
    """Mask credential values in *text*; return ``(masked text, lines masked)``.

    The name is kept (so the reader still sees *that* a key is set there) and
    the value becomes ``***``. In Python, a bare identifier or call after the
    name is code (``api_key=api_key``, ``token: str``) and is kept; in config
    and docs any non-trivial value is masked.
    """
    out, masked, in_key = [], 0, False
    for line in text.split("\n"):
        new = line
        if in_key or _KEY_BLOCK.search(line):
            in_key = "-----END" not in line
            new = "*** (private key material masked)"
        else:
            new = _ASSIGN.sub(lambda m: _mask_value(m, python), new)
            for pat, rep in _VALUE_PATTERNS:
                new = pat.sub(rep, new)
        masked += new != line
        out.append(new)
    return "\n".join(out), masked


# -- checkout evidence: git revision and package version -----------------------

_VERSION_TAG = re.compile(r"(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)$")


def _norm_version(v: str) -> str:
    return v.strip().lower().removeprefix("v")


def _static_version_literal(path: Path) -> str | None:
    """A module-level ``__version__ = "x"`` literal, parsed, never executed.

    Only unconditional top-level assignments count: a fallback inside
    ``try``/``except`` (pyCSAMT's ``"0+unknown"``) is not a declaration.
    """
    try:
        tree = _parse(path.read_bytes()[:1_000_000])
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, ast.AnnAssign) else [])
        )
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        value = getattr(node, "value", None)
        if (
            "__version__" in names
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            return value.value
    return None


def _metadata(path: Path) -> dict[str, str]:
    """``Name``/``Version`` headers of a PKG-INFO or METADATA file."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                if key in ("Name", "Version") and value.strip():
                    out[key.lower()] = value.strip()
    except OSError:
        pass
    return out


def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared_versions(root: Path, profile: Profile) -> list[tuple[str, str]]:
    """Every static version declaration of the corpus, most authoritative first.

    Metadata that names another project (the corpus root is some other
    checkout holding the package) is not this package's version and is skipped.
    """
    names = {_norm_name(profile.package)}
    if profile.distribution:
        names.add(_norm_name(profile.distribution.split("==")[0]))
    found: list[tuple[str, str]] = []

    def add(source: str, name: str | None, version: object) -> None:
        ours = name is None or _norm_name(name) in names
        if ours and isinstance(version, str) and version.strip():
            found.append((source, version.strip()))

    meta = _metadata(root / "PKG-INFO")
    add("PKG-INFO", meta.get("name", ""), meta.get("version"))
    for path in sorted(root.glob("*.dist-info/METADATA")):
        meta = _metadata(path)
        if _norm_name(meta.get("name", "")) in names:
            add(path.relative_to(root).as_posix(), None, meta.get("version"))
            break
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
        project = tomllib.loads(text).get("project", {})
        add(
            "pyproject.toml [project] version",
            project.get("name", ""),
            project.get("version"),
        )
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        pass
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(root / "setup.cfg", encoding="utf-8")
        v = cfg.get("metadata", "version", fallback="")
        if not v.strip().startswith(("attr:", "file:")):
            add(
                "setup.cfg [metadata] version",
                cfg.get("metadata", "name", fallback=""),
                v,
            )
    except (configparser.Error, UnicodeDecodeError):
        pass
    for name in ("_version.py", "__version__.py", "version.py", "__init__.py"):
        rel = f"{profile.package}/{name}"
        if (root / rel).is_file() and (v := _static_version_literal(root / rel)):
            add(f"{rel} __version__", None, v)
            break
    return found


def read_checkout(root: Path, profile: Profile) -> dict:
    """Revision and version evidence for the corpus at *root* (read once per call).

    ``version_mismatch`` is raised when two static declarations disagree
    (e.g. PKG-INFO vs a ``__version__`` literal) or HEAD carries version tags
    and none of them is the package version: then the code being read is not
    the release its metadata names.
    """
    info = read_head(git_dirs(root))
    declared = _declared_versions(root, profile)
    version, source = (
        declared[0][1] if declared else None,
        declared[0][0] if declared else None,
    )
    notes, mismatch = [], False
    for src, v in declared[1:]:
        if _norm_version(v) != _norm_version(version):
            mismatch = True
            notes.append(f"{source} says {version} but {src} says {v}")
    tag_versions = {
        t: m.group(1) for t in info["tags_at_head"] if (m := _VERSION_TAG.search(t))
    }
    if (
        tag_versions
        and version
        and _norm_version(version)
        not in {_norm_version(v) for v in tag_versions.values()}
    ):
        mismatch = True
        notes.append(
            f"HEAD is tagged {', '.join(sorted(tag_versions))} but {source} "
            f"says {version}"
        )
    elif info["revision"] and not tag_versions:
        notes.append(
            "HEAD carries no version tag, so the checkout could not be "
            "matched to a release"
        )
    if not declared:
        notes.append(
            "no version metadata found (PKG-INFO, dist-info METADATA, "
            "pyproject.toml, setup.cfg, __version__ literal)"
        )
    return {
        **info,
        "package_version": version,
        "version_source": source,
        "version_mismatch": mismatch,
        "version_note": "; ".join(notes) or None,
    }


def _evidence(data: bytes, read_at: str, checkout: dict, after: bytes | None) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    changed = after is None or hashlib.sha256(after).hexdigest() != digest
    flags = [
        f
        for f, on in (
            ("version_mismatch", checkout["version_mismatch"]),
            ("changed_during_search", changed),
        )
        if on
    ]
    return {
        "sha256": digest,
        "size_bytes": len(data),
        "read_at": read_at,
        "revision": checkout["revision"],
        "revision_source": checkout["revision_source"],
        "package_version": checkout["package_version"],
        "version_source": checkout["version_source"],
        "version_mismatch": checkout["version_mismatch"],
        "changed_during_search": changed,
        "flags": flags,
    }


# -- path policy ---------------------------------------------------------------


def _eligible_roots(profile: Profile) -> list[str]:
    out: list[str] = []
    for r in profile.devsearch_roots or profile.roots:
        parts = [p for p in r.replace("\\", "/").split("/") if p not in ("", ".")]
        if parts and ".." not in parts and "/".join(parts) not in out:
            out.append("/".join(parts))
    return out


def _dir_refusal(name: str) -> str | None:
    low = name.lower()
    if name.startswith("."):
        return "hidden folder"
    if low in _CACHE_DIRS or low.endswith((".egg-info", ".dist-info")):
        return "cache or build folder"
    if low in _ASSET_DIRS:
        return "generated or static assets folder"
    return None


def _file_refusal(name: str, profile: Profile) -> str | None:
    low = name.lower()
    if name.startswith("."):
        return "hidden or environment file"
    if any(fnmatch.fnmatchcase(low, g) for g in _SENSITIVE_GLOBS):
        return "sensitive file name"
    if any(fnmatch.fnmatchcase(low, g) for g in _GENERATED_GLOBS):
        return "generated asset"
    if not low.endswith(tuple(profile.suffixes) + _TEXT_SUFFIXES):
        return "not a searchable text file type"
    return None


def _role(rel: str, profile: Profile) -> str:
    if profile.is_test_path(rel):
        return TEST_ROLE
    return (
        "source" if rel.endswith((*_PY_SUFFIXES, ".pyx", ".pxd")) else "documentation"
    )


def _root_dir(root: Path) -> Path:
    try:
        real = Path(root).expanduser().resolve()
    except (OSError, RuntimeError, TypeError) as exc:
        raise DevSearchError(f"corpus root {root} cannot be resolved: {exc}") from None
    if not real.is_dir():
        raise DevSearchError(f"corpus root {root} is not a folder")
    return real


def _resolve_request(root: Path, path: object, profile: Profile) -> tuple[str, Path]:
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
    roots = _eligible_roots(profile)
    if not any(rel.startswith(r + "/") for r in roots):
        raise DevSearchError(
            f"refused {rel!r}: outside the eligible roots ({', '.join(roots)})"
        )
    for part in parts[:-1]:
        if why := _dir_refusal(part):
            raise DevSearchError(f"refused {rel!r}: inside a {why} ({part})")
    if why := _file_refusal(parts[-1], profile):
        raise DevSearchError(f"refused {rel!r}: {why}")
    base = _root_dir(root)
    real = (base / rel).resolve()
    if why := _target_refusal(real, _real_roots(base, roots), profile):
        raise DevSearchError(f"refused {rel!r}: {why}")
    if not real.is_file():
        raise DevSearchError(f"no such file in the corpus: {rel}")
    return rel, real


def _real_roots(base: Path, roots: list[str]) -> list[Path]:
    """The eligible roots that exist, resolved, and do not themselves leave *base*."""
    out = []
    for r in roots:
        if (base / r).is_dir() and (real := (base / r).resolve()).is_relative_to(base):
            out.append(real)
    return out


def _target_refusal(real: Path, allowed: list[Path], profile: Profile) -> str | None:
    """Why a resolved path may not be read (a symlink can point anywhere)."""
    top = next((a for a in allowed if real.is_relative_to(a)), None)
    if top is None:
        return "it resolves outside the eligible roots (a symlink leaves the corpus)"
    parts = real.relative_to(top).parts
    for part in parts[:-1]:
        if why := _dir_refusal(part):
            return f"it resolves into a {why} ({part})"
    if parts and (why := _file_refusal(parts[-1], profile)):
        return f"it resolves to a refused file ({why})"
    return None


def _load(real: Path, rel: str, max_bytes: int) -> tuple[bytes, str, str]:
    """Read a requested file: ``(bytes, text, read_at)``; refuses binary/oversize."""
    read_at = _now_iso()
    try:
        data = _read_bytes(real, max_bytes)
    except OSError as exc:
        raise DevSearchError(f"cannot read {rel}: {exc.strerror or exc}") from None
    if data is None:
        raise DevSearchError(f"refused {rel}: larger than {max_bytes:,} bytes")
    if b"\x00" in data:
        raise DevSearchError(f"refused {rel}: binary file")
    return data, data.decode("utf-8", errors="replace"), read_at


def _reread(real: Path, max_bytes: int) -> bytes | None:
    try:
        return _read_bytes(real, max_bytes)
    except OSError:
        return None


# -- static symbols --------------------------------------------------------------


@dataclass(frozen=True)
class _Sym:
    name: str  # qualified: Cls.method
    kind: str
    start: int  # first decorator line
    line: int  # the def/class line
    end: int
    sig_end: int
    node: ast.AST


def _py_symbols(text: str) -> list[_Sym] | None:
    """Every def/class with its span, from :mod:`ast`; None when it does not parse."""
    try:
        tree = _parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: list[_Sym] = []

    def walk(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = f"{prefix}.{child.name}" if prefix else child.name
                is_cls = isinstance(child, ast.ClassDef)
                kind = "class" if is_cls else ("method" if in_class else "function")
                if isinstance(child, ast.AsyncFunctionDef):
                    kind = f"async {kind}"
                start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                body0 = child.body[0].lineno if child.body else child.lineno
                sig_end = body0 - 1 if body0 > child.lineno else child.lineno
                out.append(
                    _Sym(
                        q,
                        kind,
                        start,
                        child.lineno,
                        child.end_lineno or child.lineno,
                        sig_end,
                        child,
                    )
                )
                walk(child, q, is_cls)
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                walk(child, prefix, in_class)

    walk(tree, "", False)
    return out


_HEADING_MD = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`*+#:.])\1{2,}\s*$")
_DEF_LINE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)")


def _enclosing(
    rel: str, lines: list[str], syms: list[_Sym] | None, line: int
) -> dict | None:
    """The innermost def/class (code) or section heading (docs) around *line*."""
    if syms is not None:
        best = None
        for s in syms:
            if s.start <= line <= s.end and (best is None or s.start >= best.start):
                best = s
        return best and {
            "name": best.name,
            "kind": best.kind,
            "line_start": best.line,
            "line_end": best.end,
        }
    if rel.endswith(_PY_SUFFIXES):  # unparsable Python: indentation scan
        names, limit = [], None
        for j in range(line - 1, -1, -1):
            text = lines[j]
            if not text.strip():
                continue
            indent = len(text) - len(text.lstrip())
            m = _DEF_LINE.match(text)
            if m and (limit is None or indent < limit):
                names.insert(0, m.group(3))
                limit = indent
            elif limit is None or indent < limit:
                limit = indent
            if limit == 0:
                break
        return (
            {
                "name": ".".join(names),
                "kind": "definition",
                "line_start": None,
                "line_end": None,
            }
            if names
            else None
        )
    for j in range(min(line, len(lines)) - 1, -1, -1):
        if m := _HEADING_MD.match(lines[j]):
            return {
                "name": m.group(1),
                "kind": "section",
                "line_start": j + 1,
                "line_end": None,
            }
        if (
            j + 1 < len(lines)
            and lines[j].strip()
            and _RST_UNDERLINE.match(lines[j + 1])
            and len(lines[j + 1].strip()) >= len(lines[j].strip())
        ):
            return {
                "name": lines[j].strip(),
                "kind": "section",
                "line_start": j + 1,
                "line_end": None,
            }
    return None


# -- query model -------------------------------------------------------------------

# Grammar never names code; the developer words below usually frame the
# question ("where is X implemented?") but are searched when nothing else is.
_GRAMMAR = frozenset(
    _words(
        "a an and are as at be by can could do does did for from has have how i in "
        "into is it its me my of on or please should tell the their there this to "
        "was were what when where which who why will with would you your"
    )
)
_STOP = _GRAMMAR | frozenset(
    _words(
        "find get show see look implemented implementation implements defined define "
        "defines definition located location lives source code function functions "
        "method methods class classes file files line lines module modules called "
        "call calls use used using handled handle happens test tests unit example "
        "examples"
    )
)
_QTOKEN = re.compile(
    r"`([^`]+)`|([A-Za-z0-9_][A-Za-z0-9_./-]*[A-Za-z0-9_]|[A-Za-z0-9_])"
)
_W_IDENT, _W_WORD, _W_PART = 3.0, 1.0, 0.35
_DEF_BONUS, _ASSIGN_BONUS, _PATH_BONUS, _HINT_BONUS = 10.0, 4.0, 1.5, 8.0
_K1, _B = 1.2, 0.5


def _split_ident(name: str) -> list[str]:
    return [
        p.lower()
        for p in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)
    ]


def _is_ident(tok: str) -> bool:
    """snake_case, _private or camelCase: a name someone typed from code."""
    return "_" in tok or bool(re.search(r"[a-z0-9][A-Z]", tok))


# Every pattern starts with a literal so the regex engine can jump between
# candidate positions (20-50x faster than a leading look-behind or a scoped
# (?i:...) group); boundary checks are look-behinds placed *after* it.
# Whole identifiers and snake_case components are matched on the lowercased
# text; camelCase components need the original case.


def _ident_patterns(
    first: str, rest: str = ""
) -> tuple[tuple[re.Pattern[str], bool], ...]:
    """A whole identifier (``first`` + regex ``rest``), any case."""
    f = re.escape(first)
    return ((re.compile(rf"{f}(?<![a-z0-9_]{f}){rest}(?![a-z0-9_])"), True),)


def _component_patterns(
    w: str, plural: bool
) -> tuple[tuple[re.Pattern[str], bool], ...]:
    """*w* as a word or as a component of a snake_case / camelCase name."""
    e, s = re.escape(w), "(?:e?s)?" if plural else ""
    pats = [(rf"{e}(?<![a-z0-9]{e}){s}(?![a-z])", True)]
    if w[:1].isalpha():
        cap = re.escape(w[:1].upper() + w[1:])
        pats += [
            (rf"{cap}(?<=[a-z0-9]{cap}){s}(?![a-z])", False),  # inner: staticShift
            (rf"{cap}(?<![A-Za-z0-9]{cap})(?=[A-Z])", False),  # leading: ShiftAgent
            (rf"{e}(?<![A-Za-z0-9]{e})(?=[A-Z])", False),  # leading: shiftAgent
        ]
    return tuple((re.compile(p), on_low) for p, on_low in pats)


@dataclass(frozen=True)
class _Term:
    low: str  # the key
    probe: str  # a lowercase literal every match contains (cheap pre-filter)
    kind: str  # identifier | word | part
    weight: float
    patterns: tuple[tuple[re.Pattern[str], bool], ...]  # (pattern, on lowercased text)

    def matches(self, text: str, low: str) -> list[tuple[int, bool]]:
        """``(offset, offset is in low)`` of every match."""
        return [
            (m.start(), on_low)
            for pat, on_low in self.patterns
            for m in pat.finditer(low if on_low else text)
        ]


@dataclass(frozen=True)
class _Target:
    """A name whose definition outranks any mention of it."""

    name: str
    qualifier: str | None
    term: int  # index of its term (for idf and the pre-filter)
    strength: float  # 1 for a named identifier, 0.5 for a plain word
    leaf: re.Pattern[str]  # full-matches a def/class name
    defs: tuple[re.Pattern[str], ...]  # def/class NAME, on lowercased text
    assign: re.Pattern[str]  # NAME = at column 0, on lowercased text

    def find(self, low: str) -> tuple[str, int] | None:
        """``("def" | "assign", offset)`` of the first definition in *low*."""
        best = None
        for pat in self.defs:
            for m in pat.finditer(low):
                start = low.rfind("\n", 0, m.start()) + 1
                if _DEF_PREFIX.fullmatch(low, start, m.start()):
                    best = m.start() if best is None else min(best, m.start())
                    break
        if best is not None:
            return "def", best
        m = self.assign.search(low)
        return ("assign", m.start()) if m else None


_DEF_PREFIX = re.compile(r"[ \t]*(?:async[ \t]+)?")


@dataclass
class _Query:
    terms: list[_Term] = field(default_factory=list)
    targets: list[_Target] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def add(self, low: str, kind: str, rest: str = "", label: str = "") -> int:
        """Add a term (once); ``rest`` continues an n-gram after its first word."""
        key = label or low
        for i, t in enumerate(self.terms):
            if t.low == key:
                return i  # identifiers are added before words, words before parts
        weight = {"identifier": _W_IDENT, "word": _W_WORD, "part": _W_PART}[kind]
        pats = (
            _ident_patterns(low, rest)
            if kind == "identifier"
            else _component_patterns(low, kind == "word")
        )
        self.terms.append(_Term(key, low, kind, weight, pats))
        return len(self.terms) - 1

    def add_target(
        self, name: str, qualifier: str | None = None, kind: str = "identifier"
    ) -> None:
        """A def target: an identifier, a plain word, or an n-gram ``a_b_c``."""
        words = name.lower().split("_") if kind == "ngram" else [name.lower()]
        first = words[0]
        rest = "".join(f"_?{re.escape(w)}" for w in words[1:])
        core = re.escape(first) + rest
        if any(t.leaf.pattern == core for t in self.targets):
            return
        label = "_".join(words)
        idx = self.add(first, "word" if kind == "word" else "identifier", rest, label)
        f = re.escape(first)
        tail = rf"{rest}(?![a-z0-9_])"
        self.targets.append(
            _Target(
                name if kind != "ngram" else label,
                qualifier,
                idx,
                0.5 if kind == "word" else 1.0,
                re.compile(core, re.I),
                tuple(re.compile(rf"{kw}[ \t]+{f}{tail}") for kw in ("def", "class")),
                re.compile(rf"{f}(?<![^\n]{f}){rest}[ \t]*(?::[^=\n]*)?=(?!=)"),
            )
        )


def _query_tokens(query: str) -> list[tuple[str, bool]]:
    """``(token, quoted)``: backticked text is code even when it looks like a word."""
    out = []
    for m in _QTOKEN.finditer(query):
        if m.group(1) is not None:
            out.extend((t.strip("."), True) for t in re.findall(r"[\w./]+", m.group(1)))
        else:
            out.append((m.group(2).strip("."), False))
    return [(t, q) for t, q in out if t]


def _parse_query(query: str, profile: Profile) -> _Query:
    """Identifiers (def targets), plain words, identifier parts and path hints."""
    q = _Query()
    words: list[str] = []
    parts: list[str] = []
    for tok, quoted in _query_tokens(query):
        if "/" in tok or tok.endswith((".py", ".md", ".rst")):
            hint = re.sub(r"\.(py|pyi|md|rst)$", "", tok.lower()).strip("/")
            if hint:
                q.hints.append(hint)
            continue
        comps = [c for c in tok.split(".") if c]
        if len(comps) > 1:  # pkg.module.Class.method or Class.method
            if comps[0] == profile.package:
                q.hints.append("/".join(comps))
            comps = [c for c in comps if c != profile.package and len(c) > 1]
            for i, c in enumerate(comps):
                if i == len(comps) - 1:
                    q.add_target(c, comps[i - 1] if i else None)
                elif _is_ident(c) or c[:1].isupper():
                    q.add(c.lower(), "identifier")
                else:
                    words.append(c.lower())
                parts.extend(_split_ident(c))
        elif quoted or _is_ident(tok):
            q.add_target(tok)
            parts.extend(_split_ident(tok))
        else:
            words.append(tok.lower())
    stop = _STOP | {profile.package.lower()}
    kept = [w for w in words if w not in stop and len(w) > 1]
    for n in (3, 2):  # "static shift agent" may name StaticShiftAgent
        for i in range(len(kept) - n + 1):
            run = kept[i : i + n]
            q.add_target("_".join(run), kind="ngram")
    for w in kept:  # a plain word may still be a definition's exact name
        q.add_target(w, kind="word")
    for p in parts:
        if p not in stop and len(p) > 1:
            q.add(p, "part")
    if not q.terms and not q.hints:  # only framing words: search those, not grammar
        for w in words:
            if w not in _GRAMMAR and len(w) > 1:
                q.add(w, "word")
    return q


# -- search --------------------------------------------------------------------------


@dataclass
class _Cand:
    rel: str
    path: Path
    size: int


@dataclass
class _Hit:
    cand: _Cand
    data: bytes
    text: str
    read_at: str
    tf: dict[int, int]  # term index -> matches
    defs: dict[int, tuple[str, int, bool]]  # target -> (kind, offset, in its class)
    score: float = 0.0


def _limit_hit(name: str, bound: object, message: str) -> dict:
    return {"limit": name, "bound": bound, "message": message}


def _enumerate(
    base: Path,
    roots: list[str],
    profile: Profile,
    include_tests: bool,
    limits: SearchLimits,
    counts: dict,
    hits: list[dict],
) -> list[_Cand]:
    """Eligible files in a deterministic (sorted, depth-first) order, bounded."""
    t0 = limits.clock()
    out: list[_Cand] = []
    real_roots = []
    for r in roots:
        top = base / r
        if top.is_dir() and (real := top.resolve()).is_relative_to(base):
            real_roots.append((r, real))
    allowed = [real for _, real in real_roots]
    seen: set[str] = set()
    for top_rel, top in real_roots:
        stack = [(top, top_rel)]
        while stack:
            d, drel = stack.pop()
            try:
                with os.scandir(d) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                counts["files_unreadable"] += 1
                continue
            subdirs = []
            for e in entries:
                if limits.clock() - t0 > limits.enumerate_seconds:
                    hits.append(
                        _limit_hit(
                            "enumerate_seconds",
                            limits.enumerate_seconds,
                            f"listing files stopped after the {limits.enumerate_seconds:g} s "
                            f"enumeration budget; files not yet listed were not searched",
                        )
                    )
                    return out
                rel = f"{drel}/{e.name}"
                try:
                    if e.is_symlink():  # symlinked folders are never followed
                        real = Path(e.path).resolve()
                        if real.is_dir() or _target_refusal(real, allowed, profile):
                            counts["files_excluded"] += 1
                            continue
                    elif e.is_dir():
                        if _dir_refusal(e.name):
                            counts["dirs_excluded"] += 1
                        else:
                            subdirs.append((Path(e.path), rel))
                        continue
                    elif e.is_file():
                        real = Path(e.path)
                    else:
                        continue
                    if _file_refusal(e.name, profile):
                        counts["files_excluded"] += 1
                        continue
                    if profile.is_test_path(rel) and not include_tests:
                        counts["tests_excluded"] += 1
                        continue
                    if rel in seen:
                        continue
                    if len(out) >= limits.max_files:
                        hits.append(
                            _limit_hit(
                                "max_files",
                                limits.max_files,
                                f"stopped at {limits.max_files:,} candidate files; later "
                                f"files (in sorted path order) were not searched",
                            )
                        )
                        return out
                    seen.add(rel)
                    out.append(_Cand(rel, real, real.stat().st_size))
                except OSError:
                    counts["files_unreadable"] += 1
            stack.extend(reversed(subdirs))
    return out


def _scan(
    cands: list[_Cand], q: _Query, limits: SearchLimits, counts: dict, hits: list[dict]
) -> list[_Hit]:
    """Read each candidate once; keep per-term counts of the files that match."""
    t0 = limits.clock()
    found: list[_Hit] = []
    too_large: list[str] = []
    for n, c in enumerate(cands):
        if limits.clock() - t0 > limits.scan_seconds:
            hits.append(
                _limit_hit(
                    "scan_seconds",
                    limits.scan_seconds,
                    f"scanning stopped after the {limits.scan_seconds:g} s scan budget; "
                    f"{len(cands) - n:,} listed files were not read",
                )
            )
            break
        if c.size > limits.max_file_bytes:
            too_large.append(c.rel)
            continue
        if counts["bytes_inspected"] + c.size > limits.max_bytes:
            hits.append(
                _limit_hit(
                    "max_bytes",
                    limits.max_bytes,
                    f"stopped after inspecting {counts['bytes_inspected']:,} bytes: the next "
                    f"file would exceed the {limits.max_bytes:,}-byte budget",
                )
            )
            break
        read_at = _now_iso()
        try:
            data = _read_bytes(c.path, limits.max_file_bytes)
        except OSError:
            counts["files_unreadable"] += 1
            continue
        if data is None:
            too_large.append(c.rel)
            continue
        counts["files_scanned"] += 1
        counts["bytes_inspected"] += len(data)
        if b"\x00" in data:
            counts["files_binary"] += 1
            continue
        text = data.decode("utf-8", errors="replace")
        low = text.lower()
        tf = {
            i: n
            for i, t in enumerate(q.terms)
            if t.probe in low and (n := len(t.matches(text, low)))
        }
        defs: dict[int, tuple[str, int, bool]] = {}
        for j, tg in enumerate(q.targets):
            if q.terms[tg.term].probe in low and (got := tg.find(low)):
                qual = tg.qualifier and re.escape(tg.qualifier.lower())
                in_class = not qual or bool(
                    re.search(rf"class[ \t]+{qual}(?![a-z0-9_])", low)
                )
                defs[j] = (got[0], got[1], in_class)
        path_match = any(_hint_matches(h, c.rel) for h in q.hints)
        if tf or defs or path_match:
            found.append(_Hit(c, data, text, read_at, tf, defs))
    if too_large:
        counts["files_skipped_too_large"] = len(too_large)
        hits.append(
            _limit_hit(
                "max_file_bytes",
                limits.max_file_bytes,
                f"{len(too_large)} file(s) over {limits.max_file_bytes:,} bytes were skipped: "
                + ", ".join(too_large[:5])
                + (" ..." if len(too_large) > 5 else ""),
            )
        )
    return found


def _hint_matches(hint: str, rel: str) -> bool:
    """A path typed in the query (``tools/validation_tools.py``, ``pkg.mod.func``)."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", rel.lower())
    return (
        stem == hint
        or hint.startswith(stem + "/")
        or stem.endswith("/" + hint)
        or ("/" in hint and hint in stem)
    )


def _has_whole_term(h: _Hit, q: _Query) -> bool:
    return any(q.terms[i].kind != "part" for i in h.tf) or any(
        _hint_matches(hint, h.cand.rel) for hint in q.hints
    )


def _rank(found: list[_Hit], q: _Query, n_docs: int) -> None:
    """Lexical score: BM25 over identifier-aware terms + definition/path bonuses."""
    if not found:
        return
    df = [sum(1 for h in found if i in h.tf) for i in range(len(q.terms))]
    idf = [math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df]
    avg = sum(len(h.data) for h in found) / len(found) or 1.0
    primary = [i for i, t in enumerate(q.terms) if t.kind != "part"]
    total = sum(q.terms[i].weight * idf[i] for i in primary) or 1.0
    for h in found:
        norm = _K1 * (1 - _B + _B * max(len(h.data), 1) / avg)
        s = sum(
            q.terms[i].weight * idf[i] * n * (_K1 + 1) / (n + norm)
            for i, n in h.tf.items()
        )
        comps = set(re.split(r"[/._-]", h.cand.rel.lower())) | {
            Path(h.cand.rel).stem.lower()
        }
        covered = 0.0
        for i in primary:
            if q.terms[i].low in comps:
                s += _PATH_BONUS * q.terms[i].weight * idf[i]
            if i in h.tf or q.terms[i].low in comps:
                covered += q.terms[i].weight * idf[i]
        for j, (kind, _, in_class) in h.defs.items():
            tg = q.targets[j]
            bonus = _DEF_BONUS if kind == "def" else _ASSIGN_BONUS
            # Cls.method asked, but no class Cls here: a namesake, half credit
            s += bonus * idf[tg.term] * tg.strength * (1.0 if in_class else 0.5)
        s *= 0.5 + 0.5 * covered / total
        s += _HINT_BONUS * sum(_hint_matches(hint, h.cand.rel) for hint in q.hints)
        h.score = s


def _region(
    h: _Hit, q: _Query, lines: list[str], syms: list[_Sym] | None
) -> tuple[int, int, str]:
    """``(line_start, line_end, match)``: the definition, else the densest window."""
    # definitions before assignments, named identifiers before plain words;
    # otherwise the query's own order (the sort is stable)
    ranked = sorted(
        h.defs, key=lambda j: (h.defs[j][0] != "def", -q.targets[j].strength)
    )
    for j in ranked:
        tg, (kind, offset, _) = q.targets[j], h.defs[j]
        if syms is not None and kind == "def":
            cands = [s for s in syms if tg.leaf.fullmatch(s.name.split(".")[-1])]
            if tg.qualifier:  # Cls.method: the method of that class first
                qual = tg.qualifier.lower()
                cands.sort(key=lambda s: s.name.lower().split(".")[-2:-1] != [qual])
            if cands:
                return cands[0].line, cands[0].sig_end, "definition"
        line = h.text.lower().count("\n", 0, offset) + 1
        return line, line, "definition" if kind == "def" else "assignment"
    # line starts of the text and of its lowercased copy (lower() may change
    # the length of a few Unicode characters, never the number of lines)
    low = h.text.lower()
    starts = {
        flag: [0] + [m.end() for m in re.finditer("\n", t)]
        for flag, t in ((False, h.text), (True, low))
    }
    per_line: dict[int, set[int]] = {}
    for i in h.tf:
        for offset, on_low in q.terms[i].matches(h.text, low)[:2000]:
            line = bisect.bisect_right(starts[on_low], offset)
            per_line.setdefault(line, set()).add(i)
    if not per_line:
        return 1, 1, "path"
    hit_lines = sorted(per_line)
    best, best_w = (hit_lines[0], hit_lines[0]), -1.0
    for k, first in enumerate(hit_lines):
        inside = [ln for ln in hit_lines[k : k + 8] if ln < first + 8]
        terms = set().union(*(per_line[ln] for ln in inside))
        w = sum(q.terms[i].weight for i in terms)
        if w > best_w:
            best, best_w = (first, inside[-1]), w
    return best[0], best[1], "mention"


def _excerpt(
    lines: list[str], start: int, end: int, python: bool
) -> tuple[str, int, int]:
    """A few masked lines around the hit (long lines cut, CRLF normalised)."""
    lo = max(1, start - 2)
    hi = min(len(lines), max(start, end) + 3, lo + 11)
    shown = [ln.rstrip("\r") for ln in lines[lo - 1 : hi]]
    shown = [ln if len(ln) <= 300 else ln[:300] + " ..." for ln in shown]
    text, _ = mask_secrets("\n".join(shown), python=python)
    return text, lo, hi


def _validate_search_args(query: object, include_tests: object, limit: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise DevSearchError("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise DevSearchError(f"query is longer than {MAX_QUERY_CHARS:,} characters")
    if not isinstance(include_tests, bool):
        raise DevSearchError("include_tests must be true or false")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise DevSearchError(
            "limit must be a positive integer (at most 6 results are returned)"
        )
    return query.strip()


def search_source(
    root: Path,
    query: str,
    *,
    profile: Profile,
    include_tests: bool = False,
    limit: int = MAX_RESULTS,
    limits: SearchLimits | None = None,
) -> dict:
    """Search the current checkout for *query*; at most 6 results, with evidence.

    Files are read on every call, so the answer reflects the files on disk
    at the time of the request. Definitions of an identifier named in the
    query outrank its mentions. See the module docstring for the policy.
    """
    query = _validate_search_args(query, include_tests, limit)
    limits = limits or SearchLimits(max_file_bytes=profile.max_file_bytes)
    base = _root_dir(root)
    started = time.perf_counter()
    q = _parse_query(query, profile)
    roots = _eligible_roots(profile)
    present = [r for r in roots if (base / r).is_dir()]
    counts = dict.fromkeys(
        (
            "files_considered",
            "files_scanned",
            "files_matched",
            "bytes_inspected",
            "files_skipped_too_large",
            "files_binary",
            "files_unreadable",
            "files_excluded",
            "dirs_excluded",
            "tests_excluded",
        ),
        0,
    )
    hits: list[dict] = []
    checkout = read_checkout(base, profile)
    cands = (
        _enumerate(base, roots, profile, include_tests, limits, counts, hits)
        if q.terms or q.hints
        else []
    )
    counts["files_considered"] = len(cands)
    found = _scan(cands, q, limits, counts, hits)
    counts["files_matched"] = len(found)
    _rank(found, q, max(counts["files_scanned"], 1))
    # a file that only shares a fragment of a name ("dispatch" of
    # _dispatch_code) is noise once any file matches a whole term
    strong = [h for h in found if h.defs or _has_whole_term(h, q)]
    found = sorted(strong or found, key=lambda h: (-h.score, h.cand.rel))
    results = []
    for rank, h in enumerate(found[: min(limit, MAX_RESULTS)], 1):
        python = h.cand.rel.endswith(_PY_SUFFIXES)
        lines = h.text.split("\n")
        syms = _py_symbols(h.text) if python else None
        start, end, match = _region(h, q, lines, syms)
        text, lo, hi = _excerpt(lines, start, end, python)
        after = _reread(h.cand.path, limits.max_file_bytes)
        results.append(
            {
                "rank": rank,
                "path": h.cand.rel,
                "line": start,
                "line_start": start,
                "line_end": max(start, end),
                "match": match,
                "symbol": _enclosing(h.cand.rel, lines, syms, start),
                "matched_terms": sorted(q.terms[i].low for i in h.tf),
                "excerpt": text,
                "excerpt_line_start": lo,
                "excerpt_line_end": hi,
                "score": round(h.score, 3),
                "role": _role(h.cand.rel, profile),
                "evidence": _evidence(h.data, h.read_at, checkout, after),
            }
        )
    limitation = None
    searched = ", ".join(present) or (
        f"none of the eligible roots ({', '.join(roots)}) exists under {base}"
    )
    named = [t for t in q.targets if q.terms[t.term].kind == "identifier"]
    absent = [t.name for t in named if not any(t.term in h.tf for h in found)]
    if not q.terms and not q.hints:
        limitation = "the query has no searchable words; nothing was searched"
    elif not results:
        limitation = (
            f"no implementation found within the searched bounds "
            f"({counts['files_scanned']:,} files, {counts['bytes_inspected']:,} "
            f"bytes; {searched})"
        )
    elif absent and len(absent) == len(named):
        limitation = (
            f"{', '.join(absent)} does not occur in the searched files; the results "
            f"only share words with the query"
        )
    if hits:
        cut = "; ".join(h["message"] for h in hits)
        limitation = (
            limitation + "; " if limitation else "results may be incomplete: "
        ) + cut
    return {
        "query": query,
        "include_tests": include_tests,
        "limit": min(limit, MAX_RESULTS),
        "terms": {
            "identifiers": [t.name for t in named],
            "words": [t.low for t in q.terms if t.kind == "word"],
            "paths": q.hints,
        },
        "roots": present,
        "results": results,
        "truncated": bool(hits),
        "limits_hit": hits,
        "counts": counts,
        "limitation": limitation,
        "checkout": checkout,
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
    }


# -- inspect_symbol / read_source ---------------------------------------------------------


def _signature(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [
            ast.unparse(k) for k in node.keywords
        ]
        return (
            f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"
        )
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){ret}"


def inspect_symbol(root: Path, path: str, symbol: str, *, profile: Profile) -> dict:
    """Signature, docstring and line span of *symbol* (``func`` or ``Cls.method``).

    Found with :mod:`ast` (never imported). An exact qualified name wins;
    otherwise a unique leaf name is accepted, and other candidates are listed.
    """
    if not isinstance(symbol, str) or not re.fullmatch(
        r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", symbol.strip()
    ):
        raise DevSearchError(
            "symbol must be a dotted Python name such as 'func' or 'Class.method'"
        )
    symbol = symbol.strip()
    rel, real = _resolve_request(root, path, profile)
    if not rel.endswith(_PY_SUFFIXES):
        raise DevSearchError(f"inspect_symbol reads Python files only, not {rel}")
    base = _root_dir(root)
    data, text, read_at = _load(real, rel, profile.max_file_bytes)
    syms = _py_symbols(text)
    if syms is None:
        raise DevSearchError(f"{rel} does not parse as Python; use read_source instead")
    exact = [s for s in syms if s.name == symbol]
    leaf = symbol.split(".")[-1]
    matches = (
        exact
        or [s for s in syms if s.name.endswith("." + symbol)]
        or [s for s in syms if s.name.split(".")[-1] == leaf and "." not in symbol]
    )
    if not matches:
        names = ", ".join(s.name for s in syms[:20]) or "none"
        raise DevSearchError(
            f"symbol {symbol!r} not found in {rel} (defined there: {names}"
            f"{' ...' if len(syms) > 20 else ''})"
        )
    s = matches[0]
    node = s.node
    doc = (
        ast.get_docstring(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        else None
    )
    doc_text, doc_masked = (
        mask_secrets(doc[:READ_MAX_CHARS], python=True) if doc else (None, 0)
    )
    sig, sig_masked = mask_secrets(_signature(node), python=True)
    decorators = [
        mask_secrets("@" + ast.unparse(d))[0]
        for d in getattr(node, "decorator_list", [])
    ]
    checkout = read_checkout(base, profile)
    return {
        "path": rel,
        "symbol": s.name,
        "kind": s.kind,
        "signature": sig,
        "decorators": decorators,
        "docstring": doc_text,
        "docstring_truncated": bool(doc and len(doc) > READ_MAX_CHARS),
        "line_start": s.line,
        "line_end": s.end,
        "decorator_line_start": s.start,
        "other_matches": [
            {"symbol": m.name, "line_start": m.line} for m in matches[1:]
        ],
        "masked_lines": sig_masked + doc_masked,
        "role": _role(rel, profile),
        "evidence": _evidence(
            data, read_at, checkout, _reread(real, profile.max_file_bytes)
        ),
    }


def read_source(
    root: Path,
    path: str,
    start: int = 1,
    lines: int = READ_MAX_LINES,
    *,
    profile: Profile,
) -> dict:
    """Up to 80 lines / 4,000 characters of a corpus file, secrets masked.

    Naming a test file is asking for it, so tests are readable here (and
    labelled as expected-behaviour examples), unlike in an unasked search.

    ``lines`` above 80 is clamped (and said so) rather than refused, since an
    editor asking for "the rest of the function" should get what is allowed.
    """
    for name, value in (("start", start), ("lines", lines)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DevSearchError(f"{name} must be an integer")
    if start < 1:
        raise DevSearchError("start must be 1 or more (lines are numbered from 1)")
    if lines < 1:
        raise DevSearchError("lines must be 1 or more")
    rel, real = _resolve_request(root, path, profile)
    base = _root_dir(root)
    data, text, read_at = _load(real, rel, profile.max_file_bytes)
    all_lines = [ln.rstrip("\r") for ln in text.split("\n")]
    if text.endswith("\n"):
        all_lines.pop()
    total = len(all_lines)
    if start > max(total, 1):
        raise DevSearchError(f"start {start} is past the end of {rel} ({total} lines)")
    notes = []
    want = lines
    if lines > READ_MAX_LINES:
        want = READ_MAX_LINES
        notes.append(f"clamped to {READ_MAX_LINES} lines (asked for {lines})")
    chunk = all_lines[start - 1 : start - 1 + want]
    masked_text, masked = mask_secrets(
        "\n".join(chunk), python=rel.endswith(_PY_SUFFIXES)
    )
    kept: list[str] = []
    used = 0
    for ln in masked_text.split("\n") if chunk else []:
        cost = len(ln) + (1 if kept else 0)
        if used + cost > READ_MAX_CHARS:
            if not kept:  # a single huge line: cut inside it
                kept.append(ln[:READ_MAX_CHARS])
                notes.append(f"line {start} cut at {READ_MAX_CHARS:,} characters")
            else:
                notes.append(
                    f"cut at {READ_MAX_CHARS:,} characters after line "
                    f"{start + len(kept) - 1}"
                )
            break
        kept.append(ln)
        used += cost
    end = start + len(kept) - 1
    checkout = read_checkout(base, profile)
    return {
        "path": rel,
        "start": start,
        "end": end,
        "total_lines": total,
        "requested": {"start": start, "lines": lines},
        "text": "\n".join(kept),
        "truncated": bool(notes),
        "truncation": "; ".join(notes) or None,
        "more_after": end < total,
        "masked_lines": masked,
        "role": _role(rel, profile),
        "evidence": _evidence(
            data, read_at, checkout, _reread(real, profile.max_file_bytes)
        ),
    }
