"""Python files into symbol chunks, by ``ast`` (never imported or executed).

One chunk per module docstring, per public top-level function and class,
per documented module constant, and per public method (plus ``__init__``) of
each top-level class. Indexing by symbol keeps what a user needs to cite and
call a thing: which class, which function, which parameters.
"""

from __future__ import annotations

import ast

from pycsamt_lsp.chunking.chunk import Chunk
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.pyast.docstrings import docstring
from pycsamt_lsp.pyast.signatures import format_params, params_of, signature_of
from pycsamt_lsp.pyast.signatures import unparse as _unparse

__all__ = [
    "chunk_python",
    "format_params",
    "module_name",
    "params_of",
    "python_chunks",
    "signature_of",
]

#: Very long bodies are cut so one function cannot dominate term counts.
MAX_CODE_CHARS = 4000


def module_name(rel: str) -> str:
    """``pycsamt/emtools/ss.py`` -> ``pycsamt.emtools.ss`` (``__init__`` dropped)."""
    p = rel
    for suffix in ("/__init__.py", "/__init__.pyi"):
        if p.endswith(suffix):
            return p[: -len(suffix)].replace("/", ".")
    for suffix in (".py", ".pyi"):
        if p.endswith(suffix):
            p = p[: -len(suffix)]
    return p.strip("/").replace("/", ".")


class _Source:
    """Source text of nodes by position: much cheaper than ``ast.unparse``."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __call__(self, node: ast.AST | None) -> str | None:
        if node is None:
            return None
        try:
            l0, l1 = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
            c0, c1 = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
            if l0 == l1:
                line = self.lines[l0]
                if line.isascii():
                    return line[c0:c1]
                return line.encode("utf-8")[c0:c1].decode("utf-8", "replace")
            parts = [ln.encode("utf-8") for ln in self.lines[l0 : l1 + 1]]
            parts[-1] = parts[-1][:c1]
            parts[0] = parts[0][c0:]
            return " ".join(p.decode("utf-8", "replace").strip() for p in parts)
        except (AttributeError, IndexError, TypeError):
            return _unparse(node)


def _class_init(node: ast.ClassDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for sub in node.body:
        if (
            isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef))
            and sub.name == "__init__"
        ):
            return sub
    return None


class _FileChunker:
    """Holds one file's context while its chunks are made."""

    def __init__(
        self, rel: str, source: str, tree: ast.Module, profile: Profile
    ) -> None:
        self.rel = rel
        self.lines = source.splitlines()
        self.tree = tree
        self.profile = profile
        self.module = module_name(rel)
        self.priority = profile.priority_for(rel)
        self.chunks: list[Chunk] = []
        #: per chunk, the node whose whole docstring its text holds, or None
        self.doc_nodes: list[ast.AST | None] = []
        self.text = _Source(self.lines)

    def code(self, node: ast.AST) -> str:
        start = getattr(node, "lineno", 1)
        end = getattr(node, "end_lineno", start) or start
        code = "\n".join(self.lines[start - 1 : end])
        if len(code) > MAX_CODE_CHARS:
            code = code[:MAX_CODE_CHARS] + "\n# ... (truncated)"
        return code

    def add(
        self,
        kind: str,
        symbol: str,
        node: ast.AST,
        doc: str,
        meta: dict,
        doc_node: ast.AST | None = None,
    ) -> None:
        start = getattr(node, "lineno", 1)
        end = getattr(node, "end_lineno", start) or start
        sig = meta.get("signature") or symbol.rsplit(".", 1)[-1]
        text = (
            f"Symbol: {symbol}\nSignature: {sig}\nFile: {self.rel}\n\n"
            f"Docstring:\n{doc}\n\nCode:\n{self.code(node)}"
        )
        meta.update(line_start=start, line_end=end, docstring=doc)
        self.chunks.append(
            Chunk(
                id=f"{self.rel}:{start}:{end}",
                text=text,
                source_path=self.rel,
                kind=kind,
                symbol=symbol,
                workflow=self.profile.chunk_workflow(self.rel, symbol, doc),
                priority=self.priority,
                metadata=meta,
            )
        )
        self.doc_nodes.append(doc_node)

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, qual: str, kind: str
    ) -> None:
        params = params_of(node, text=self.text)
        doc = docstring(node)
        self.add(
            kind,
            f"{self.module}.{qual}",
            node,
            doc or "",
            {
                "name": node.name,
                "signature": signature_of(node, self.text, params),
                "params": params,
                "returns": self.text(node.returns),
                "decorators": [
                    d for d in (self.text(x) for x in node.decorator_list) if d
                ],
            },
            node if doc is not None else None,
        )

    def klass(self, node: ast.ClassDef) -> None:
        init = _class_init(node)
        doc = docstring(node)
        self.add(
            "python_symbol",
            f"{self.module}.{node.name}",
            node,
            doc or "",
            {
                "name": node.name,
                "signature": signature_of(node, self.text),
                "params": params_of(init, text=self.text) if init else [],
                "returns": None,
                "bases": [b for b in (self.text(x) for x in node.bases) if b],
                "decorators": [
                    d for d in (self.text(x) for x in node.decorator_list) if d
                ],
            },
            node if doc is not None else None,
        )
        for sub in node.body:
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                not sub.name.startswith("_") or sub.name == "__init__"
            ):
                self.function(sub, f"{node.name}.{sub.name}", "python_method")

    def constant(self, node: ast.Assign | ast.AnnAssign, doc: str) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names or names[0].startswith("_"):
            return
        self.add(
            "python_symbol",
            f"{self.module}.{names[0]}",
            node,
            doc,
            {
                "name": names[0],
                "signature": names[0],
                "params": [],
                "returns": None,
                "annotation": self.text(getattr(node, "annotation", None)),
            },
        )

    def run(self) -> list[Chunk]:
        mod_doc = docstring(self.tree)
        if mod_doc:
            n_lines = max(len(self.lines), 1)
            self.chunks.append(
                Chunk(
                    id=f"{self.rel}:module",
                    text=f"Module: {self.module}\nFile: {self.rel}\n\n{mod_doc}",
                    source_path=self.rel,
                    kind="module_doc",
                    symbol=self.module,
                    workflow=self.profile.chunk_workflow(
                        self.rel, self.module, mod_doc
                    ),
                    priority=self.priority,
                    metadata={
                        "line_start": 1,
                        "line_end": n_lines,
                        "docstring": mod_doc,
                    },
                )
            )
            self.doc_nodes.append(self.tree)
        body = self.tree.body
        for i, node in enumerate(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not node.name.startswith("_"):
                    self.function(node, node.name, "python_symbol")
            elif isinstance(node, ast.ClassDef):
                self.klass(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and i + 1 < len(body):
                nxt = body[i + 1]
                if (
                    isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                ):
                    self.constant(node, nxt.value.value.strip())
        return self.chunks


def chunk_python(
    rel: str, source: str, profile: Profile, tree: ast.Module | None = None
) -> list[Chunk]:
    """Chunks of one Python file; raises ``SyntaxError`` when it does not parse."""
    return python_chunks(rel, source, profile, tree)[0]


def python_chunks(
    rel: str, source: str, profile: Profile, tree: ast.Module | None = None
) -> tuple[list[Chunk], list[ast.AST | None]]:
    """:func:`chunk_python`'s chunks and, per chunk, the node whose whole
    docstring its text holds (or None), for ``chunking.masking.masked``."""
    if tree is None:
        tree = ast.parse(source, filename=rel)
    chunker = _FileChunker(rel, source, tree, profile)
    return chunker.run(), chunker.doc_nodes
