"""What the validator reports: a :class:`Problem` with its quick :class:`Fix` es.

Plain records shared by the analysis (:mod:`pycsamt_lsp.analysis.checks`),
its two views (:mod:`pycsamt_lsp.analysis.validate`) and the LSP layer that
turns them into diagnostics and code actions. Positions are 0-based lines and
code-point columns of the checked text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")


@dataclass
class Edit:
    """Replace ``[line:col, end_line:end_col)`` with ``new_text`` (0-based)."""

    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (inside a :class:`Fix`'s ``edits``)."""
        return {
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "new_text": self.new_text,
        }


@dataclass
class Fix:
    """One quick fix: the real symbol it switches to and the edits it makes."""

    title: str
    candidate: str
    edits: list[Edit]
    #: Text for exactly the problem's range when one edit there suffices.
    replacement: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, its edits included (a diagnostic's ``data``)."""
        return {
            "title": self.title,
            "candidate": self.candidate,
            "edits": [e.to_dict() for e in self.edits],
            "replacement": self.replacement,
        }


@dataclass
class Problem:
    """A diagnostic.

    ``code``: unknown-module, unknown-name, unknown-keyword, unverifiable or
    syntax-error. The range is exactly the offending name (the missing
    segment of a dotted module, the imported name, the attribute, the
    keyword). ``message`` is for the editor and names the closest real
    symbols; ``summary`` is the phrasing of :func:`validate_generated_code`.
    ``dotted`` is what was checked. ``candidates`` (at most 3) are real
    dotted symbols, except for unknown-keyword where they are parameter
    names of the callee. ``fixes`` holds one :class:`Fix` per candidate that
    can be applied mechanically; its ``replacement`` is set when a single
    edit of exactly the problem's range suffices, otherwise use its
    ``edits`` (e.g. ``from pkg import bad`` -> ``from pkg.sub import Real``
    rewrites the statement).
    """

    code: str
    severity: str
    message: str
    line: int
    col: int
    end_line: int
    end_col: int
    dotted: str = ""
    candidates: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, fixes included (what reports and tools serialise)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "dotted": self.dotted,
            "candidates": list(self.candidates),
            "fixes": [f.to_dict() for f in self.fixes],
            "summary": self.summary,
        }
