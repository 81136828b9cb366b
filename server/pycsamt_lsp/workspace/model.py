"""The package model a workspace holds: built with the index, or loaded.

:class:`ModelService` owns the static
:class:`~pycsamt_lsp.model.package.PackageModel` of one corpus, the content
hash of every module it was made from, and whether it still has to be
persisted. A full build hands it a fresh model; otherwise it is loaded from
the index folder on first use (re-parsing modules that changed) and kept
current with edits, including module files the index leaves out (UI glue,
tests, stubs). It never points back at the workspace.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.index import heap

if TYPE_CHECKING:  # imported where used: a warm query never touches the model
    from pycsamt_lsp.model.package import PackageModel

__all__ = ["ModelService", "ModelUpdate"]

log = logging.getLogger(__name__)

#: ``(rel, new bytes or None when deleted, parsed tree or None)``
ModelUpdate = tuple[str, bytes | None, Any]


class ModelService:
    """The package model of one corpus root and profile (see the module doc).

    Not locked here: the workspace calls it under its own lock.
    """

    def __init__(
        self,
        root: Path,
        profile: Profile,
        index_dir: Path,
        *,
        workers: int,
        long_lived: bool,
    ) -> None:
        self.root = root
        self.profile = profile
        self.index_dir = index_dir
        self.workers = workers
        self.long_lived = long_lived
        self.model: PackageModel | None = None
        self.shas: dict[str, str] = {}
        self.dirty = False

    def hold(self, model: PackageModel, shas: dict[str, str]) -> None:
        """Hold *model* (made from modules with these content hashes), unsaved."""
        profile = self.profile  # not self: the model must not point back here
        model.suggest_demote = lambda rel: not profile.should_index(rel)
        self.model, self.shas, self.dirty = model, shas, True

    def forget(self) -> None:
        """Drop the model (another process persisted a newer one): it is
        loaded again on first use."""
        self.model = None

    def ensure(self, known: dict[str, str] | None = None) -> PackageModel:
        """The model; loaded from the index folder (re-parsing changed
        modules) or built when none is held. *known*: content hashes of
        files just hashed (``load_model`` does not read those again).

        The model is held once prepared: a reader that does not take the
        workspace lock never gets one whose tables are still being built."""
        if self.model is None:
            from pycsamt_lsp.model.state import load_model, module_files

            files = module_files(self.root, self.profile.package)
            model, shas, changed = load_model(
                self.index_dir,
                self.root,
                self.profile.package,
                files,
                workers=self.workers,
                known=known,
            )
            profile = self.profile  # as hold() sets it: prepare() uses it
            model.suggest_demote = lambda rel: not profile.should_index(rel)
            model.prepare()
            self.model, self.shas, self.dirty = model, shas, changed
            if self.long_lived:
                heap.compact()  # drop what decoding the persisted model left
        assert self.model is not None
        return self.model

    def unindexed_files(
        self, indexed: dict[str, bytes]
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        """Module files the index leaves out: their contents, and the content
        hash of every module file (indexed ones from *indexed*)."""
        from pycsamt_lsp.model.state import module_files, sha_hex

        data: dict[str, bytes] = {}
        shas: dict[str, str] = {}
        for rel, path in module_files(self.root, self.profile.package).items():
            if rel in indexed:
                shas[rel] = sha_hex(indexed[rel])
                continue
            try:
                raw = path.read_bytes() if not rel.endswith((".so", ".pyd")) else b""
            except OSError:
                continue
            data[rel] = raw
            shas[rel] = sha_hex(raw)
        return data, shas

    def update(self, updates: list[ModelUpdate]) -> bool:
        """Apply changed/deleted modules; True when a new model is held."""
        if self.model is None:
            return False
        from pycsamt_lsp.model.state import apply_updates

        got = apply_updates(self.model, self.shas, updates)
        if got is None:
            return False
        self.hold(*got)
        return True

    def unindexed_updates(self, rels: set[str] | None) -> list[ModelUpdate]:
        """Changes to module files the index does not hold, among *rels*
        (None: every module file); empty when no model is held."""
        if self.model is None:
            return []
        from pycsamt_lsp.model.package import module_name_for
        from pycsamt_lsp.model.state import module_files

        pkg = self.profile.package
        files: dict[str, Path] | None = None
        if rels is None:
            files = module_files(self.root, pkg)
            cands = set(files) | set(self.shas)
        else:  # flat or src/ layout: the model's own notion of a module file
            cands = {r for r in rels if module_name_for(r, pkg) is not None}
        updates: list[ModelUpdate] = []
        for rel in sorted(cands):
            if self.profile.should_index(rel) and rel.endswith(".py"):
                continue  # handled with the index, from the same parse
            path = files.get(rel) if files is not None else self.root / rel
            try:
                data = (
                    None
                    if path is None
                    else (b"" if rel.endswith((".so", ".pyd")) else path.read_bytes())
                )
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                data = None
            except OSError:
                continue
            updates.append((rel, data, None))
        return updates

    def persist(self) -> None:
        """Write the model when it changed since the last write (failures logged)."""
        if self.model is None or not self.dirty:
            return
        from pycsamt_lsp.model.state import save_model

        try:
            save_model(self.index_dir, self.model, self.shas)
            self.dirty = False
        except OSError as exc:
            log.warning("could not persist the package model: %s", exc)
