"""``textDocument/definition``: the corpus file and line of the symbol under
the cursor (the card's source location), or ``null``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from pycsamt_lsp.lsp.documents import Doc

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["register"]

log = logging.getLogger("pycsamt_lsp")


async def on_definition(
    ls: PycsamtServer, params: types.DefinitionParams
) -> list[types.Location] | None:
    ws = await ls.editor_workspace(params.text_document.uri)
    if ws is None:
        return None
    doc = Doc(ls, params.text_document.uri, "definition")
    if not doc.python:
        return None
    line, col = doc.position(params.position)

    def work() -> list[types.Location] | None:
        from pycsamt_lsp.analysis.editor import card_at

        index, _cur = doc.index(ws)
        got = card_at(ws, index, line, col)
        if got is None:
            return None
        card = got[1]
        if card.uri is None:
            return None
        at = max((card.line or 1) - 1, 0)
        pos = types.Position(line=at, character=0)
        return [types.Location(uri=card.uri, range=types.Range(start=pos, end=pos))]

    try:
        return await ls.run_blocking("definition", work, budget=ls.editor_budget)
    except Exception:  # no location rather than an error
        log.exception("definition failed")
        return None


def register(ls: PycsamtServer) -> None:
    """Register go-to-definition on *ls*."""
    ls.feature(types.TEXT_DOCUMENT_DEFINITION)(on_definition)
