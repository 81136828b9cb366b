"""Where a package sits under a corpus root: flat, ``src/``, or its stubs.

Its own module because finding the corpus root (``corpus.discovery``, the
CLI, the server's folder matching) asks only this, and the package model's
facts module it lived in costs a fresh process ~50 ms to import (issue 18,
warm start). :mod:`pycsamt_lsp.model.facts` re-exports these names.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["LAYOUT_PREFIXES", "STUBS_SUFFIX", "package_dir", "package_dirs"]

#: Folders under a corpus root that may hold the package: flat, then ``src/``.
LAYOUT_PREFIXES = ("", "src/")

#: PEP 561 stub-only distribution folder: ``foo-stubs/`` describes ``foo``.
STUBS_SUFFIX = "-stubs"


def package_dirs(root: Path, package: str) -> list[Path]:
    """The folders that model ``package`` under ``root``: the package itself
    (``root/package``, else ``root/src/package``) and its PEP 561 stub-only
    package (``package-stubs``, beside it or instead of it)."""
    out: list[Path] = []
    for name in (package, package + STUBS_SUFFIX):
        for pre in LAYOUT_PREFIXES:
            cand = Path(root) / pre / name
            if cand.is_dir():
                out.append(cand)
                break
    return out


def package_dir(root: Path, package: str) -> Path | None:
    """Where ``package`` sits under ``root``: ``root/package`` (flat layout)
    or ``root/src/package`` (src layout), else its ``package-stubs`` folder;
    None when there is none."""
    dirs = package_dirs(root, package)
    return dirs[0] if dirs else None
