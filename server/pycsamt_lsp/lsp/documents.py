"""A document as an editor request sees it: text, clamped positions, bounds.

Positions arrive in the client's encoding (UTF-16 unless negotiated
otherwise) and may point anywhere (line 1,000,000, character 2**31-1): they
are clamped to the document and converted to code-point columns, and back
for ranges, by the server's one conversion (:mod:`.positions`). A buffer longer than the server's
``max_document_chars`` gets no editor analysis (the request answers empty
and the log says so) rather than minutes of parsing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from pycsamt_lsp.lsp.positions import Positions, split_lines

if TYPE_CHECKING:
    from pycsamt_lsp.analysis.buffer import BufferIndex
    from pycsamt_lsp.lsp.server import PycsamtServer
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["Doc", "is_python"]

log = logging.getLogger("pycsamt_lsp")


def is_python(doc: Any) -> bool:
    """A Python buffer (by language id, else by suffix)."""
    lang = getattr(doc, "language_id", None)
    return lang == "python" or (
        lang in (None, "") and doc.uri.endswith((".py", ".pyi"))
    )


class Doc:
    """A document's text as of the request, with its position codec."""

    def __init__(self, ls: PycsamtServer, uri: str, what: str) -> None:
        doc = ls.workspace.get_text_document(uri)
        self.uri = uri
        self.python = is_python(doc)
        try:
            self.text = doc.source if self.python else ""
        except (OSError, ValueError):  # neither open nor readable on disk
            self.python, self.text = False, ""
        if len(self.text) > ls.max_document_chars:
            log.warning(
                "%s answered empty: %s has %d characters (limit %d)",
                what,
                uri,
                len(self.text),
                ls.max_document_chars,
            )
            self.python, self.text = False, ""
        self._ls = ls  # its buffer cache is made by the first worker that asks
        # LSP lines end at \n, \r\n or \r only (not at \f like splitlines)
        self.lines = split_lines(self.text)
        self.codec = Positions.of(ls)

    def position(self, pos: types.Position) -> tuple[int, int]:
        """Client position -> (line, code-point column), inside the document."""
        return self.codec.from_client(self.lines, pos)

    def range(self, line: int, start: int, end: int) -> types.Range:
        """Code-point span on *line* -> client range."""
        return self.codec.range(self.lines, line, start, line, end)

    def index(self, ws: Workspace) -> tuple[BufferIndex, str | None]:
        """``(BufferIndex, the buffer's package or None)`` (call in a worker)."""
        from pycsamt_lsp.analysis.editor import current_package

        try:
            path = to_fs_path(self.uri)
        except Exception:  # noqa: BLE001 - an odd URI is just not a corpus file
            path = None
        current = current_package(ws, path)
        index = self._ls.buffers.get(self.uri, self.text, ws.profile.package, current)
        return index, current
