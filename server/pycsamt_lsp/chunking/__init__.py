"""Chunkers: Python by ``ast``, docs by headings, recipes; one schema for all."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.chunking.chunk import CHUNK_KINDS, Chunk, FileChunks

if TYPE_CHECKING:
    from pycsamt_lsp.chunking.incremental import TreeCache

__all__ = ["CHUNK_KINDS", "Chunk", "FileChunks", "chunk_file"]


def chunk_file(
    rel: str, data: bytes, profile: Any, trees: TreeCache | None = None
) -> FileChunks:
    """Chunk one corpus file by its suffix; never raises for bad content.

    Undecodable or unparsable files produce no chunks and an ``error`` the
    caller logs and counts. With *trees* (a workspace refreshing saved
    files), a module parsed recently is re-parsed in its changed statements
    only (:mod:`.incremental`).
    """
    # imported here: loading an index needs the schema (``Chunk``) only, and
    # the chunkers and secret patterns cost a query process ~20 ms (issue 18)
    from pycsamt_lsp.chunking.docs import chunk_doc
    from pycsamt_lsp.chunking.incremental import parse_module
    from pycsamt_lsp.chunking.masking import masked
    from pycsamt_lsp.chunking.python import python_chunks
    from pycsamt_lsp.index.heap import paused_gc

    try:
        # utf-8-sig: a BOM is not content (ast.parse refused the U+FEFF)
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileChunks([], None, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    if "\x00" in text:
        return FileChunks([], None, "binary content (NUL byte)")
    if rel.endswith(".py"):
        with paused_gc():  # a syntax tree is acyclic: no collections meanwhile
            try:
                tree = (
                    ast.parse(text, filename=rel)
                    if trees is None
                    else parse_module(text, rel, trees)[0]
                )
            except (SyntaxError, ValueError) as exc:
                return FileChunks([], None, f"syntax error: {exc}")
            except (RecursionError, MemoryError) as exc:  # one deep expression
                return FileChunks([], None, f"too deeply nested to parse: {exc}")
            try:
                chunks, doc_nodes = python_chunks(rel, text, profile, tree)
            except RecursionError:
                return FileChunks([], None, "too deeply nested to chunk")
            # docstrings found clean here are not scanned again by the model
            return FileChunks(masked(chunks, python=True, doc_nodes=doc_nodes), tree)
    recipe_prefix = profile.recipe_dir.rstrip("/") + "/"
    kind = "recipe" if rel.startswith(recipe_prefix) else "doc_section"
    return FileChunks(_masked(chunk_doc(rel, text, profile, kind=kind), python=False))


def _masked(chunks: list[Chunk], *, python: bool) -> list[Chunk]:
    """:func:`.masking.masked` (the name other modules imported first)."""
    from pycsamt_lsp.chunking.masking import masked

    return masked(chunks, python=python)
