"""Hallucinated-import diagnostics of open documents.

Per open document: debounced on change, computed in the editor lane within
the server's ``diagnostics_budget`` from the current package model,
published with the document version, dropped if the document changed or
closed meanwhile, cleared on close, and recomputed for every open document
when the index or the model changes (a symbol added to the package makes
its squiggle go away). Python buffers are checked whole; Markdown and
reStructuredText buffers have their ``python`` code blocks checked with the
block's line offset. The quick fixes travel in each diagnostic's ``data``
(:mod:`.code_actions` turns them into edits). The debounce timers are the
server's (``diagnostics_timers``).

Push or pull: a client that offers pull diagnostics
(``textDocument.diagnostic`` in its capabilities: Neovim >= 0.10, recent
VS Code) asks with ``textDocument/diagnostic`` and is told to ask again
(``workspace/diagnostic/refresh``) when the index, the model or the
settings change; every other client gets ``publishDiagnostics``. Never
both, or the client would show each problem twice. ``syntax-error``
diagnostics are only sent with the ``showSyntaxErrors`` setting (the user's
main Python server already reports them). Each diagnostic's
``codeDescription`` links to the README's section on the codes.
"""

from __future__ import annotations

import logging
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from pycsamt_lsp.lsp.positions import Positions, split_lines
from pycsamt_lsp.lsp.protocol import describe_error

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "CODES_HELP",
    "SOURCE",
    "compute",
    "language_of",
    "python_regions",
    "refresh_open_documents",
    "register",
]

log = logging.getLogger("pycsamt_lsp")

SOURCE = "pycsamt-lsp"
#: the README section that explains every diagnostic code
CODES_HELP = "https://github.com/pycsamt-lsp/pycsamt-lsp#diagnostic-codes"
#: LSP language ids (and editors' file types) whose buffers are checked
_LANGUAGES = MappingProxyType(
    {
        "python": "python",
        "markdown": "markdown",
        "restructuredtext": "restructuredtext",
        "rst": "restructuredtext",  # Neovim's and Helix's name for it
    }
)
_SEVERITY = MappingProxyType(
    {
        "error": types.DiagnosticSeverity.Error,
        "warning": types.DiagnosticSeverity.Warning,
        "information": types.DiagnosticSeverity.Information,
        "hint": types.DiagnosticSeverity.Hint,
    }
)
_MD_FENCE = re.compile(r"^(\s*)(```|~~~)\s*(\w+)?")
_RST_BLOCK = re.compile(
    r"^(\s*)\.\.\s+(code-block|code|sourcecode)::\s*(python|py|python3)?\s*$|^(.*)::\s*$"
)
#: at most this many diagnostics per document (a pasted file of 10,000
#: bad imports must not make a 50 MB notification)
MAX_DIAGNOSTICS = 500


def python_regions(text: str, language: str) -> list[tuple[int, str]]:
    """``(first line, code)`` of each Python region of a document."""
    if language == "python":
        return [(0, text)]
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    i = 0
    if language == "markdown":
        while i < len(lines):
            m = _MD_FENCE.match(lines[i])
            if m and (m.group(3) or "").lower() in ("python", "py", "python3", "pycon"):
                fence, start = m.group(2), i + 1
                j = start
                while j < len(lines) and not lines[j].lstrip().startswith(fence):
                    j += 1
                out.append((start, "\n".join(lines[start:j])))
                i = j + 1
            elif m:
                fence = m.group(2)
                i += 1
                while i < len(lines) and not lines[i].lstrip().startswith(fence):
                    i += 1
                i += 1
            else:
                i += 1
        return out
    if language == "restructuredtext":
        while i < len(lines):
            m = _RST_BLOCK.match(lines[i])
            is_py = m and (m.group(3) or (m.group(4) is not None and not m.group(2)))
            if not is_py:
                i += 1
                continue
            base = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while (
                j < len(lines)
                and (not lines[j].strip() or lines[j].lstrip().startswith(":"))
                and j < i + 4
            ):
                j += 1
            start = j
            while j < len(lines) and (
                not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > base
            ):
                j += 1
            block = lines[start:j]
            indent = min(
                (len(b) - len(b.lstrip()) for b in block if b.strip()), default=0
            )
            out.append((start, "\n".join(b[indent:] for b in block)))
            i = j
        return out
    return []


