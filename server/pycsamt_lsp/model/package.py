"""A static model of a Python package: what exists, what provably does not.

DESIGN 6. The model is built from parsed source only; nothing of the modelled
package is ever imported or executed. It answers three questions:

* ``resolve("pkg.a.b")`` -- does this dotted name exist (and where), is it
  provably absent (the namespace it would live in is *closed* and has no such
  name or submodule), or can it not be known (open namespace, compiled module,
  external star import, class with external bases...)? Absence is only ever
  claimed when it is provable, because the validator turns it into an error.
* ``members``/``signature`` -- what completion and hover cards need.
* ``suggest`` -- real symbols close to a hallucinated name, for quick fixes.

Per-module facts live in :class:`ModuleInfo`, extracted from one ``ast.Module``
(``ModuleInfo.from_tree``) so the server can share the parse with the index,
and JSON-serialisable (``to_dict``/``from_dict``) so the model can be persisted
next to the index and warm-started without re-parsing. :class:`PackageModel`
holds one ``ModuleInfo`` per file and does every cross-module step (re-export
chains, star imports, lazy ``__getattr__`` targets, class bases) at query
time, with a cache that every update clears; that keeps incremental updates a
matter of replacing one file's ``ModuleInfo``.

PEP 562 module ``__getattr__`` gets a small abstract interpretation
(:class:`~pycsamt_lsp.model.pep562._GetattrAnalyzer`): when it only admits names drawn from module-level
literal collections (or ``name == "x"`` tests) and raises otherwise, the
namespace stays closed and is extended by exactly the admitted names, each
resolved to the target its body would import; names it raises for under a
finite test (pyCSAMT's ``_REMOVED`` table) are absent, with the package's own
message rendered from the literal. Anything it cannot follow makes the
namespace open.

Layout (one seam per module, imported in this order): ``facts`` (the records
and shared AST helpers), ``pep562`` (the ``__getattr__`` analysis),
``dynamic`` (``globals()``/``setattr``/``lazy_loader`` scans), ``extract``
(:class:`ModuleInfo` and the pass that fills it), ``resolve``
(exists / absent / unknown, class attributes), ``members`` (signatures, docs,
members for the editor), ``suggest`` (did-you-mean). This module builds and
updates a :class:`PackageModel` and re-exports the names its importers use.
"""

from __future__ import annotations

import ast
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pycsamt_lsp.corpus.testfiles import is_test_module
from pycsamt_lsp.model.deferred import DeferredModuleInfo, HeadModuleInfo, record_of
from pycsamt_lsp.model.extract import (
    ModuleInfo,
    _extract_files,
    module_info_from_bytes,
)
from pycsamt_lsp.model.facts import ABSENT as ABSENT
from pycsamt_lsp.model.facts import EXISTS as EXISTS
from pycsamt_lsp.model.facts import LAYOUT_PREFIXES as LAYOUT_PREFIXES
from pycsamt_lsp.model.facts import (
    MODEL_VERSION,
    Binding,
    ClassInfo,
    FunctionInfo,
    Resolution,
    _Step,
    identifier_tokens,
    module_name_for,
    package_dirs,
)
from pycsamt_lsp.model.facts import UNKNOWN as UNKNOWN
from pycsamt_lsp.model.facts import package_dir as package_dir
from pycsamt_lsp.model.lazy import DEFAULT_BUDGET, LazyModuleInfo, read_persisted
from pycsamt_lsp.model.members import _MembersBase
from pycsamt_lsp.model.suggest import _SuggestIndex, suggest_index

__all__ = [
    "MODEL_VERSION",
    "Binding",
    "ClassInfo",
    "FunctionInfo",
    "ModuleInfo",
    "PackageModel",
    "Resolution",
    "identifier_tokens",
    "module_name_for",
]

_SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", "node_modules"})


