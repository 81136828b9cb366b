"""Where a hit sits: the enclosing definition (code) or section (docs).

Definitions come from :mod:`ast`; unparsable Python falls back to an
indentation scan; docs use the shared heading rules of
:mod:`pycsamt_lsp.text.markup`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from pycsamt_lsp.devsearch.files import PY_SUFFIXES
from pycsamt_lsp.pyast.signatures import parse_quietly
from pycsamt_lsp.text.markup import is_rst_adornment, md_heading

__all__ = ["Sym", "enclosing", "py_symbols"]


@dataclass(frozen=True)
class Sym:
    """A def or class of a Python file with its line span (1-based): ``start``
    includes decorators, ``sig_end`` ends the signature.
    """

    name: str  # qualified: Cls.method
    kind: str
    start: int  # first decorator line
    line: int  # the def/class line
    end: int
    sig_end: int
    node: ast.AST


def py_symbols(text: str) -> list[Sym] | None:
    """Every def/class with its span, from :mod:`ast`; None when it does not parse."""
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: list[Sym] = []

    def walk(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = f"{prefix}.{child.name}" if prefix else child.name
                is_cls = isinstance(child, ast.ClassDef)
                kind = "class" if is_cls else ("method" if in_class else "function")
                if isinstance(child, ast.AsyncFunctionDef):
                    kind = f"async {kind}"
                start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                body0 = child.body[0].lineno if child.body else child.lineno
                sig_end = body0 - 1 if body0 > child.lineno else child.lineno
                out.append(
                    Sym(
                        q,
                        kind,
                        start,
                        child.lineno,
                        child.end_lineno or child.lineno,
                        sig_end,
                        child,
                    )
                )
                walk(child, q, is_cls)
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                walk(child, prefix, in_class)

    walk(tree, "", False)
    return out


_DEF_LINE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)")


def enclosing(
    rel: str, lines: list[str], syms: list[Sym] | None, line: int
) -> dict | None:
    """The innermost def/class (code) or section heading (docs) around *line*."""
    if syms is not None:
        best = None
        for s in syms:
            if s.start <= line <= s.end and (best is None or s.start >= best.start):
                best = s
        if best is None:
            return None
        return {
            "name": best.name,
            "kind": best.kind,
            "line_start": best.line,
            "line_end": best.end,
        }
    if rel.endswith(PY_SUFFIXES):  # unparsable Python: indentation scan
        names: list[str] = []
        limit: int | None = None
        for j in range(line - 1, -1, -1):
            text = lines[j]
            if not text.strip():
                continue
            indent = len(text) - len(text.lstrip())
            m = _DEF_LINE.match(text)
            if m and (limit is None or indent < limit):
                names.insert(0, m.group(3))
                limit = indent
            elif limit is None or indent < limit:
                limit = indent
            if limit == 0:
                break
        return (
            {
                "name": ".".join(names),
                "kind": "definition",
                "line_start": None,
                "line_end": None,
            }
            if names
            else None
        )
    for j in range(min(line, len(lines)) - 1, -1, -1):
        if heading := md_heading(lines[j], indented=True):
            return {
                "name": heading[1],
                "kind": "section",
                "line_start": j + 1,
                "line_end": None,
            }
        if (
            j + 1 < len(lines)
            and lines[j].strip()
            and is_rst_adornment(lines[j + 1])
            and len(lines[j + 1].strip()) >= len(lines[j].strip())
        ):
            return {
                "name": lines[j].strip(),
                "kind": "section",
                "line_start": j + 1,
                "line_end": None,
            }
    return None
