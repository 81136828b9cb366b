"""Survey lines: the project registry the router resolves line names against.

Two file formats describe the same thing, a project and its survey lines:

- the workspace's ``.pycsamt/projects.toml`` (this project's format: ``[project]``,
  ``[lines.<NAME>]`` with ``edi_dir``, ``[aliases]``), and
- the package's own YAML registries, ``projects/*_project_registry.yml`` at a
  checkout's root (``project: {name, type, default_output_root}``,
  ``lines: {L18PLT: {edi_dir, station_pattern, sort_by, default_workflows}}``,
  ``aliases: {willy18: L18PLT}``).

Both load into one :class:`LineRegistry`. A registry file that cannot be read
or is malformed is skipped with one warning naming the file and the reason;
routing then works without it (no line context), it never fails a request.
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pycsamt_lsp.errors import RegistryFileError

__all__ = [
    "LineRegistry",
    "RegistryFileError",
    "SurveyLine",
    "discover_registry_files",
    "load_line_registry",
    "read_registry_file",
]

log = logging.getLogger(__name__)

WORKSPACE_REGISTRY = Path(".pycsamt") / "projects.toml"
# The package's blank template (its own loader skips it too): its "LINE_A" /
# alias "a" would otherwise turn the word "a" into a survey line.
_TEMPLATE_NAMES = ("example_project_registry.yml", "example_project_registry.yaml")
_LINE_TOKEN = re.compile(r"[A-Za-z]{1,3}[0-9]{1,4}[A-Za-z]{0,4}")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class SurveyLine:
    """One survey line and its processing defaults, as the registry states them."""

    name: str
    edi_dir: str
    station_pattern: str | None = None
    sort_by: str = "lon"
    default_workflows: tuple[str, ...] = ()
    output_root: str | None = None
    project: str | None = None
    source: str = ""
    # the folder a relative edi_dir is resolved against (the workspace or
    # checkout root: the parent of .pycsamt/ or of projects/)
    base: str = ""
    # the file's static_shift_defaults / plot_defaults tables, inherited by every line
    static_shift: dict[str, Any] = field(default_factory=dict, compare=False)
    plot: dict[str, Any] = field(default_factory=dict, compare=False)

    def resolve(self) -> dict[str, Any]:
        """Paths and defaults of the line for a plan (same keys as the workspace's
        ``ProjectRegistry.resolve_line``): the EDI folder made absolute, whether it
        exists and how many ``.edi`` files it holds."""
        edi = Path(self.edi_dir).expanduser()
        if not edi.is_absolute() and self.base:
            edi = (Path(self.base) / edi).resolve()
        exists = edi.is_dir()
        return {
            "project": self.project,
            "line": self.name,
            "edi_dir": str(edi),
            "edi_dir_raw": self.edi_dir,
            "exists": exists,
            "n_edi_files": sum(1 for _ in edi.glob("*.edi")) if exists else 0,
            "station_pattern": self.station_pattern,
            "sort_by": self.sort_by,
            "output_root": self.output_root or f"results/{self.name}",
            "default_workflows": list(self.default_workflows),
            "static_shift": dict(self.static_shift),
            "plot": dict(self.plot),
            "registry": self.source,
        }


def _norm(name: str) -> str:
    """``"line l22-plt"`` -> ``"L22PLT"``: the comparable spelling of a line name."""
    s = re.sub(r"^(survey\s+)?line\s+", "", (name or "").strip().lower())
    return re.sub(r"[^a-z0-9]", "", s).upper()


def _shape(name: str) -> str:
    return re.sub(r"[0-9]", "9", re.sub(r"[A-Za-z]", "A", name))


def _parse(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryFileError(f"{path}: unreadable: {exc}") from None
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise RegistryFileError(f"{path}: not valid TOML: {exc}") from None
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = (
                f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            )
            what = getattr(exc, "problem", None) or type(exc).__name__
            raise RegistryFileError(f"{path}: not valid YAML{where}: {what}") from None
    if not isinstance(data, dict):
        raise RegistryFileError(f"{path}: expected a mapping with 'lines'")
    return data


def read_registry_file(path: Path) -> tuple[list[SurveyLine], dict[str, str]]:
    """Lines and aliases of one registry file (TOML or YAML).

    Raises :class:`RegistryFileError` with the file and the first problem.
    """
    data = _parse(path)
    lines = data.get("lines")
    if not isinstance(lines, dict) or not lines:
        raise RegistryFileError(
            f"{path}: needs a 'lines' table with one entry per line"
        )
    project = data.get("project") or {}
    if not isinstance(project, dict):
        raise RegistryFileError(f"{path}: 'project' must be a table")
    out_root = project.get("default_output_root")
    tables = {}
    for key in ("static_shift_defaults", "plot_defaults"):
        value = data.get(key) or {}
        if not isinstance(value, dict):
            raise RegistryFileError(f"{path}: '{key}' must be a table")
        tables[key] = value
    base = (
        path.parent.parent
        if path.parent.name in (".pycsamt", "projects")
        else path.parent
    )
    out: list[SurveyLine] = []
    for name, entry in lines.items():
        if not isinstance(entry, dict):
            raise RegistryFileError(f"{path}: lines.{name} must be a table")
        edi = entry.get("edi_dir")
        if not isinstance(edi, str) or not edi:
            raise RegistryFileError(
                f"{path}: lines.{name}.edi_dir must be a path string"
            )
        wfs = entry.get("default_workflows") or []
        if not isinstance(wfs, list) or not all(isinstance(w, str) for w in wfs):
            raise RegistryFileError(
                f"{path}: lines.{name}.default_workflows must be a list of strings"
            )
        line_out = entry.get("output_root")
        if line_out is None and out_root:
            line_out = f"{out_root}/{name}"
        out.append(
            SurveyLine(
                name=str(name),
                edi_dir=edi,
                station_pattern=entry.get("station_pattern"),
                sort_by=str(entry.get("sort_by") or "lon"),
                default_workflows=tuple(wfs),
                output_root=line_out,
                project=project.get("name"),
                source=str(path),
                base=str(base),
                static_shift=dict(tables["static_shift_defaults"]),
                plot=dict(tables["plot_defaults"]),
            )
        )
    aliases = data.get("aliases") or {}
    if not isinstance(aliases, dict):
        raise RegistryFileError(f"{path}: 'aliases' must be a table")
    return out, {str(k): str(v) for k, v in aliases.items()}


@dataclass
class LineRegistry:
    """Every survey line the router knows, from any number of registry files.

    The first file that names a line wins; ``warnings`` holds one message per
    file that was skipped.
    """

    lines: dict[str, SurveyLine] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._reindex()

    def _reindex(self) -> None:
        self._key: dict[str, str] = {_norm(k): k for k in self.lines}
        self._alias_words: list[tuple[str, str]] = []
        for alias, target in self.aliases.items():
            if target not in self.lines:
                continue
            k = _norm(alias)
            if len(k) >= 3 and k not in self._key:
                self._key[k] = target
            words = " ".join(re.sub(r"[^a-z0-9]+", " ", alias.lower()).split())
            if words:
                self._alias_words.append((words, target))
        self._alias_words.sort(key=lambda p: -len(p[0]))
        # keys long enough and specific enough to be found inside other text
        # ("L22-PLT", "WILLY_DATA/L26PLT") without false hits on short words
        self._embedded = [
            (k, v)
            for k, v in self._key.items()
            if len(k) >= 4 and re.search(r"[A-Z]", k) and re.search(r"[0-9]", k)
        ]
        self._shapes = {_shape(k.upper()) for k in self.lines}
        self._shape_lens = {len(k) for k in self.lines}

    def add_file(self, path: Path) -> bool:
        """Merge one registry file; on error record one warning and return False."""
        try:
            lines, aliases = read_registry_file(path)
        except RegistryFileError as exc:
            msg = f"ignoring the survey-line registry {exc}"
            self.warnings.append(msg)
            log.warning("%s", msg)
            return False
        for line in lines:
            self.lines.setdefault(line.name, line)
        for alias, target in aliases.items():
            self.aliases.setdefault(alias, target)
        self.files.append(str(path))
        self._reindex()
        return True

    def names(self) -> list[str]:
        """Sorted canonical line names."""
        return sorted(self.lines)

    def canonical(self, name: str) -> str | None:
        """Canonical name for a spelling or alias of a line, else None."""
        return self._key.get(_norm(name))

    def get(self, name: str) -> SurveyLine | None:
        """The :class:`SurveyLine` for any spelling of its name."""
        canon = self.canonical(name)
        return self.lines.get(canon) if canon else None

    def resolve(self, name: str) -> dict[str, Any]:
        """:meth:`SurveyLine.resolve` for any spelling of *name*; ``KeyError``
        naming the known lines when the registry has no such line."""
        line = self.get(name)
        if line is None:
            known = ", ".join(self.names()) or "(none)"
            raise KeyError(f"unknown survey line {name!r}; known: {known}")
        return line.resolve()

    def find_line(self, text: str) -> tuple[str | None, str | None]:
        """``(line, unknown)``: the first registry line named anywhere in *text*.

        Looks, in order of position in the text, for a word that is a line's
        name or alias in any case (``l22plt``), then for a name spelled apart
        or inside a path (``L22-PLT``, ``L 26 PLT``, ``WILLY_DATA/L26PLT``).
        ``unknown`` is a word shaped like the registry's names that is not one
        of them (``L99XYZ``), so the caller can say so instead of guessing.
        """
        if not text:
            return None, None
        best: tuple[int, str] | None = None
        unknown: str | None = None
        up = text.upper()
        key = self._key
        for m in _WORD.finditer(up):
            tok = m.group(0)
            canon = key.get(tok)
            if canon is None and "_" in tok:
                canon = next((key[p] for p in tok.split("_") if p in key), None)
            if canon:
                best = (m.start(), canon)
                break
            if (
                unknown is None
                and len(tok) in self._shape_lens
                and _LINE_TOKEN.fullmatch(tok)
                and _shape(tok) in self._shapes
            ):
                unknown = text[m.start() : m.end()]
        # spelled apart / inside other text: compare on the alphanumeric blob
        blob = _NOT_ALNUM.sub("", up)
        for k, canon in self._embedded:
            j = blob.find(k)
            if j < 0:
                continue
            pos = _blob_to_text(up, j)
            if best is None or pos < best[0]:
                best = (pos, canon)
        if best is None and self._alias_words:
            low = " " + " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split()) + " "
            for words, target in self._alias_words:
                short = len(words.replace(" ", "")) <= 2
                probe = f" line {words} " if short else f" {words} "
                if probe in low:
                    return target, None
        if best:
            return best[1], None
        return None, unknown


def _blob_to_text(text: str, j: int) -> int:
    """Index in *text* of the *j*-th alphanumeric character."""
    seen = -1
    for i, c in enumerate(text):
        if c.isalnum():
            seen += 1
            if seen == j:
                return i
    return len(text)


def discover_registry_files(*roots: str | Path | None) -> list[Path]:
    """Registry files under each root: ``.pycsamt/projects.toml``, ``projects/*registry*.yml``.

    The package's blank template (``example_project_registry.yml``) is left out.
    """
    out: list[Path] = []
    for root in roots:
        if not root:
            continue
        base = Path(root).expanduser()
        ws = base / WORKSPACE_REGISTRY
        if ws.is_file():
            out.append(ws)
        proj = base / "projects"
        if proj.is_dir():
            # the package names its registries <survey>_project_registry.yml;
            # other YAML files there (configs) are not registries
            found = [*proj.glob("*registry*.yml"), *proj.glob("*registry*.yaml")]
            for p in sorted(found):
                if p.name not in _TEMPLATE_NAMES and p not in out:
                    out.append(p)
    return out


def load_line_registry(
    *roots: str | Path | None, files: list[str | Path] | None = None
) -> LineRegistry:
    """One :class:`LineRegistry` from the roots' registry files and extra *files*."""
    reg = LineRegistry()
    paths = discover_registry_files(*roots) + [Path(f) for f in files or ()]
    for path in paths:
        reg.add_file(path)
    return reg
