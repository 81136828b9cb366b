"""``textDocument/codeAction``: the quick fixes that diagnostics carry.

Each diagnostic of ours holds its fixes in ``data`` (title and edits, in
client units); this turns them into ``WorkspaceEdit`` actions, the first one
preferred. The ``data`` comes back from the client, so anything malformed in
it (a missing key, a string for a position, a negative line) is skipped,
never an error; at most ``MAX_ACTIONS`` actions are returned.

``source.fixAll.pycsamt`` (what VS Code's ``editor.codeActionsOnSave`` and
``vim.lsp.buf.code_action({context = {only = {"source.fixAll"}}})`` ask
for) recomputes the document's diagnostics and applies, in one edit, the
fix of every problem whose fix is unambiguous: its only fix, or the one
candidate that is a close respelling of the wrong name (``correct_shif`` ->
``correct_shift``, difflib ratio >= ``CLOSE``) when no other candidate is;
a problem with several plausible candidates is left for the user to choose. A request
whose ``only`` names source kinds gets no quick fixes, and one that names
``quickfix`` gets no fix-all. Without ``only``, the fix-all is offered
beside the quick fixes when it would fix more than one problem.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from pycsamt_lsp.lsp.diagnostics import SOURCE, compute, language_of
from pycsamt_lsp.lsp.protocol import MAX_UINT

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["FIX_ALL", "register"]

log = logging.getLogger("pycsamt_lsp")

MAX_ACTIONS = 100
#: the fix-all kind (a sub-kind of ``source.fixAll``, as ruff's ``source.fixAll.ruff``)
FIX_ALL = "source.fixAll.pycsamt"
#: a candidate this close to the wrong name (difflib ratio) is a respelling
CLOSE = 0.8


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


def _wants(only: Sequence[str] | None, kind: str) -> bool:
    """Does the client's ``only`` filter admit *kind* (kinds are dotted
    hierarchies: ``source`` admits ``source.fixAll.pycsamt``)?"""
    if only is None:
        return True
    return any(kind == k or kind.startswith(f"{k}.") for k in map(str, only))


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) < key(b.end) and key(b.start) < key(a.end)


def _last(dotted: Any) -> str:
    return dotted.rpartition(".")[2] if isinstance(dotted, str) else ""


def unambiguous_fix(data: Any) -> Any:
    """The fix a problem's ``data`` makes without a choice, or None."""
    if not isinstance(data, dict):
        return None
    fixes = data.get("fixes")
    if not isinstance(fixes, list) or not fixes:
        return None
    if len(fixes) == 1:
        return fixes[0]
    wrong = _last(data.get("dotted"))
    if not wrong:
        return None
    import difflib  # here: a start that answers no fix-all does not import it

    close = [
        f
        for f in fixes
        if isinstance(f, dict)
        and difflib.SequenceMatcher(None, wrong, _last(f.get("candidate"))).ratio()
        >= CLOSE
    ]
    return close[0] if len(close) == 1 else None


def unambiguous_edits(diags: list[types.Diagnostic]) -> list[types.TextEdit]:
    """The edits of every problem with an unambiguous fix, none overlapping."""
    chosen: list[types.TextEdit] = []
    for diag in diags:
        fix = unambiguous_fix(diag.data)
        if fix is None:
            continue
        try:
            edits = _edits(fix)
        except (KeyError, TypeError, ValueError, IndexError):
            continue
        if any(_overlaps(e.range, c.range) for e in edits for c in chosen):
            continue  # two fixes rewrite one statement: keep the first
        chosen.extend(edits)
    return chosen


async def _fix_all(
    ls: PycsamtServer, uri: str, wanted_alone: bool
) -> types.CodeAction | None:
    doc = ls.workspace.text_documents.get(unquote(uri))
    if doc is None:
        return None
    language = language_of(doc, uri)
    if language is None or len(doc.source) > ls.max_document_chars:
        return None
    ws = await ls.editor_workspace(uri)
    if ws is None:
        return None
    try:
        diags = await ls.run_blocking(
            f"fix-all of {uri}",
            compute,
            ls,
            doc.source,
            language,
            ws,
            budget=ls.diagnostics_budget,
        )
    except Exception:  # no action rather than an error
        log.exception("fix-all failed")
        return None
    fixable = [d for d in diags or [] if unambiguous_fix(d.data) is not None]
    edits = unambiguous_edits(fixable)
    if not edits or (not wanted_alone and len(fixable) < 2):
        return None
    return types.CodeAction(
        title=f"Fix all pyCSAMT imports ({len(fixable)})",
        kind=FIX_ALL,
        diagnostics=fixable,
        edit=types.WorkspaceEdit(changes={uri: edits}),
    )


async def code_action(
    ls: PycsamtServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    uri = params.text_document.uri
    only = params.context.only
    fix_all = None
    if _wants(only, FIX_ALL):
        fix_all = await _fix_all(ls, uri, wanted_alone=only is not None)
    if not _wants(only, types.CodeActionKind.QuickFix):
        return [fix_all] if fix_all is not None else []
    for diag in params.context.diagnostics:
        if diag.source != SOURCE or not isinstance(diag.data, dict):
            continue
        fixes = diag.data.get("fixes")
        if not isinstance(fixes, list):
            continue
        for i, fix in enumerate(fixes):
            if len(actions) >= MAX_ACTIONS:
                break
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
    if fix_all is not None:
        actions.append(fix_all)
    return actions


def register(ls: PycsamtServer) -> None:
    """Register quick fixes on *ls*."""
    ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]
        ),
    )(code_action)
