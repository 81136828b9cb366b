"""Hover, completion, go to definition and workspace symbols.

``textDocument/hover`` shows the API card (:mod:`pycsamt_lsp.cards.card`) of the
package symbol under the cursor: in import statements, on names those imports
bind (aliases included), along attribute chains (``et.estimate_ss_ama``), on
methods of instances and on keyword arguments at call sites. A name the model
does not know to exist gets no hover (``null``), never an error.

``textDocument/completion`` offers the real names of the namespace being
completed (``from pycsamt.x import |``, ``import pycsamt.|``, ``alias.|``),
each documented by its card, private names last. ``textDocument/definition``
opens the corpus file at the symbol's line; ``workspace/symbol`` matches the
index's code symbols by name.

Each handler waits for the first index (``workspace_ready``), then reads the
current model and snapshot in a worker thread. Positions arrive in the
client's encoding (UTF-16 unless negotiated otherwise) and are converted to
code points with the document's position codec, and back.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from pycsamt_lsp.analysis.editor import (
    BufferCache,
    Completion,
    card_at,
    complete,
    current_package,
)
from pycsamt_lsp.cards.card import search_symbols, warm
from pycsamt_lsp.lsp.server import PycsamtServer, server
from pycsamt_lsp.workspace.facade import QueryError, Workspace

__all__: list[str] = []

log = logging.getLogger("pycsamt_lsp")
_LINE_SPLIT = re.compile(r"\r\n|\r|\n")

_buffers = BufferCache()

_COMPLETION_KINDS = {
    "package": types.CompletionItemKind.Module,
    "module": types.CompletionItemKind.Module,
    "namespace": types.CompletionItemKind.Module,
    "class": types.CompletionItemKind.Class,
    "function": types.CompletionItemKind.Function,
    "method": types.CompletionItemKind.Method,
    "property": types.CompletionItemKind.Property,
    "attribute": types.CompletionItemKind.Field,
    "variable": types.CompletionItemKind.Variable,
    "lazy": types.CompletionItemKind.Reference,
    "external": types.CompletionItemKind.Reference,
}
_SYMBOL_KINDS = {
    "package": types.SymbolKind.Package,
    "module": types.SymbolKind.Module,
    "namespace": types.SymbolKind.Namespace,
    "class": types.SymbolKind.Class,
    "function": types.SymbolKind.Function,
    "method": types.SymbolKind.Method,
    "property": types.SymbolKind.Property,
    "attribute": types.SymbolKind.Field,
    "variable": types.SymbolKind.Variable,
}
#: Above this many candidates, documentation is filled by completionItem/resolve.
_EAGER_DOCS = 60


def _is_python(doc: Any) -> bool:
    lang = getattr(doc, "language_id", None)
    return lang == "python" or (
        lang in (None, "") and doc.uri.endswith((".py", ".pyi"))
    )


async def _ready(ls: PycsamtServer) -> Workspace | None:
    try:
        return await ls.workspace_ready()
    except QueryError:
        return None


class _Doc:
    """A document's text as of the request, with its position codec."""

    def __init__(self, ls: PycsamtServer, uri: str) -> None:
        doc = ls.workspace.get_text_document(uri)
        self.uri = uri
        self.python = _is_python(doc)
        try:
            self.text = doc.source if self.python else ""
        except OSError:  # neither open nor on disk
            self.python, self.text = False, ""
        # LSP lines end at \n, \r\n or \r only (not at \f like splitlines)
        self.lines = _LINE_SPLIT.split(self.text)
        self.codec = doc.position_codec

    def position(self, pos: types.Position) -> tuple[int, int]:
        """Client position -> (line, code-point column)."""
        p = self.codec.position_from_client_units(
            self.lines, types.Position(line=pos.line, character=pos.character)
        )
        return p.line, p.character

    def range(self, line: int, start: int, end: int) -> types.Range:
        """Code-point span on *line* -> client range."""
        to = self.codec.position_to_client_units
        return types.Range(
            start=to(self.lines, types.Position(line=line, character=start)),
            end=to(self.lines, types.Position(line=line, character=end)),
        )

    def index(self, ws: Workspace):
        """``(BufferIndex, the buffer's package or None)`` (call in a thread)."""
        current = current_package(ws, to_fs_path(self.uri))
        return _buffers.get(self.uri, self.text, ws.profile.package, current), current


# -- hover ----------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: PycsamtServer, params: types.HoverParams) -> types.Hover | None:
    ws = await _ready(ls)
    if ws is None:
        return None

    doc = _Doc(ls, params.text_document.uri)
    if not doc.python:
        return None
    line, col = doc.position(params.position)

    def work() -> types.Hover | None:
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
        return await asyncio.to_thread(work)
    except Exception:  # noqa: BLE001 - a hover never fails the request
        log.exception("hover failed")
        return None


