"""``textDocument/hover``: the API card of the package symbol under the cursor.

In import statements, on names those imports bind (aliases included), along
attribute chains (``et.estimate_ss_ama``), on methods of instances and on
keyword arguments at call sites (:func:`pycsamt_lsp.analysis.editor.card_at`;
the card is :mod:`pycsamt_lsp.cards.card`). A name the model does not know
to exist gets no hover (``null``), never an error; so does a request over
its budget.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from pycsamt_lsp.lsp.documents import Doc

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["register"]

log = logging.getLogger("pycsamt_lsp")


async def on_hover(ls: PycsamtServer, params: types.HoverParams) -> types.Hover | None:
    ws = await ls.editor_workspace(params.text_document.uri)
    if ws is None:
        return None
    doc = Doc(ls, params.text_document.uri, "hover")
    if not doc.python:
        return None
    line, col = doc.position(params.position)

    def work() -> types.Hover | None:
        from pycsamt_lsp.analysis.editor import card_at

        index, _cur = doc.index(ws)
        got = card_at(ws, index, line, col)
        if got is None:
            return None
        ref, card = got
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value=card.to_markdown(focus=ref.param)
            ),
            range=doc.range(ref.line, ref.start, ref.end),
        )

    try:
        return await ls.run_blocking("hover", work, budget=ls.editor_budget)
    except Exception:  # a hover never fails the request
        log.exception("hover failed")
        return None


def _warm(ls: PycsamtServer) -> None:
    """A new snapshot is live: load the model and card tables off the event
    loop now, so the first hover after start-up or an edit is not the slow one."""
    ws = ls.ws
    if ws is None:
        return
    first = ls.model_loaded
    if first is not None and not first.done():
        return  # the open's own model load warms them (lsp.indexing)

    async def run() -> None:
        from pycsamt_lsp.cards.card import warm

        try:
            await ls.run_blocking("card warm-up", warm, ws, lane="command")
        except Exception:  # a warm-up failure only costs latency
            log.info("card warm-up failed", exc_info=True)

    ls.spawn(run())


def register(ls: PycsamtServer) -> None:
    """Register hover on *ls* (and the card warm-up after index changes)."""
    ls.feature(types.TEXT_DOCUMENT_HOVER)(on_hover)
    ls.on_index_changed.append(_warm)
