"""Server settings: one typed, defaulted tree.

Read alike from ``initializationOptions``, ``workspace/configuration``
(section ``pycsamt``) and ``workspace/didChangeConfiguration``. Keys are the
client's camelCase (``corpusRoot``); nested VS Code sections such as
``{"openai": {"model": ...}}`` and ``{"diagnostics": {"severity": ...}}`` are
accepted too. An invalid value is reported and replaced by its default,
never fatal. Precedence: defaults < initializationOptions < configuration.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["LOG_LEVELS", "SEVERITIES", "Settings"]

LOG_LEVELS = ("error", "warning", "info", "debug")
SEVERITIES = ("error", "warning", "information", "hint")
WATCH_MODES = ("auto", "client", "server", "off")

_ALIASES = MappingProxyType(
    {
        ("openai", "model"): "openaiModel",
        ("openai", "modelRouting"): "openaiModelRouting",
        ("diagnostics", "severity"): "diagnosticsSeverity",
        ("server", "python"): "serverPython",
    }
)


@dataclass(frozen=True)
class Settings:
    """Everything a client may configure; defaults match ``package.json``."""

    corpusRoot: str | None = None  # noqa: N815 - the wire format is camelCase
    profile: str = "pycsamt"
    resultCount: int = 10  # noqa: N815
    dense: bool = False
    openaiModel: str = "gpt-4o-mini"  # noqa: N815
    openaiModelRouting: bool = False  # noqa: N815 - with a key: the model routes
    logLevel: str = "info"  # noqa: N815
    diagnosticsSeverity: str = "error"  # noqa: N815
    showSyntaxErrors: bool = False  # noqa: N815 - the user's Python server has them
    watch: str = "auto"
    debounceMs: int = 250  # noqa: N815
    indexDir: str | None = None  # noqa: N815

    def merged(self, raw: Any) -> tuple[Settings, list[str]]:
        """These settings updated from a client object; returns problems found."""
        problems: list[str] = []
        if raw is None:
            return self, problems
        if not isinstance(raw, dict):
            return self, [f"settings must be an object, got {type(raw).__name__}"]
        flat = dict(raw)
        if isinstance(flat.get("pycsamt"), dict):  # a whole configuration tree
            flat = dict(flat["pycsamt"])
        nested = {outer: flat.pop(outer, None) for outer in {o for o, _ in _ALIASES}}
        for (outer, inner), key in _ALIASES.items():
            sub = nested[outer]  # one section may hold several settings
            if isinstance(sub, dict) and inner in sub:
                flat[key] = sub[inner]
        values: dict[str, Any] = {}
        fields = {f.name: f for f in dataclasses.fields(self)}
        for key, value in flat.items():
            f = fields.get(key)
            if f is None:
                continue  # tolerate keys meant for the client (serverPython, ...)
            ok, why = _valid(key, value, f)
            if ok:
                values[key] = (
                    value
                    if value != "" or key not in ("corpusRoot", "indexDir")
                    else None
                )
            else:
                problems.append(f"setting {key!r}: {why}; using {getattr(self, key)!r}")
        return dataclasses.replace(self, **values), problems


def _valid(key: str, value: Any, f: dataclasses.Field) -> tuple[bool, str]:
    if key in ("corpusRoot", "indexDir"):
        return (value is None or isinstance(value, str)), "must be a path string"
    if key in ("resultCount", "debounceMs"):
        lo, hi = (1, 200) if key == "resultCount" else (0, 10_000)
        ok = (
            isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
        )
        return ok, f"must be an integer from {lo} to {hi}"
    if isinstance(f.default, bool):  # every boolean setting
        return isinstance(value, bool), "must be true or false"
    if key == "logLevel":
        return value in LOG_LEVELS, f"must be one of {', '.join(LOG_LEVELS)}"
    if key == "diagnosticsSeverity":
        return value in SEVERITIES, f"must be one of {', '.join(SEVERITIES)}"
    if key == "watch":
        return value in WATCH_MODES, f"must be one of {', '.join(WATCH_MODES)}"
    return isinstance(value, str) and bool(value), "must be a non-empty string"