class PackageModel(_MembersBase):
    """Static model of one package (see the module docstring)."""

    def __init__(self, package: str, root: Path | None = None) -> None:
        self.package = package
        self.root = Path(root) if root is not None else None
        self._files: dict[str, ModuleInfo] = {}
        self._dirs: set[str] = set()
        self._modules: dict[str, ModuleInfo] | None = None
        self._registered: set[str] | None = None
        self._injects: dict[str, str] | None = None
        self._cache: dict[tuple[str, str], _Step] = {}
        self._resolve_cache: dict[str, Resolution] = {}
        self._suggest_index: _SuggestIndex | None = None
        self._suggest_lock = threading.Lock()  # built once (suggest.suggest_index)
        self._suggest_cache: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self._call_cache: dict[tuple[Any, ...], dict[str, Any] | None] = {}
        self._suggest_demote: Callable[[str], bool] | None = None
        self.build_seconds: float | None = None

    @property
    def suggest_demote(self) -> Callable[[str], bool] | None:
        """Predicate on a module's corpus-relative path: True ranks that
        module last in suggestions and leaves its names out of the
        package-wide did-you-mean (still real, still resolvable, and still
        suggested to a query inside that module: ``model.suggest``). The
        server passes ``lambda rel: not profile.should_index(rel)``: the UI
        glue and private helpers the index leaves out, which a build
        therefore need not parse (``model.deferred``)."""
        return self._suggest_demote

    @suggest_demote.setter
    def suggest_demote(self, pred: Callable[[str], bool] | None) -> None:
        self._suggest_demote = pred
        self._suggest_index = None
        self._suggest_cache.clear()

    # -- building -------------------------------------------------------------------

    @classmethod
    def build(cls, root: Path, package: str, *, workers: int = 1) -> PackageModel:
        """Walk every file of ``root/package`` and model it (never raises on
        a bad file: unreadable/unparsable modules exist with unknown names).

        Parsing dominates; ``workers > 1`` parses in that many spawned
        processes (the trees never cross the process boundary, only the
        extracted ModuleInfo objects do)."""
        t0 = time.perf_counter()
        model = cls(package, root)
        tops = package_dirs(Path(root), package)  # the package, its -stubs
        if tops:
            todo: list[str] = []
            walks = (w for top in tops for w in os.walk(top))
            for dirpath, dirnames, filenames in walks:
                dirnames[:] = sorted(
                    d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")
                )
                rel_dir = Path(dirpath).relative_to(root).as_posix()
                model._dirs.add(rel_dir)
                for fn in sorted(filenames):
                    rel = f"{rel_dir}/{fn}"
                    meta = module_name_for(rel, package)
                    if meta is None:
                        continue
                    if meta[2] == "compiled":
                        model._add_file(rel, None)
                    else:
                        todo.append(rel)
            if workers > 1 and len(todo) > 50:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                chunks = [todo[i :: workers * 4] for i in range(workers * 4)]
                ctx = multiprocessing.get_context("spawn")
                with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                    for infos in pool.map(
                        _extract_files,
                        [str(root)] * len(chunks),
                        [package] * len(chunks),
                        chunks,
                    ):
                        for info in infos:
                            model._files[info.rel] = info
            else:
                for info in _extract_files(str(root), package, todo):
                    model._files[info.rel] = info
            model._invalidate()
        else:
            single = Path(root) / f"{package}.py"
            if single.is_file():
                model.add_module(
                    ModuleInfo.from_source(
                        single.read_bytes(), name=package, rel=f"{package}.py"
                    )
                )
        model.build_seconds = time.perf_counter() - t0
        return model

    def _add_file(self, rel: str, data: bytes | None) -> bool:
        meta = module_name_for(rel, self.package)
        if meta is None:
            return False
        dotted, is_pkg, kind = meta
        if kind == "compiled":
            info = ModuleInfo(name=dotted, rel=rel, is_package=is_pkg, kind="compiled")
        else:
            info = module_info_from_bytes(
                data or b"", dotted, rel, is_pkg, kind, self.root
            )
        self.add_module(info)
        return True

    def add_module(self, info: ModuleInfo) -> None:
        """Add or replace the module parsed from ``info.rel``."""
        if (
            info.kind == "cython"
            and (info.open_reason or "").startswith("cython-include")
            and self.root is not None
        ):
            # extracted without the corpus root at hand: read its includes now
            try:
                data = (self.root / info.rel).read_bytes()
            except OSError:
                pass
            else:
                info = module_info_from_bytes(
                    data, info.name, info.rel, info.is_package, "cython", self.root
                )
        self._files[info.rel] = info
        parent = info.rel.rpartition("/")[0]
        while parent:
            self._dirs.add(parent)
            parent = parent.rpartition("/")[0]
        self._invalidate()

    def add_tree(
        self, rel: str, tree: ast.Module, source: bytes | str | None = None
    ) -> ModuleInfo | None:
        """Model a file from a tree the caller already parsed (the index's
        parse); returns the ModuleInfo, or None if ``rel`` is not a module of
        the package."""
        meta = module_name_for(rel, self.package)
        if meta is None:
            return None
        dotted, is_pkg, kind = meta
        info = ModuleInfo.from_tree(
            tree, name=dotted, rel=rel, is_package=is_pkg, kind=kind, source=source
        )
        self.add_module(info)
        return info

    def update_file(self, rel: str, data: bytes | None) -> bool:
        """Incremental update: ``data`` None means the file was deleted.

        Returns True when the model changed (``rel`` is a module file of the
        package). A new file adds a module (and its directories)."""
        if module_name_for(rel, self.package) is None:
            return False
        if data is None:
            if self._files.pop(rel, None) is None:
                return False
            self._invalidate()
            return True
        return self._add_file(rel, data)

    def remove_directory(self, rel_dir: str) -> None:
        """Forget a deleted directory (and every module under it)."""
        prefix = rel_dir.rstrip("/") + "/"
        for rel in [r for r in self._files if r.startswith(prefix)]:
            del self._files[rel]
        self._dirs = {
            d for d in self._dirs if d != rel_dir and not d.startswith(prefix)
        }
        self._invalidate()

    def copy(self) -> PackageModel:
        """A model sharing this one's (immutable) module facts, with empty caches.

        Updates go to a copy that is then swapped in, so readers on other
        threads keep a consistent model while a file change is applied.
        """
        new = PackageModel(self.package, self.root)
        new._files = dict(self._files)
        new._dirs = set(self._dirs)
        new._suggest_demote = self._suggest_demote
        return new

    def _invalidate(self) -> None:
        self._modules = None
        self._registered = None
        self._injects = None
        self._cache.clear()
        self._resolve_cache.clear()
        self._call_cache.clear()
        self._suggest_cache.clear()
        self._suggest_index = None

    # -- persistence ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The whole model as ``package_model.json`` holds it (versioned, files in
        path order so equal models serialise equally).
        """
        return {
            "model_version": MODEL_VERSION,
            "package": self.package,
            "files": {rel: info.to_dict() for rel, info in sorted(self._files.items())},
            "dirs": sorted(self._dirs),
        }

    def iter_json(self) -> Iterator[bytes]:
        """``json.dumps(self.to_dict())`` in pieces, one module at a time.

        What ``save_model`` writes: no whole-document dict or string is ever
        held (that was ~40 MB of transient objects, left as heap growth of a
        server after each persist), and a module still lazy from the last
        load is copied from the file it came from instead of being decoded
        and encoded again (the same bytes: the same encoder wrote them).
        """
        enc = json.JSONEncoder().encode  # json.dumps' defaults, C encoder
        yield (
            f'{{"model_version": {enc(MODEL_VERSION)}, '
            f'"package": {enc(self.package)}, "files": {{'
        ).encode()
        for j, (rel, info) in enumerate(sorted(self._files.items())):
            raw = info.persisted_json() if isinstance(info, LazyModuleInfo) else None
            text = raw if raw is not None else enc(info.to_dict())
            yield f"{', ' if j else ''}{enc(rel)}: {text}".encode()
        yield f'}}, "dirs": {enc(sorted(self._dirs))}}}'.encode()

    @classmethod
    def load_persisted(
        cls, path: Path, root: Path | None = None, *, budget: int = DEFAULT_BUDGET
    ) -> tuple[PackageModel, dict[str, str]]:
        """``(model, shas)`` from ``package_model.json``, every module lazy
        (:mod:`pycsamt_lsp.model.lazy`: functions, classes and docstrings are
        decoded from the file on first read); errors as :meth:`from_dict`."""
        head, files, shas = read_persisted(path, budget=budget, root=root)
        if files is None:
            return cls.from_dict(head, root), shas
        model = cls(head["package"], root)
        model._files = files
        model._dirs = set(head["dirs"])
        return model, shas

    @classmethod
    def from_dict(cls, d: dict[str, Any], root: Path | None = None) -> PackageModel:
        """The inverse of :meth:`to_dict`; :class:`ValueError` for a document of
        another ``model_version``.
        """
        if d.get("model_version") != MODEL_VERSION:
            raise ValueError(
                f"package model version {d.get('model_version')} != {MODEL_VERSION}"
            )
        model = cls(d["package"], root)
        model._files = {
            rel: (record_of(v, root) if "deferred" in v else ModuleInfo.from_dict(v))
            for rel, v in d["files"].items()
        }
        model._dirs = set(d["dirs"])
        return model

    # -- suggestions ------------------------------------------------------------------------

    def prepare(self) -> None:
        """Build the lazily built parts (module table, suggestion index) now,
        e.g. off the event loop right after a build or an update."""
        _ = self.modules
        if self._suggest_index is None and not self._suggest_parses():
            suggest_index(self, self._suggest_lock)

    def _suggest_parses(self) -> bool:
        """Whether the suggestion index would parse deferred modules (their
        names are suggested, so the first suggestion parses them; a model
        made ready for editing does not: ``model.deferred``). A module
        :attr:`suggest_demote` demotes is not read (only its name is)."""
        demote = self._suggest_demote
        return any(
            isinstance(info, DeferredModuleInfo)
            and not isinstance(info, HeadModuleInfo)  # names known
            and not info.materialised
            and not is_test_module(info.name)
            and not any(p.startswith("_") for p in info.name.split("."))
            and not (demote is not None and demote(info.rel))
            for info in self._files.values()
        )

    def suggest(
        self,
        dotted_or_name: str,
        k: int = 3,
        *,
        kind: str | None = None,
        within: str | None = None,
    ) -> list[str]:
        """Up to ``k`` real dotted symbols named like the (hallucinated) one.

        ``kind="module"`` restricts to modules; ``within`` to names under a
        dotted prefix. Only names that resolve as existing are returned, each
        canonical symbol once (under its shortest public path).
        """
        key = (dotted_or_name, k, kind, within)
        hit = self._suggest_cache.get(key)
        if hit is not None:
            return list(hit)
        index = suggest_index(self, self._suggest_lock)
        got = index.query(dotted_or_name, k, kind=kind, within=within)
        if len(self._suggest_cache) > 4096:
            self._suggest_cache.clear()
        self._suggest_cache[key] = tuple(got)
        return got
