"""The survey-line registry of a project: ``.pycsamt/projects.toml``.

A question naming a survey line ("line 18", ``L18PLT``, an alias) gets the
line's paths and defaults as project context. :class:`RegistryCache` keeps
the parsed file per path, re-read when its mtime or size changes; a
workspace's answer service owns one, so nothing is shared between
workspaces.
"""

from __future__ import annotations

import logging
import re
import threading
import tomllib
from pathlib import Path
from typing import Any

from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.errors import RegistryError

__all__ = [
    "REGISTRY_RELPATH",
    "ProjectRegistry",
    "RegistryCache",
    "RegistryError",
    "registry_candidates",
]

log = logging.getLogger(__name__)

REGISTRY_RELPATH = ".pycsamt/projects.toml"


_LINE_TOKEN = re.compile(r"\b([A-Za-z]{1,3}\d{1,4}[A-Za-z]{0,4})\b")


def _norm_line(name: str) -> str:
    s = (name or "").strip().lower()
    s = re.sub(r"^(survey\s+)?line\s+", "", s)
    return re.sub(r"[^a-z0-9]", "", s).upper()


class ProjectRegistry:
    """Survey lines of a project: ``.pycsamt/projects.toml``.

    ::

        [project]
        name = "Willy survey"
        default_output_root = "results"

        [lines.L18PLT]
        edi_dir = "data/L18PLT"        # relative to the folder holding .pycsamt/
        sort_by = "lon"
        default_workflows = ["qc", "static_shift"]

        [aliases]
        "line 18" = "L18PLT"

        [static_shift_defaults]
        method = "ama"
    """

    def __init__(self, path: Path, data: dict[str, Any], base: Path) -> None:
        self.path = path
        self.base = base
        self.data = data
        self.lines_data: dict[str, dict[str, Any]] = data.get("lines", {})
        self._index = {_norm_line(k): k for k in self.lines_data}
        for alias, target in (data.get("aliases") or {}).items():
            if target in self.lines_data:
                self._index[_norm_line(alias)] = target

    @classmethod
    def load(cls, path: Path) -> ProjectRegistry:
        """Read and check a registry file; :class:`RegistryError` when malformed."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RegistryError(f"{path}: unreadable: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(f"{path}: not valid TOML: {exc}") from None
        lines = data.get("lines")
        if not isinstance(lines, dict) or not lines:
            raise RegistryError(f"{path}: needs a [lines.<NAME>] table per survey line")
        for name, entry in lines.items():
            if not isinstance(entry, dict):
                raise RegistryError(f"{path}: lines.{name} must be a table")
            if not isinstance(entry.get("edi_dir"), str) or not entry["edi_dir"]:
                raise RegistryError(
                    f"{path}: lines.{name}.edi_dir must be a path string"
                )
            wf = entry.get("default_workflows", [])
            if not isinstance(wf, list) or not all(isinstance(w, str) for w in wf):
                raise RegistryError(
                    f"{path}: lines.{name}.default_workflows must be a list of strings"
                )
        for key in ("project", "aliases", "static_shift_defaults", "plot_defaults"):
            if key in data and not isinstance(data[key], dict):
                raise RegistryError(f"{path}: [{key}] must be a table")
        base = path.parent.parent if path.parent.name == ".pycsamt" else path.parent
        return cls(path, data, base)

    def lines(self) -> list[str]:
        return sorted(self.lines_data)

    def canonical(self, name: str) -> str | None:
        return self._index.get(_norm_line(name))

    def find_line_in_text(self, text: str) -> str | None:
        """The first registry line named in *text* (case, ``line``, aliases)."""
        for tok in _LINE_TOKEN.findall(text or ""):
            canon = self.canonical(tok)
            if canon:
                return canon
        blob = " " + re.sub(r"[^a-z0-9]+", " ", (text or "").lower()) + " "
        for alias in sorted((self.data.get("aliases") or {}), key=len, reverse=True):
            words = re.sub(r"[^a-z0-9]+", " ", alias.lower()).strip()
            if words and f" {words} " in blob:
                return self.canonical(alias)
        return None

    def resolve_line(self, name: str) -> dict[str, Any]:
        """Paths and defaults of a line; ``KeyError`` naming the known lines."""
        canon = self.canonical(name)
        if canon is None:
            raise KeyError(
                f"unknown survey line {name!r}; known: {', '.join(self.lines()) or '(none)'}"
            )
        line = self.lines_data[canon]
        project = self.data.get("project") or {}
        raw = line["edi_dir"]
        edi = Path(raw).expanduser()
        if not edi.is_absolute():
            edi = (self.base / edi).resolve()
        exists = edi.is_dir()
        n_edi = sum(1 for _ in edi.glob("*.edi")) if exists else 0
        out_root = project.get("default_output_root", "results")
        return {
            "project": project.get("name"),
            "line": canon,
            "edi_dir": str(edi),
            "edi_dir_raw": raw,
            "exists": exists,
            "n_edi_files": n_edi,
            "station_pattern": line.get("station_pattern"),
            "sort_by": line.get("sort_by", "lon"),
            "output_root": line.get("output_root", f"{out_root}/{canon}"),
            "default_workflows": list(line.get("default_workflows", [])),
            "static_shift": dict(self.data.get("static_shift_defaults") or {}),
            "plot": dict(self.data.get("plot_defaults") or {}),
            "registry": str(self.path),
        }


def registry_candidates(root: Path | None, settings: AskSettings) -> list[Path]:
    """Where a registry is looked for, in order: the setting, else the
    editor's folder and then the corpus root."""
    if settings.registry:
        return [Path(settings.registry).expanduser()]
    out: list[Path] = []
    for base in (settings.workspace_root, root):
        if base:
            p = Path(base) / REGISTRY_RELPATH
            if p not in out:
                out.append(p)
    return out


class RegistryCache:
    """Parsed registries by path (checked against mtime and size), and the
    "no registry" warnings already given, for one owner."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parsed: dict[str, tuple[tuple[int, int], ProjectRegistry | None]] = {}
        self._warned: set[str] = set()

    def load(self, candidates: list[Path]) -> ProjectRegistry | None:
        """The first registry among *candidates*, or None (missing or
        malformed: a logged warning, once per set of places looked at)."""
        for path in candidates:
            try:
                st = path.stat()
            except OSError:
                continue
            sig = (st.st_mtime_ns, st.st_size)
            with self._lock:
                hit = self._parsed.get(str(path))
            if hit is not None and hit[0] == sig:
                return hit[1]
            try:
                reg: ProjectRegistry | None = ProjectRegistry.load(path)
            except RegistryError as exc:
                log.warning("ignoring the project registry: %s", exc)
                reg = None
            with self._lock:
                self._parsed[str(path)] = (sig, reg)
            return reg
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
