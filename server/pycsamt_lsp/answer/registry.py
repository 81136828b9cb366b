"""The survey-line registry of a project, as the answer side finds it.

One implementation: the router's :class:`~pycsamt_lsp.routing.registry.LineRegistry`
(issue 15). It reads both formats, the workspace's ``.pycsamt/projects.toml``
and the package's own ``projects/*_project_registry.yml`` at a checkout's
root, so a line resolves the same way for routing, project context and
plans. This module only decides *where* to look (the ``registry`` setting,
the editor's folder, the corpus root) and caches the parsed files per
workspace: :class:`RegistryCache` re-reads them when one of their mtimes or
sizes changes, so a bad file is warned about once, not on every request.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.errors import RegistryError
from pycsamt_lsp.routing.registry import (
    WORKSPACE_REGISTRY,
    LineRegistry,
    discover_registry_files,
)

__all__ = [
    "REGISTRY_RELPATH",
    "ProjectRegistry",
    "RegistryCache",
    "RegistryError",
    "registry_candidates",
]

log = logging.getLogger(__name__)

REGISTRY_RELPATH = WORKSPACE_REGISTRY.as_posix()

#: The answer side's name for the one registry type (kept for callers).
ProjectRegistry = LineRegistry


def registry_candidates(root: Path | None, settings: AskSettings) -> list[Path]:
    """Registry files to read, in order of precedence.

    The ``registry`` setting alone when set; else, for the editor's folder
    and then the corpus root, ``.pycsamt/projects.toml`` (listed even when
    missing, so the "no registry" warning can say where it looked) and the
    ``projects/*registry*.yml`` files found there.
    """
    if settings.registry:
        return [Path(settings.registry).expanduser()]
    out: list[Path] = []
    for base in (settings.workspace_root, root):
        if not base:
            continue
        for p in [
            Path(base).expanduser() / REGISTRY_RELPATH,
            *discover_registry_files(base),
        ]:
            if p not in out:
                out.append(p)
    return out


class RegistryCache:
    """The parsed registry of one owner, keyed by the files it was read from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parsed: dict[tuple, LineRegistry | None] = {}
        self._warned: set[str] = set()

    def load(self, candidates: list[Path]) -> LineRegistry | None:
        """One :class:`LineRegistry` from every existing file among *candidates*
        (the first file naming a line wins), or None when none exists or none
        gives a line (a bad file: one logged warning naming file and reason)."""
        sig: list[tuple[str, int, int]] = []
        for path in candidates:
            try:
                st = path.stat()
            except OSError:
                continue
            if path.is_file():
                sig.append((str(path), st.st_mtime_ns, st.st_size))
        if not sig:
            where = ", ".join(str(p) for p in candidates) or "(no folder)"
            with self._lock:
                first = where not in self._warned
                self._warned.add(where)
            if first:
                log.warning(
                    "no project registry (looked for %s): questions get no project context",
                    where,
                )
            return None
        key = tuple(sig)
        with self._lock:
            if key in self._parsed:
                return self._parsed[key]
        reg = LineRegistry()
        for name, _, _ in sig:
            reg.add_file(Path(name))  # a bad file: one warning, the rest loads
        out = reg if reg.lines else None
        with self._lock:
            self._parsed[key] = out
        return out
