"""JSONL eval suites: loading, checking and the default set.

One record per line (``#`` comments and blank lines skipped); the record
format is described in :mod:`pycsamt_lsp.evals.harness`. A malformed line is
a :class:`~pycsamt_lsp.errors.SuiteError` naming the file and line, never a
silently skipped record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycsamt_lsp.convert import structure
from pycsamt_lsp.errors import SuiteError

__all__ = [
    "SuiteError",
    "SuiteRecord",
    "default_suite_paths",
    "load_suite",
    "load_suites",
]


@dataclass
class SuiteRecord:
    """The scored fields of a suite record (others are carried, not checked)."""

    query: str = field(
        metadata={
            "nonblank": True,
            "message": "record needs a non-empty string 'query'",
        }
    )
    expected_symbols: list[str] | None = None
    must_not_contain: list[str] | None = None
    expected_workflow: str | None = None
    expected_retrieval_workflow: str | None = None
    expected_intent: str | None = None
    expected_line: str | None = None


def load_suite(path: str | Path) -> list[dict[str, Any]]:
    """Load one JSONL suite.

    Blank lines and lines whose first non-blank character is ``#`` are
    skipped. Every other line must be a JSON object with a non-empty string
    ``query``; list fields (``expected_symbols``, ``must_not_contain``) must
    be lists of strings and the expectation fields strings or null.
    Anything else raises :class:`SuiteError` naming the file and line.
    """
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"{p}: cannot read suite: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{p}: suite is not UTF-8: {exc}") from exc
    out: list[dict[str, Any]] = []
    for lineno, line in enumerate(raw.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        where = f"{p}:{lineno}"
        try:
            rec = json.loads(s)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{where}: malformed JSON: {exc.msg}") from exc
        _check_record(rec, where)
        out.append(rec)
    return out


def _check_record(rec: Any, where: str) -> None:
    structure(SuiteRecord, rec, unknown="ignore", error=SuiteError, where=f"{where}: ")


def load_suites(paths: Iterable[str | Path]) -> dict[str, list[dict[str, Any]]]:
    """Load several suites, keyed by a display name (the file name, made
    unique with its parent folder when two files share a name)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for p in map(Path, paths):
        name = p.name
        if name in out:
            name = f"{p.parent.name}/{p.name}"
        out[name] = load_suite(p)
    return out


def default_suite_paths(
    corpus_root: str | Path | None,
    project_root: str | Path | None,
    *,
    package: str = "pycsamt",
) -> list[Path]:
    """The suites to run by default.

    The corpus's bundled ``<package>/assistant/evals/suites/*.jsonl`` when
    present, then this project's ``suites/*.jsonl``, ``suites/tuning/*.jsonl``,
    ``suites/test/*.jsonl`` and ``tests/suites/*.jsonl``
    (each group sorted by name, duplicates removed).
    """
    dirs: list[Path] = []
    if corpus_root is not None:
        dirs.append(Path(corpus_root) / package / "assistant" / "evals" / "suites")
    if project_root is not None:
        suites = Path(project_root) / "suites"
        # issue 14: the project's own suites are split into tuning/ and test/
        dirs += [suites, suites / "tuning", suites / "test"]
        dirs.append(Path(project_root) / "tests" / "suites")
    seen: set[Path] = set()
    out: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.jsonl")):
            key = f.resolve()
            if f.is_file() and key not in seen:
                seen.add(key)
                out.append(f)
    return out
