"""Credential values masked in chunks as they are made (issue 19).

Its own module so the incremental re-chunker (:mod:`.incremental`, which
:func:`pycsamt_lsp.chunking.chunk_file` imports) can mask its chunks the
same way without importing the package that dispatches to it (an import
cycle, refused by ``tests/test_architecture.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pycsamt_lsp.chunking.chunk import Chunk

__all__ = ["masked"]


def masked(
    chunks: list[Chunk], *, python: bool, doc_nodes: Sequence[Any] | None = None
) -> list[Chunk]:
    """Credential values masked in each chunk's text and metadata, so
    ``chunks.jsonl`` never stores them and no snippet, answer or search term
    can show them (:mod:`pycsamt_lsp.text.secrets`).

    *doc_nodes*: per chunk, the syntax node whose whole docstring its text
    holds (or None): a chunk text with no trigger marks it clean
    (``pyast.docstrings.mark_clean``; a trigger test finds nothing in a
    part of a text it finds nothing in: words and token shapes never span a
    line end, and the docstring is followed by one)."""
    from pycsamt_lsp.pyast.docstrings import mark_clean
    from pycsamt_lsp.text.secrets import mask_tree, mask_triggered, may_hold_secret

    for i, c in enumerate(chunks):
        if may_hold_secret(c.text):
            new = mask_triggered(c.text, python=python)
            if new != c.text:  # metadata comes from the same lines
                c.text = new
                c.metadata = mask_tree(c.metadata, python=python)  # type: ignore[assignment]
        elif doc_nodes is not None and (node := doc_nodes[i]) is not None:
            mark_clean(node)
    return chunks
