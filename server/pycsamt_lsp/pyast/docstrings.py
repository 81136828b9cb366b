"""``ast.get_docstring``, once per node and faster (issue 18).

A build worker asks for the same docstrings twice (the chunker, then the
package model from the same tree) and ``inspect.cleandoc`` loops over every
line in Python: 16k docstrings were 0.7 s of a sdist build's worker CPU.
:func:`docstring` gives exactly ``ast.get_docstring(node)`` (clean=True),
computed once per node (kept on the node) by list comprehensions.
"""

from __future__ import annotations

import ast
import sys

__all__ = ["cleandoc", "docstring", "known_clean", "mark_clean"]

_ATTR = "_pycsamt_docstring"
_CLEAN = "_pycsamt_docstring_clean"
_DOC_OWNERS = (ast.AsyncFunctionDef, ast.FunctionDef, ast.ClassDef, ast.Module)


def cleandoc(doc: str) -> str:
    """``inspect.cleandoc(doc)``, same result, fewer Python-level steps."""
    lines = doc.expandtabs().split("\n")
    if len(lines) == 1:
        return lines[0].lstrip()
    rest = lines[1:]
    margin = min(
        [
            len(ln) - len(s)
            for ln, s in zip(rest, [ln.lstrip() for ln in rest], strict=True)
            if s
        ],
        default=sys.maxsize,
    )
    out = [lines[0].lstrip()]
    out += [ln[margin:] for ln in rest] if margin < sys.maxsize else rest
    end = len(out)
    while end and not out[end - 1]:
        end -= 1
    start = 0
    while start < end and not out[start]:
        start += 1
    return "\n".join(out[start:end])


def docstring(node: ast.AST) -> str | None:
    """``ast.get_docstring(node)``: the cleaned docstring or None (a
    ``TypeError`` for a node that cannot have one, like the original)."""
    try:
        return node.__dict__[_ATTR]
    except KeyError:
        pass
    if not isinstance(node, _DOC_OWNERS):
        raise TypeError(f"{type(node).__name__!r} can't have docstrings")
    body = node.body
    doc = None
    if body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            doc = cleandoc(value.value)
    node.__dict__[_ATTR] = doc
    return doc


def mark_clean(node: ast.AST) -> None:
    """Record that :func:`docstring` of *node* holds nothing secret masking
    would change: the chunker found no trigger in a chunk text that holds it
    whole (``chunking.masking.masked``), so the package model, reading the
    same tree next, does not scan it again (issue 18)."""
    node.__dict__[_CLEAN] = True


def known_clean(node: ast.AST) -> bool:
    """Whether :func:`mark_clean` was called for *node*."""
    return node.__dict__.get(_CLEAN, False)
