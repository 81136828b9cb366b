"""Checkout evidence: the revision and the package version a hit was read at.

Read from files only (git through :mod:`pycsamt_lsp.devsearch.git`, versions
from metadata and ``__version__`` literals parsed with :mod:`ast`), so a
result can say which release the code is and flag when the checkout
disagrees with its own metadata or a file changed while it was read.
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import re
import tomllib
from pathlib import Path

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.devsearch.git import git_dirs, read_head
from pycsamt_lsp.pyast.signatures import parse_quietly

__all__ = ["evidence", "read_checkout"]

_VERSION_TAG = re.compile(r"(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)$")


def _norm_version(v: str) -> str:
    return v.strip().lower().removeprefix("v")


def _static_version_literal(path: Path) -> str | None:
    """A module-level ``__version__ = "x"`` literal, parsed, never executed.

    Only unconditional top-level assignments count: a fallback inside
    ``try``/``except`` (pyCSAMT's ``"0+unknown"``) is not a declaration.
    """
    try:
        tree = parse_quietly(path.read_bytes()[:1_000_000])
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
        if (root / rel).is_file() and (lit := _static_version_literal(root / rel)):
            add(f"{rel} __version__", None, lit)
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
        if _norm_version(v) != _norm_version(declared[0][1]):
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


def evidence(data: bytes, read_at: str, checkout: dict, after: bytes | None) -> dict:
    """The provenance record of a file a developer search read.

    SHA-256 and size of *data* as read, when (*read_at*), the checkout's
    revision and package version (with where each came from), and
    ``changed_during_search`` when a re-read (*after*, None if the re-read
    failed) differs: the answer says which bytes it quotes and whether they
    are still on disk.
    """
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