def compute(
    ls: PycsamtServer, text: str, language: str, ws: Workspace | None = None
) -> list[types.Diagnostic]:
    """Diagnostics of one document against *ws* (the primary workspace by
    default; runs in a worker thread)."""
    ws = ws if ws is not None else ls.ws
    if ws is None:
        return []
    ws.ensure_model()
    lines = split_lines(text)
    codec = Positions.of(ls)  # ranges in the negotiated encoding
    severity = _SEVERITY[ls.settings.diagnosticsSeverity]
    out: list[types.Diagnostic] = []
    for offset, code in python_regions(text, language):
        if not code.strip():
            continue
        code_lines = code.splitlines()
        try:
            problems = ws.problems(code)
        except (MemoryError, RecursionError) as exc:
            # CPython's parser gives up on some inputs (a long line of names,
            # deep nesting) with these instead of SyntaxError: nothing to check
            log.info(
                "diagnostics: a Python region (line %d) is beyond the parser (%s)",
                offset + 1,
                type(exc).__name__,
            )
            continue
        for p in problems:
            if len(out) >= MAX_DIAGNOSTICS:
                break
            if p.code == "syntax-error" and not ls.settings.showSyntaxErrors:
                continue
            sev = (
                severity if p.severity == "error" else types.DiagnosticSeverity.Warning
            )
            if p.severity != "error" and severity in (
                types.DiagnosticSeverity.Information,
                types.DiagnosticSeverity.Hint,
            ):
                sev = severity
            code_indent = 0
            if offset:  # rst blocks are dedented: restore their indentation
                src_line = (
                    lines[offset + p.line] if offset + p.line < len(lines) else ""
                )
                code_line = code_lines[p.line] if p.line < len(code_lines) else ""
                code_indent = (
                    len(src_line)
                    - len(src_line.lstrip())
                    - (len(code_line) - len(code_line.lstrip()))
                )
            fixes = []
            for f in p.fixes:
                fixes.append(
                    {
                        "title": f.title,
                        "candidate": f.candidate,
                        "edits": [
                            {
                                "range": _to_json(
                                    codec.range(
                                        lines,
                                        offset + e.line,
                                        e.col + code_indent,
                                        offset + e.end_line,
                                        e.end_col + code_indent,
                                    )
                                ),
                                "newText": e.new_text,
                            }
                            for e in f.edits
                        ],
                    }
                )
            out.append(
                types.Diagnostic(
                    range=codec.range(
                        lines,
                        offset + p.line,
                        p.col + code_indent,
                        offset + p.end_line,
                        p.end_col + code_indent,
                    ),
                    message=p.message,
                    severity=sev,
                    code=p.code,
                    code_description=types.CodeDescription(href=CODES_HELP),
                    source=SOURCE,
                    data={
                        "fixes": fixes,
                        "candidates": list(p.candidates),
                        "dotted": p.dotted,
                    },
                )
            )
    return out


def _to_json(r: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


def language_of(doc: Any, uri: str) -> str | None:
    """The checked language of a document (None: not one we check)."""
    lang = doc.language_id or ""
    if not lang:
        lang = (
            "python"
            if uri.endswith((".py", ".pyi"))
            else "markdown"
            if uri.endswith(".md")
            else "rst"
            if uri.endswith(".rst")
            else ""
        )
    return _LANGUAGES.get(lang)


def pull_mode(ls: PycsamtServer) -> bool:
    """Does the client pull diagnostics (then the server never pushes)?"""
    try:
        td = ls.client_capabilities.text_document
    except (AttributeError, RuntimeError):
        return False
    return bool(td is not None and td.diagnostic is not None)


async def current(
    ls: PycsamtServer, uri: str
) -> tuple[int | None, list[types.Diagnostic] | None] | None:
    """``(version, diagnostics)`` of *uri* as it is now; None when it is not
    a checked open document or there is no index; diagnostics None when
    the pass ran over its budget."""
    doc = ls.workspace.text_documents.get(unquote(uri))
    if doc is None:
        return None
    language = language_of(doc, uri)
    if language is None:
        return None
    version, text = doc.version, doc.source
    if len(text) > ls.max_document_chars:
        log.warning(
            "diagnostics skipped: %s has %d characters (limit %d)",
            uri,
            len(text),
            ls.max_document_chars,
        )
        return version, []
    ws = await ls.editor_workspace(uri)
    if ws is None:
        return None
    diags = await ls.run_blocking(
        f"diagnostics of {uri}",
        compute,
        ls,
        text,
        language,
        ws,
        budget=ls.diagnostics_budget,
    )
    return version, diags


async def publish(ls: PycsamtServer, uri: str) -> None:
    """Compute and publish the diagnostics of *uri* if it is still open."""
    if pull_mode(ls):
        return  # the client asks (textDocument/diagnostic)
    doc = ls.workspace.text_documents.get(unquote(uri))
    if doc is None:
        return
    language = language_of(doc, uri)
    if language is None:
        return
    version, text = doc.version, doc.source
    if len(text) > ls.max_document_chars:
        log.warning(
            "diagnostics skipped: %s has %d characters (limit %d)",
            uri,
            len(text),
            ls.max_document_chars,
        )
        diags: list[types.Diagnostic] | None = []
    else:
        try:
            ws = await ls.editor_workspace(uri)
            if ws is None:
                return
            diags = await ls.run_blocking(
                f"diagnostics of {uri}",
                compute,
                ls,
                text,
                language,
                ws,
                budget=ls.diagnostics_budget,
            )
        except Exception as exc:  # noqa: BLE001 - a bad buffer never crashes the server
            log.warning("diagnostics for %s failed: %s", uri, describe_error(exc))
            return
    if diags is None:  # over budget or busy: keep what the client shows
        return
    doc = ls.workspace.text_documents.get(unquote(uri))
    if doc is None or doc.version != version:
        return  # closed or edited meanwhile: a newer run will publish
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diags)
    )


