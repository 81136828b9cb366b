"""The chunk schema shared by every chunker (DESIGN 4): :class:`Chunk`, :class:`FileChunks`.

Its own module so the chunkers (``docs``, ``python``, ``pdf``) import the
schema without importing the package that dispatches to them (no cycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pycsamt_lsp.text.jsonenc import json_encoder

__all__ = ["CHUNK_KINDS", "Chunk", "FileChunks"]

#: One encoder for every chunk line: ``json.dumps(..., ensure_ascii=False)``
#: builds a new encoder per call when given options (and ``encode`` a new C
#: encoder per call: :func:`~pycsamt_lsp.text.jsonenc.json_encoder`).
_ENCODE = json_encoder(ensure_ascii=False)

CHUNK_KINDS = (
    "python_symbol",
    "python_method",
    "module_doc",
    "doc_section",
    "recipe",
    "pdf_page",
)


@dataclass(slots=True)
class Chunk:
    """One retrievable unit (DESIGN 4).

    ``id`` is stable for a given file content: ``path:line_start:line_end``
    for code, ``path:module`` for module docs, ``path:secN`` for sections.
    ``metadata`` holds signature, params (name/kind/default/annotation),
    returns, decorators, docstring, heading, line_start/line_end, page.
    """

    id: str
    text: str
    source_path: str
    kind: str
    symbol: str | None = None
    workflow: str | None = None
    priority: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (one line of ``chunks.jsonl``).

        Shallow: ``metadata`` is the chunk's own dict, not a copy
        (``dataclasses.asdict`` deep-copied every parameter table, most of
        the cost of persisting an index). Callers serialise it, never
        mutate it.
        """
        return {
            "id": self.id,
            "text": self.text,
            "source_path": self.source_path,
            "kind": self.kind,
            "symbol": self.symbol,
            "workflow": self.workflow,
            "priority": self.priority,
            "metadata": self.metadata,
        }

    def json_line(self) -> bytes:
        """The chunk's ``chunks.jsonl`` line (UTF-8, newline-terminated)."""
        return (_ENCODE(self.to_dict()) + "\n").encode("utf-8")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        return cls(
            id=d["id"],
            text=d.get("text", ""),
            source_path=d["source_path"],
            kind=d["kind"],
            symbol=d.get("symbol"),
            workflow=d.get("workflow"),
            priority=int(d.get("priority", 1)),
            metadata=d.get("metadata") or {},
        )

    @property
    def line_start(self) -> int | None:
        """First source line (1-based) from the metadata; None for chunks without
        lines (PDF pages).
        """
        return self.metadata.get("line_start")

    @property
    def line_end(self) -> int | None:
        """Last source line (1-based, inclusive), or None like :attr:`line_start`."""
        return self.metadata.get("line_end")

    @property
    def label(self) -> str:
        """Human label: the symbol for code, the heading for docs."""
        return self.symbol or self.metadata.get("heading") or self.source_path


@dataclass(slots=True)
class FileChunks:
    """What chunking one file produced: chunks, the parse tree, or why not."""

    chunks: list[Chunk]
    tree: Any = None  # ast.Module for Python files (shared with the package model)
    error: str | None = None
    #: Term counts of each chunk's text, when computed where the chunking ran
    #: (a build worker), so the parent does not tokenize everything again.
    counts: list[dict[str, int]] | None = None
