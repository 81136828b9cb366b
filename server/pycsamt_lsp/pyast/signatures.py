"""Signatures and parameters of Python definitions, from :mod:`ast` only.

Why one module: chunking (the symbol chunks), the package model (call
checks and signature help), the symbol cards and developer search each
extracted parameters from ``ast.arguments`` by hand. The one extractor is
:func:`params_of`; :func:`format_params` and :func:`signature_of` render
it for chunks and cards, :func:`def_header` the source-like ``def`` line
developer search shows. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable

__all__ = [
    "Render",
    "def_header",
    "format_params",
    "params_of",
    "parse_quietly",
    "signature_of",
    "unparse",
]

#: Renders an expression node as text (``None`` for no node).
Render = Callable[[ast.AST | None], "str | None"]


def unparse(node: ast.AST | None) -> str | None:
    """``ast.unparse`` of *node*; ``None`` for no node or a node it cannot render."""
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd nodes never break indexing
        return None


def parse_quietly(source: str | bytes) -> ast.Module:
    """``ast.parse`` without the SyntaxWarnings of someone else's source."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def params_of(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.arguments,
    *,
    drop_self: bool = True,
    text: Render = unparse,
) -> list[dict]:
    """Parameters with kind, default and annotation, in declaration order.

    Each is ``{"name", "kind", "default", "annotation"}`` with *kind* one of
    ``positional_only``, ``positional_or_keyword``, ``var_positional``,
    ``keyword_only``, ``var_keyword``. *text* renders an expression node
    (source slicing when the file's lines are at hand, ``ast.unparse``
    otherwise); *drop_self* leaves out a leading ``self`` / ``cls``.
    """
    _unparse = text  # local rebinding keeps the body readable
    a = node if isinstance(node, ast.arguments) else node.args
    out: list[dict] = []
    positional = [(p, "positional_only") for p in a.posonlyargs] + [
        (p, "positional_or_keyword") for p in a.args
    ]
    first_default = len(positional) - len(a.defaults)
    for i, (p, kind) in enumerate(positional):
        if drop_self and i == 0 and p.arg in ("self", "cls"):
            continue
        default = (
            _unparse(a.defaults[i - first_default]) if i >= first_default else None
        )
        out.append(
            {
                "name": p.arg,
                "kind": kind,
                "default": default,
                "annotation": _unparse(p.annotation),
            }
        )
    if a.vararg:
        out.append(
            {
                "name": a.vararg.arg,
                "kind": "var_positional",
                "default": None,
                "annotation": _unparse(a.vararg.annotation),
            }
        )
    for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(
            {
                "name": p.arg,
                "kind": "keyword_only",
                "default": _unparse(d),
                "annotation": _unparse(p.annotation),
            }
        )
    if a.kwarg:
        out.append(
            {
                "name": a.kwarg.arg,
                "kind": "var_keyword",
                "default": None,
                "annotation": _unparse(a.kwarg.annotation),
            }
        )
    return out


def format_params(params: list[dict], *, with_self: bool = False) -> str:
    """``a, b: int = 1, *args, c=2, **kw`` from :func:`params_of` output."""
    out: list[str] = ["self"] if with_self else []
    saw_star = False
    for i, p in enumerate(params):
        kind = p["kind"]
        if kind == "keyword_only" and not saw_star:
            out.append("*")
            saw_star = True
        name = p["name"]
        if kind == "var_positional":
            name, saw_star = "*" + name, True
        elif kind == "var_keyword":
            name = "**" + name
        if p.get("annotation"):
            name += f": {p['annotation']}"
        if p.get("default") is not None:
            name += f" = {p['default']}" if p.get("annotation") else f"={p['default']}"
        out.append(name)
        nxt = params[i + 1]["kind"] if i + 1 < len(params) else None
        if kind == "positional_only" and nxt != "positional_only":
            out.append("/")
    return ", ".join(out)


def signature_of(
    node: ast.AST, text: Render = unparse, params: list[dict] | None = None
) -> str:
    """``name(args) -> ret`` for a def, ``class Name(bases)`` for a class."""
    _unparse = text
    name = getattr(node, "name", "")
    if isinstance(node, ast.ClassDef):
        bases = [b for b in (_unparse(x) for x in node.bases) if b]
        return f"class {name}({', '.join(bases)})" if bases else f"class {name}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if params is None:
            args = _unparse(node.args) or "..."
        else:
            first = (node.args.posonlyargs + node.args.args)[:1]
            with_self = bool(first) and first[0].arg in ("self", "cls")
            args = format_params(params, with_self=with_self)
            if with_self and first[0].arg == "cls":
                args = "cls" + args[4:]
        ret = _unparse(node.returns)
        prefix = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
        return f"{prefix}{name}({args})" + (f" -> {ret}" if ret else "")
    return name


def def_header(node: ast.AST) -> str:
    """The definition line as written: ``def f(a, b=1) -> int`` / ``class C(B)``.

    Unlike :func:`signature_of` it keeps the ``def`` keyword and class
    keywords (``metaclass=...``): what developer search shows as code.
    """
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [
            ast.unparse(k) for k in node.keywords
        ]
        return (
            f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"
        )
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){ret}"
