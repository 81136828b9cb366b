"""``textDocument/completion`` and ``completionItem/resolve``.

Offers the real names of the namespace being completed (``from pycsamt.x
import |``, ``import pycsamt.|``, ``alias.|``), each documented by its card,
private names last (:func:`pycsamt_lsp.analysis.editor.complete`). Above
``EAGER_DOCS`` candidates the documentation is filled by resolve. A request
over its budget, or on a position that completes no package name, answers
``null``.
"""

from __future__ import annotations

import logging
from types import MappingProxyType
from typing import TYPE_CHECKING

from lsprotocol import types

from pycsamt_lsp.lsp.documents import Doc

if TYPE_CHECKING:
    from pycsamt_lsp.analysis.editor import Completion
    from pycsamt_lsp.lsp.server import PycsamtServer
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["register"]

log = logging.getLogger("pycsamt_lsp")

_KINDS = MappingProxyType(
    {
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
)
#: Above this many candidates, documentation is filled by completionItem/resolve.
EAGER_DOCS = 60
#: At most this many items in one answer (a namespace of 10,000 names is cut).
MAX_ITEMS = 2000


def _item(
    ws: Workspace, c: Completion, docs: bool, uri: str | None = None
) -> types.CompletionItem:
    card = c.card(ws) if docs else None
    item = types.CompletionItem(
        label=c.name,
        kind=_KINDS.get(c.kind, types.CompletionItemKind.Text),
        sort_text=c.sort_text,
        data={
            "dotted": c.dotted,
            "module": c.module,
            "importPath": c.import_path,
            "uri": uri,  # resolve documents it from the buffer's folder workspace
        },
    )
    if card is not None:
        item.detail = card.detail()
        item.documentation = types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=card.to_markdown()
        )
    else:
        item.detail = f"{c.kind} {c.dotted}"
    return item


async def on_completion(
    ls: PycsamtServer, params: types.CompletionParams
) -> types.CompletionList | None:
    ws = await ls.editor_workspace(params.text_document.uri)
    if ws is None:
        return None
    doc = Doc(ls, params.text_document.uri, "completion")
    if not doc.python:
        return None
    line, col = doc.position(params.position)

    def work() -> types.CompletionList | None:
        from pycsamt_lsp.analysis.editor import complete

        index, current = doc.index(ws)
        got = complete(ws, index, line, col, current)
        if got is None:
            return None
        cut = len(got) > MAX_ITEMS
        got = sorted(got, key=lambda c: c.sort_text)[:MAX_ITEMS] if cut else got
        docs = len(got) <= EAGER_DOCS
        return types.CompletionList(
            is_incomplete=cut, items=[_item(ws, c, docs, doc.uri) for c in got]
        )

    try:
        return await ls.run_blocking("completion", work, budget=ls.editor_budget)
    except Exception:  # no candidates rather than an error
        log.exception("completion failed")
        return None


async def on_resolve(
    ls: PycsamtServer, item: types.CompletionItem
) -> types.CompletionItem:
    data = item.data if isinstance(item.data, dict) else None
    if item.documentation is not None or not data or "dotted" not in data:
        return item
    uri = data.get("uri")  # the buffer's folder workspace documents it
    ws = await ls.editor_workspace(uri if isinstance(uri, str) else None)
    if ws is None:
        return item

    def work() -> types.CompletionItem:
        from pycsamt_lsp.analysis.editor import Completion

        module = data.get("module")
        c = Completion(
            item.label,
            "",
            str(data["dotted"]),
            module if isinstance(module, str) else None,
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
        return await ls.run_blocking(
            "completion resolve", work, budget=ls.editor_budget, default=item
        )
    except Exception:  # the item as it came
        log.exception("completion resolve failed")
        return item


def register(ls: PycsamtServer) -> None:
    """Register completion and its resolve on *ls*."""
    ls.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[".", " "], resolve_provider=True),
    )(on_completion)
    ls.feature(types.COMPLETION_ITEM_RESOLVE)(on_resolve)