def schedule(ls: PycsamtServer, uri: str, delay: float) -> None:
    """Debounce per URI."""
    timers = ls.diagnostics_timers
    handle = timers.pop(uri, None)
    if handle is not None:
        handle.cancel()
    if ls.loop is None:
        return

    def fire() -> None:
        timers.pop(uri, None)
        ls.spawn(publish(ls, uri))

    timers[uri] = ls.loop.call_later(delay, fire)


async def did_open(ls: PycsamtServer, params: types.DidOpenTextDocumentParams) -> None:
    await publish(ls, params.text_document.uri)
    ls.spawn(_prime_tree(ls, params.text_document.uri))


async def _prime_tree(ls: PycsamtServer, uri: str) -> None:
    """Parse an opened corpus module now, off the event loop, so its first
    save re-parses only what changed (``Workspace.prime_tree``)."""
    await _tree_job(ls, uri, "prime tree", "prime_tree")


async def _release_tree(ls: PycsamtServer, uri: str) -> None:
    """Drop the tree :func:`_prime_tree` kept for a module the editor closed
    (``Workspace.release_tree``), off the event loop (freeing a large tree's
    nodes takes a few milliseconds)."""
    await _tree_job(ls, uri, "release tree", "release_tree")


async def _tree_job(ls: PycsamtServer, uri: str, what: str, method: str) -> None:
    """``Workspace.<method>(path)`` of the folder holding *uri*, in the
    command lane, once the index is ready."""
    from pygls.uris import to_fs_path

    from pycsamt_lsp.errors import QueryError
    from pycsamt_lsp.lsp import folders

    try:  # files restored at start-up are opened before the index is
        primary = await ls.workspace_ready()
    except QueryError:
        return
    ws = folders.workspace_for(ls, uri) or primary
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        await ls.run_blocking(what, getattr(ws, method), path, lane="command")


def did_change(ls: PycsamtServer, params: types.DidChangeTextDocumentParams) -> None:
    schedule(ls, params.text_document.uri, max(ls.settings.debounceMs, 0) / 1000.0)


def did_save(ls: PycsamtServer, params: types.DidSaveTextDocumentParams) -> None:
    schedule(ls, params.text_document.uri, 0.0)


def did_close(ls: PycsamtServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.spawn(_release_tree(ls, params.text_document.uri))
    handle = ls.diagnostics_timers.pop(params.text_document.uri, None)
    if handle is not None:
        handle.cancel()
    ls.pulled.pop(params.text_document.uri, None)
    if pull_mode(ls):
        return
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
    )


async def on_pull(
    ls: PycsamtServer, params: types.DocumentDiagnosticParams
) -> types.RelatedFullDocumentDiagnosticReport:
    """``textDocument/diagnostic``: the document's diagnostics now (a pass
    over its budget answers the last full report, or nothing)."""
    uri = params.text_document.uri
    try:
        got = await current(ls, uri)
    except Exception as exc:  # noqa: BLE001 - a bad buffer never crashes the server
        log.warning("diagnostics for %s failed: %s", uri, describe_error(exc))
        got = None
    diags = got[1] if got is not None else []
    if diags is None:
        diags = ls.pulled.get(uri, [])
    ls.pulled[uri] = diags
    return types.RelatedFullDocumentDiagnosticReport(items=diags)


def refresh_open_documents(ls: PycsamtServer) -> None:
    """Diagnostics of every open document are out of date (index, model or
    settings changed): push them again, or ask a pulling client to pull."""
    if pull_mode(ls):
        ws_caps = ls.client_capabilities.workspace
        diag_caps = ws_caps.diagnostics if ws_caps is not None else None
        if diag_caps is not None and diag_caps.refresh_support:
            ls.spawn(_ask_refresh(ls))
        return
    for uri in list(ls.workspace.text_documents):
        schedule(ls, uri, 0.05)


async def _ask_refresh(ls: PycsamtServer) -> None:
    try:
        await ls.workspace_diagnostic_refresh_async(None)
    except Exception as exc:  # noqa: BLE001 - a courtesy; the next edit pulls anyway
        log.info("workspace/diagnostic/refresh failed: %s", exc)


def _refresh_all(ls: PycsamtServer) -> None:
    refresh_open_documents(ls)


def register(ls: PycsamtServer) -> None:
    """Register the document-sync handlers that drive diagnostics on *ls*."""
    ls.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    ls.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE,
            inter_file_dependencies=False,
            workspace_diagnostics=False,
        ),
    )(on_pull)
    ls.on_index_changed.append(_refresh_all)