# -- definition -----------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
async def on_definition(
    ls: PycsamtServer, params: types.DefinitionParams
) -> list[types.Location] | None:
    ws = await _ready(ls)
    if ws is None:
        return None

    doc = _Doc(ls, params.text_document.uri)
    if not doc.python:
        return None
    line, col = doc.position(params.position)

    def work() -> list[types.Location] | None:
        index, _cur = doc.index(ws)
        got = card_at(ws, index, line, col)
        if got is None or got[1].uri is None:
            return None
        card = got[1]
        at = max((card.line or 1) - 1, 0)
        pos = types.Position(line=at, character=0)
        return [types.Location(uri=card.uri, range=types.Range(start=pos, end=pos))]

    try:
        return await asyncio.to_thread(work)
    except Exception:  # noqa: BLE001
        log.exception("definition failed")
        return None


# -- completion -----------------------------------------------------------------


def _item(ws: Workspace, c: Completion, docs: bool) -> types.CompletionItem:
    card = c.card(ws) if docs else None
    item = types.CompletionItem(
        label=c.name,
        kind=_COMPLETION_KINDS.get(c.kind, types.CompletionItemKind.Text),
        sort_text=c.sort_text,
        data={"dotted": c.dotted, "module": c.module, "importPath": c.import_path},
    )
    if card is not None:
        item.detail = card.detail()
        item.documentation = types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=card.to_markdown()
        )
    else:
        item.detail = f"{c.kind} {c.dotted}"
    return item


@server.feature(
    types.TEXT_DOCUMENT_COMPLETION,
    types.CompletionOptions(trigger_characters=[".", " "], resolve_provider=True),
)
async def on_completion(
    ls: PycsamtServer, params: types.CompletionParams
) -> types.CompletionList | None:
    ws = await _ready(ls)
    if ws is None:
        return None

    doc = _Doc(ls, params.text_document.uri)
    if not doc.python:
        return None
    line, col = doc.position(params.position)

    def work() -> types.CompletionList | None:
        index, current = doc.index(ws)
        got = complete(ws, index, line, col, current)
        if got is None:
            return None
        docs = len(got) <= _EAGER_DOCS
        return types.CompletionList(
            is_incomplete=False, items=[_item(ws, c, docs) for c in got]
        )

    try:
        return await asyncio.to_thread(work)
    except Exception:  # noqa: BLE001
        log.exception("completion failed")
        return None


@server.feature(types.COMPLETION_ITEM_RESOLVE)
async def on_completion_resolve(
    ls: PycsamtServer, item: types.CompletionItem
) -> types.CompletionItem:
    data = item.data if isinstance(item.data, dict) else None
    if item.documentation is not None or not data or "dotted" not in data:
        return item
    ws = await _ready(ls)
    if ws is None:
        return item

    def work() -> types.CompletionItem:
        c = Completion(
            item.label,
            "",
            str(data["dotted"]),
            data.get("module"),
            bool(data.get("importPath")),
        )
        card = c.card(ws)
        if card is not None:
            item.detail = card.detail()
            item.documentation = types.MarkupContent(
                kind=types.MarkupKind.Markdown, value=card.to_markdown()
            )
        return item

    try:
        return await asyncio.to_thread(work)
    except Exception:  # noqa: BLE001
        log.exception("completion resolve failed")
        return item


# -- workspace symbols ----------------------------------------------------------


@server.feature(types.WORKSPACE_SYMBOL)
async def on_workspace_symbol(
    ls: PycsamtServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation] | None:
    ws = await _ready(ls)
    if ws is None:
        return None

    def work() -> list[types.SymbolInformation]:
        out = []
        for hit in search_symbols(ws, params.query, limit=200):
            start = types.Position(line=hit["line_start"] - 1, character=0)
            end = types.Position(line=hit["line_end"] - 1, character=0)
            out.append(
                types.SymbolInformation(
                    name=hit["name"],
                    kind=_SYMBOL_KINDS.get(hit["kind"], types.SymbolKind.Function),
                    location=types.Location(
                        uri=hit["uri"], range=types.Range(start=start, end=end)
                    ),
                    container_name=hit["container"],
                )
            )
        return out

    try:
        return await asyncio.to_thread(work)
    except Exception:  # noqa: BLE001
        log.exception("workspace symbol search failed")
        return None


# -- keeping up with the index --------------------------------------------------


def _warm(ls: PycsamtServer) -> None:
    """A new snapshot is live: load the model and card tables off the event
    loop now, so the first hover after start-up or an edit is not the slow one."""
    ws = ls.ws
    if ws is None:
        return

    async def run() -> None:
        try:
            await asyncio.to_thread(warm, ws)
        except Exception:  # noqa: BLE001 - a warm-up failure only costs latency
            log.info("card warm-up failed", exc_info=True)

    ls.spawn(run())


server.on_index_changed.append(_warm)
