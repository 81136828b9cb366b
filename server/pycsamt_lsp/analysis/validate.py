"""Check code against the static package model: hallucinated imports,
attributes and keyword arguments (DESIGN 6).

One analysis, two views. :func:`find_problems` returns positioned
:class:`Problem` objects for editor diagnostics and quick fixes;
:func:`validate_generated_code` turns the same problems into the seed's
``{"ok", "syntax_ok", "errors", "warnings", "checked"}`` report, phrased the
way pyCSAMT's own validator phrases it (``SyntaxError: ...``, ``Unknown API:
...``, ``<name>: got an unexpected keyword argument 'x'``, ``Dynamic or
unresolved call: ...``, ``Imported binding is reassigned or shadowed: ...``,
``Relative/wildcard import: ...``), with the seed's import message
``'pycsamt' has no attribute or submodule 'static_shift'``.

Errors are reported only for what the model proves absent; what it cannot
verify is a warning; anything outside ``model.package`` and relative imports
are ignored. Nothing is imported or executed.

Positions are 0-based lines and code-point columns of the given text (the
LSP layer converts to UTF-16 if the client needs it).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from typing import Any

from pycsamt_lsp.analysis.checks import _Analysis, _Analyzer
from pycsamt_lsp.analysis.nodeindex import NodeIndex
from pycsamt_lsp.analysis.problems import _LINE_SPLIT, Edit, Fix, Problem
from pycsamt_lsp.model.package import PackageModel

__all__ = [
    "Edit",
    "Fix",
    "NodeIndex",
    "Problem",
    "find_problems",
    "validate_generated_code",
]


#: How many lines an import statement may span when re-parsed on its own.
_MAX_FRAGMENT_LINES = 25


def _syntax_problem(exc: SyntaxError | ValueError, lines: list[str]) -> Problem:
    if isinstance(exc, SyntaxError):
        line = max(0, (exc.lineno or 1) - 1)
        col = max(0, (exc.offset or 1) - 1)
        end_line = max(line, (exc.end_lineno or exc.lineno or 1) - 1)
        end_col = max(0, (exc.end_offset or 0) - 1)
        if (end_line, end_col) <= (line, col):
            end_line = line
            text = lines[line] if line < len(lines) else ""
            end_col = col + 1 if col < len(text) else col
            if end_col == col and col > 0:
                col -= 1
        msg = exc.msg
    else:
        line = col = end_line = end_col = 0
        msg = str(exc)
    return Problem(
        code="syntax-error",
        severity="error",
        message=f"SyntaxError: {msg}",
        line=line,
        col=col,
        end_line=end_line,
        end_col=end_col,
        summary=f"SyntaxError: {exc}",
    )


def _analyse(
    code: str,
    model: PackageModel,
    *,
    compile_check: bool = False,
    rank: Callable[[str, list[str]], list[str]] | None = None,
) -> _Analysis:
    out = _Analysis()
    lines = _LINE_SPLIT.split(code)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        out.syntax_ok = False
        out.problems.append(_syntax_problem(exc, lines))
        _recover(code, lines, exc, model, out, rank)
    else:
        if compile_check:
            try:
                compile(tree, "<generated>", "exec")
            except (SyntaxError, ValueError) as exc:
                out.syntax_ok = False
                out.problems.append(_syntax_problem(exc, lines))
        _Analyzer(model, code, out, rank=rank).run(tree)
    out.problems.sort(key=lambda p: (p.line, p.col, p.code))
    return out


def _recover(
    code: str,
    lines: list[str],
    exc: SyntaxError | ValueError,
    model: PackageModel,
    out: _Analysis,
    rank: Callable[[str, list[str]], list[str]] | None = None,
) -> None:
    """Check what parses around a syntax error: the longest prefix that
    parses gets the full analysis, then every later import statement that
    parses on its own (with its continuation lines) is checked alone."""
    cut = (exc.lineno or 1) - 1 if isinstance(exc, SyntaxError) else 0
    tree = None
    for _ in range(12):
        if cut <= 0:
            cut = 0
            break
        prefix = "\n".join(lines[:cut])
        try:
            tree = ast.parse(prefix)
            break
        except (SyntaxError, ValueError) as inner:
            nxt = (getattr(inner, "lineno", None) or cut) - 1
            cut = min(cut - 1, nxt)
    if tree is not None and cut > 0:
        _Analyzer(model, "\n".join(lines[:cut]), out, rank=rank).run(tree)
    i = cut
    while i < len(lines):
        stripped = lines[i].lstrip()
        if not stripped.startswith(("import ", "from ", "import\t", "from\t")):
            i += 1
            continue
        for k in range(1, min(_MAX_FRAGMENT_LINES, len(lines) - i) + 1):
            chunk = lines[i : i + k]
            text = textwrap.dedent("\n".join(chunk))
            try:
                frag = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            if not frag.body or not all(
                isinstance(s, (ast.Import, ast.ImportFrom)) for s in frag.body
            ):
                break
            indent = len(chunk[0]) - len(chunk[0].lstrip())
            _Analyzer(
                model,
                text,
                out,
                line_offset=i,
                col_offset=indent,
                imports_only=True,
                rank=rank,
            ).run(frag)
            i += k - 1
            break
        i += 1


def find_problems(
    code: str,
    model: PackageModel,
    rank: Callable[[str, list[str]], list[str]] | None = None,
) -> list[Problem]:
    """Positioned problems of ``code`` for editor diagnostics (never raises
    on bad input; a buffer with a syntax error gets one ``syntax-error``
    problem plus the problems of every import that still parses).

    *rank* may reorder the name-alike candidates of a missing name (the
    workspace blends in retrieval over the index)."""
    return _analyse(code, model, rank=rank).problems


def validate_generated_code(code: str, model: PackageModel) -> dict[str, Any]:
    """The seed's report: ``{"ok", "syntax_ok", "errors", "warnings", "checked"}``.

    ``ok`` means no detected errors in the performed checks, not full
    correctness (as in pyCSAMT's validator, which this mirrors).

    Raises :class:`~pycsamt_lsp.errors.CorpusError` when the profile's
    package is not in the corpus at all: an "ok, nothing checked" there would
    be a silent pass for every hallucinated import (issue 17)."""
    if model.package not in model.modules:
        from pycsamt_lsp.errors import CorpusError

        where = f" at {model.root}" if model.root is not None else ""
        raise CorpusError(
            f"package {model.package!r} is not in the corpus{where} (no "
            f"{model.package}/ or src/{model.package}/ folder): check the "
            f"profile's `package` and --root, or write a profile with "
            f"`pycsamt-lsp profile init PACKAGE --root ROOT`"
        )
    if not (code or "").strip():
        return {
            "ok": False,
            "syntax_ok": False,
            "errors": ["SyntaxError: Empty code"],
            "warnings": [],
            "checked": [],
        }
    analysis = _analyse(code, model, compile_check=True)
    errors = [p.summary for p in analysis.problems if p.severity == "error"]
    warnings = [p.summary for p in analysis.problems if p.severity != "error"]
    return {
        "ok": not errors,
        "syntax_ok": analysis.syntax_ok,
        "errors": errors,
        "warnings": warnings,
        "checked": analysis.checked,
    }
