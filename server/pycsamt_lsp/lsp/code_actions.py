"""``textDocument/codeAction``: the quick fixes that diagnostics carry.

Each diagnostic of ours holds its fixes in ``data`` (title and edits, in
client units); this turns them into ``WorkspaceEdit`` actions, the first one
preferred. The ``data`` comes back from the client, so anything malformed in
it (a missing key, a string for a position, a negative line) is skipped,
never an error; at most ``MAX_ACTIONS`` actions are returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from pycsamt_lsp.lsp.diagnostics import SOURCE
from pycsamt_lsp.lsp.protocol import MAX_UINT

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["register"]

MAX_ACTIONS = 100


def _position(raw: Any) -> types.Position:
    line, char = raw["line"], raw["character"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (line, char)):
        raise TypeError("position fields must be integers")
    return types.Position(
        line=min(max(line, 0), MAX_UINT), character=min(max(char, 0), MAX_UINT)
    )


def _edits(fix: Any) -> list[types.TextEdit]:
    out = []
    for e in fix["edits"]:
        text = e["newText"]
        if not isinstance(text, str):
            raise TypeError("newText must be a string")
        out.append(
            types.TextEdit(
                range=types.Range(
                    start=_position(e["range"]["start"]),
                    end=_position(e["range"]["end"]),
                ),
                new_text=text,
            )
        )
    return out


def code_action(
    ls: PycsamtServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    uri = params.text_document.uri
    for diag in params.context.diagnostics:
        if diag.source != SOURCE or not isinstance(diag.data, dict):
            continue
        fixes = diag.data.get("fixes")
        if not isinstance(fixes, list):
            continue
        for i, fix in enumerate(fixes):
            if len(actions) >= MAX_ACTIONS:
                return actions
            try:
                edits = _edits(fix)
                title = fix["title"]
                if not isinstance(title, str):
                    raise TypeError("title must be a string")
            except (KeyError, TypeError, ValueError, IndexError):
                continue
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=i == 0,
                    edit=types.WorkspaceEdit(changes={uri: edits}),
                )
            )
    return actions


def register(ls: PycsamtServer) -> None:
    """Register quick fixes on *ls*."""
    ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )(code_action)
