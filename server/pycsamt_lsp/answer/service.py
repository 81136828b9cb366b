"""A workspace's answering state: its ask settings and survey-line registries.

Each :class:`~pycsamt_lsp.workspace.facade.Workspace` owns one
:class:`AnswerService`; two workspaces in one process never share settings
or a parsed registry. It holds no reference back to the workspace.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

from pycsamt_lsp.answer.registry import (
    ProjectRegistry,
    RegistryCache,
    registry_candidates,
)
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.routing import Router

__all__ = ["AnswerService"]


class AnswerService:
    """The current :class:`AskSettings` (replaced whole, never mutated) and
    the registry cache of one workspace."""

    def __init__(self, settings: AskSettings | None = None) -> None:
        self._lock = threading.Lock()
        self._settings = settings or AskSettings()
        self.registries = RegistryCache()
        self._router: tuple[Any, Router] | None = None

    def router(self, profile: Any) -> Router:
        """The request router compiled from *profile*'s cues (issue 15), kept
        while the workspace's profile object stays the same."""
        with self._lock:
            hit = self._router
            if hit is None or hit[0] is not profile:
                hit = self._router = (profile, Router(profile))
            return hit[1]

    @property
    def settings(self) -> AskSettings:
        """The settings in force (defaults until configured)."""
        return self._settings

    def configure(self, **changes: Any) -> AskSettings:
        """Replace some settings (``model=...``, ``dense=True``, ...); unknown
        names raise ``TypeError``. Returns the new settings."""
        with self._lock:
            self._settings = dataclasses.replace(self._settings, **changes)
            return self._settings

    def registry(
        self, root: Path | None, settings: AskSettings | None = None
    ) -> ProjectRegistry | None:
        """The project registry for a corpus at *root* (the setting, the
        editor's folder, then the corpus root), or None."""
        settings = settings or self._settings
        return self.registries.load(registry_candidates(root, settings))
