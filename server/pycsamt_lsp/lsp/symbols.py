"""``workspace/symbol``: the index's code symbols matching a name query
(:func:`pycsamt_lsp.cards.card.search_symbols`), at most ``LIMIT``."""

from __future__ import annotations

import logging
from types import MappingProxyType
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["register"]

log = logging.getLogger("pycsamt_lsp")

LIMIT = 200
#: a query longer than this is cut (names are short; 1 MB of query is not one)
MAX_QUERY = 500
_KINDS = MappingProxyType(
    {
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
)


async def on_workspace_symbol(
    ls: PycsamtServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation] | None:
    ws = await ls.editor_workspace()
    if ws is None:
        return None
    query = params.query[:MAX_QUERY]

    def work() -> list[types.SymbolInformation]:
        from pycsamt_lsp.cards.card import search_symbols

        out = []
        for hit in search_symbols(ws, query, limit=LIMIT):
            start = types.Position(line=max(hit["line_start"] - 1, 0), character=0)
            end = types.Position(line=max(hit["line_end"] - 1, 0), character=0)
            out.append(
                types.SymbolInformation(
                    name=hit["name"],
                    kind=_KINDS.get(hit["kind"], types.SymbolKind.Function),
                    location=types.Location(
                        uri=hit["uri"], range=types.Range(start=start, end=end)
                    ),
                    container_name=hit["container"],
                )
            )
        return out

    try:
        return await ls.run_blocking("workspace symbols", work, budget=ls.editor_budget)
    except Exception:  # no symbols rather than an error
        log.exception("workspace symbol search failed")
        return None


def register(ls: PycsamtServer) -> None:
    """Register workspace symbols on *ls*."""
    ls.feature(types.WORKSPACE_SYMBOL)(on_workspace_symbol)
