"""Keeping the static package model beside the index.

The model covers every module file of the package (``.py``, ``.pyi`` stubs,
compiled extensions), including those the retrieval policy leaves out of
the index, because an import of a real but unindexed module is real. It is
built from the same parse as the index (the chunking workers extract the
module facts from the tree they already parsed), updated incrementally with
it, and persisted as ``package_model.json`` beside the index with the
SHA-256 of every module file, so a warm start re-parses only what changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pycsamt_lsp.chunking import FileChunks, chunk_file
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.corpus.safety import MODEL_MAX_BYTES, screen
from pycsamt_lsp.index.tokenize import term_counts
from pycsamt_lsp.model.lazy import load_persisted
from pycsamt_lsp.model.package import (
    ModuleInfo,
    PackageModel,
    module_info_from_bytes,
    module_name_for,
    package_dirs,
)
from pycsamt_lsp.storage.atomic import atomic_write

__all__ = ["MODEL_FILE", "load_model", "module_files", "process_file", "save_model"]

log = logging.getLogger(__name__)

MODEL_FILE = "package_model.json"
_SKIP = frozenset(
    {"__pycache__", ".git", ".hg", ".svn", "node_modules", ".pycsamt_rag"}
)


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module file of the package under ``root`` (flat or src layout):
    ``rel -> path``."""
    out: dict[str, Path] = {}
    walks = (w for top in package_dirs(root, package) for w in os.walk(top))
    for dirpath, dirnames, filenames in walks:
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP and not d.startswith(".")
        )
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        for fn in filenames:
            rel = f"{rel_dir}/{fn}"
            if module_name_for(rel, package) is not None:
                out[rel] = Path(dirpath) / fn
    # no FIFO, symlink out of the corpus, bad name or 50 MB file (issue 19)
    return dict(screen(root, out.items(), max_bytes=MODEL_MAX_BYTES))


def module_info(
    rel: str, data: bytes, package: str, tree: Any = None
) -> ModuleInfo | None:
    """Module facts from a tree already parsed, or from the bytes."""
    meta = module_name_for(rel, package)
    if meta is None:
        return None
    dotted, is_pkg, kind = meta
    if kind == "compiled":
        return ModuleInfo(name=dotted, rel=rel, is_package=is_pkg, kind="compiled")
    if tree is not None and kind in ("source", "stub"):
        return ModuleInfo.from_tree(
            tree, name=dotted, rel=rel, is_package=is_pkg, kind=kind, source=data
        )
    return module_info_from_bytes(data, dotted, rel, is_pkg, kind)


def process_file(
    args: tuple[str, bytes, Profile, bool],
) -> tuple[str, FileChunks, ModuleInfo | None]:
    """One parse for both consumers: chunks for the index, facts for the model.

    A process-pool worker: the tree never leaves the process, only chunks,
    their term counts (tokenizing here uses both cores; the parent would do
    it alone) and the extracted module facts do.
    """
    rel, data, profile, index = args
    fc = chunk_file(rel, data, profile) if index else FileChunks([])
    fc.counts = [dict(term_counts(c.text)) for c in fc.chunks]
    info = module_info(rel, data, profile.package, fc.tree)
    fc.tree = None
    return rel, fc, info


def sha_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_model(index_dir: Path, model: PackageModel, shas: dict[str, str]) -> None:
    """Write ``package_model.json`` atomically (temp file + rename)."""
    atomic_write(index_dir / MODEL_FILE, lambda fh: _write_model(fh, model, shas))


def _write_model(fh: Any, model: PackageModel, shas: dict[str, str]) -> None:
    """``json.dumps({"model": model.to_dict(), "shas": shas})``, byte for byte,
    written one module at a time: the whole document as one string (and its
    UTF-8 copy) was 26 MB of a build's peak on the pyCSAMT sdist."""
    enc = json.JSONEncoder().encode  # json.dumps' defaults, C encoder
    fh.write(b'{"model": {')
    for i, (key, value) in enumerate(model.to_dict().items()):
        fh.write(f"{', ' if i else ''}{enc(key)}: ".encode())
        if key == "files" and isinstance(value, dict):
            fh.write(b"{")
            for j, (rel, info) in enumerate(value.items()):
                fh.write(f"{', ' if j else ''}{enc(rel)}: {enc(info)}".encode())
            fh.write(b"}")
        else:
            fh.write(enc(value).encode())
    fh.write(f'}}, "shas": {enc(shas)}}}'.encode())


def load_model(
    index_dir: Path,
    root: Path,
    package: str,
    files: dict[str, Path],
    *,
    workers: int = 1,
) -> tuple[PackageModel, dict[str, str], bool]:
    """The persisted model brought up to date, or a fresh one.

    Returns ``(model, shas, changed)``; ``changed`` says whether it differs
    from what was persisted (so the caller persists it again).
    """
    model: PackageModel | None = None
    shas: dict[str, str] = {}
    path = index_dir / MODEL_FILE
    if path.is_file():
        try:
            # modules' functions, classes and docs decoded on first use
            model, shas = load_persisted(path, root)
            if model.package != package:
                raise ValueError(f"model is of package {model.package!r}")
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            RecursionError,
        ) as exc:  # a foreign or reshaped file: rebuilt (issue 19)
            log.warning("rebuilding the package model: %s", exc)
            model, shas = None, {}
    if model is None:
        model = PackageModel.build(root, package, workers=workers)
        current: dict[str, str] = {
            rel: sha_hex(p.read_bytes()) for rel, p in files.items() if _readable(p)
        }
        return model, current, True
    changed = False
    current = {}
    for rel, p in files.items():
        try:
            data = p.read_bytes()
        except OSError:
            continue
        current[rel] = sha_hex(data)
        if shas.get(rel) != current[rel]:
            model.update_file(rel, data)
            changed = True
    for rel in set(shas) - set(current):
        model.update_file(rel, None)
        changed = True
    return model, current, changed


def _readable(p: Path) -> bool:
    return os.access(p, os.R_OK)


def apply_updates(
    model: PackageModel,
    shas: dict[str, str],
    updates: Iterable[tuple[str, bytes | None, Any]],
) -> tuple[PackageModel, dict[str, str]] | None:
    """A copy of *model* with ``(rel, data or None, tree or None)`` applied.

    None when nothing in the package changed.
    """
    todo = []
    for rel, data, tree in updates:
        if module_name_for(rel, model.package) is None:
            continue
        new_sha = None if data is None else sha_hex(data)
        if shas.get(rel) == new_sha:
            continue
        todo.append((rel, data, tree, new_sha))
    if not todo:
        return None
    new_model = model.copy()
    new_shas = dict(shas)
    for rel, data, tree, new_sha in todo:
        if data is None or new_sha is None:  # None together: a deleted file
            new_model.update_file(rel, None)
            new_shas.pop(rel, None)
        else:
            info = module_info(rel, data, model.package, tree)
            if info is not None:
                new_model.add_module(info)
            new_shas[rel] = new_sha
    return new_model, new_shas
