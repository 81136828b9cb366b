"""One parameter extractor (``pyast.signatures.params_of``), in parity with
the package model's and developer search's old extractors."""

from __future__ import annotations

import ast
from pathlib import Path

from pycsamt_lsp.chunking.python import format_params as chunk_format_params
from pycsamt_lsp.chunking.python import params_of as chunk_params_of
from pycsamt_lsp.pyast.signatures import (
    def_header,
    format_params,
    params_of,
    signature_of,
    unparse,
)

SRC = """
def f(a, /, b: int = 1, *args: str, c, d=2, **kw) -> bool: ...
async def g(self, x=lambda y: y): ...
def h(): ...
class C(B, metaclass=M):
    def m(cls, v: "T" = None): ...
"""


def old_model_params(args: ast.arguments) -> list[dict]:
    """The package model's extractor before it called params_of (verbatim logic)."""
    out = []
    positional = [*args.posonlyargs, *args.args]
    n_req = len(positional) - len(args.defaults)
    for i, a in enumerate(positional):
        out.append(
            {
                "name": a.arg,
                "kind": "positional_only"
                if i < len(args.posonlyargs)
                else "positional_or_keyword",
                "default": unparse(args.defaults[i - n_req]) if i >= n_req else None,
                "annotation": unparse(a.annotation),
            }
        )
    if args.vararg:
        out.append(
            {
                "name": args.vararg.arg,
                "kind": "var_positional",
                "default": None,
                "annotation": unparse(args.vararg.annotation),
            }
        )
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        out.append(
            {
                "name": a.arg,
                "kind": "keyword_only",
                "default": unparse(d),
                "annotation": unparse(a.annotation),
            }
        )
    if args.kwarg:
        out.append(
            {
                "name": args.kwarg.arg,
                "kind": "var_keyword",
                "default": None,
                "annotation": unparse(args.kwarg.annotation),
            }
        )
    return out


def old_devsearch_signature(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [
            ast.unparse(k) for k in node.keywords
        ]
        return (
            f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"
        )
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){ret}"


def _defs(tree: ast.AST):
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]


def _corpus_defs():
    pkg = Path(__file__).resolve().parents[1] / "server" / "pycsamt_lsp"
    for path in sorted(pkg.rglob("*.py")):
        yield from _defs(ast.parse(path.read_text(encoding="utf-8")))


def test_chunking_uses_the_shared_extractor():
    assert chunk_params_of is params_of and chunk_format_params is format_params


def test_parity_with_the_model_and_devsearch_on_real_code():
    n = 0
    for node in [*_defs(ast.parse(SRC)), *_corpus_defs()]:
        assert def_header(node) == old_devsearch_signature(node)
        if isinstance(node, ast.ClassDef):
            continue
        assert params_of(node.args, drop_self=False) == old_model_params(node.args)
        n += 1
    assert n > 300


def test_kinds_defaults_and_rendering():
    f, g, _h, _c, m = _defs(ast.parse(SRC))
    ps = params_of(f)
    assert [(p["name"], p["kind"]) for p in ps] == [
        ("a", "positional_only"),
        ("b", "positional_or_keyword"),
        ("args", "var_positional"),
        ("c", "keyword_only"),
        ("d", "keyword_only"),
        ("kw", "var_keyword"),
    ]
    assert format_params(ps) == "a, /, b: int = 1, *args: str, c, d=2, **kw"
    assert signature_of(f) == "f(a, /, b: int=1, *args: str, c, d=2, **kw) -> bool"
    assert [p["name"] for p in params_of(g)] == ["x"]
    assert [p["name"] for p in params_of(g, drop_self=False)] == ["self", "x"]
    assert signature_of(m, params=params_of(m)) == "m(cls, v: 'T' = None)"
