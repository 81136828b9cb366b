"""The command handlers and their text formatters.

Each handler is a thin typed function ``(Workspace, Args) -> dict`` that
calls one method of the workspace or of a service it owns; the formatters
turn the same dict into the CLI's readable text. Nothing here registers
anything: :func:`pycsamt_lsp.commands.catalog.build_registry` lists them.
"""

from __future__ import annotations

from typing import Any

# answer/, devsearch/ and evals/ are imported by the handlers that use them:
# a server's first query loads none of them (issue 18)
from pycsamt_lsp.commands.args import (
    AskArgs,
    EvalArgs,
    InspectSymbolArgs,
    NoArgs,
    QueryArgs,
    ReadSourceArgs,
    SearchSourceArgs,
    ValidateArgs,
)
from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "ask",
    "format_build",
    "format_eval",
    "format_inspect",
    "format_query",
    "format_read",
    "format_search",
    "format_stats",
    "format_validate",
    "inspect",
    "query",
    "read",
    "rebuild",
    "run_eval",
    "search",
    "stats",
    "validate",
]

Result = dict[str, Any]


# -- handlers -------------------------------------------------------------------


def query(ws: Workspace, a: QueryArgs) -> Result:
    """``pycsamt.query``: BM25 ranking, or RRF with dense vectors."""
    disable = tuple(a.disable or ())
    if a.dense:
        from pycsamt_lsp.answer.ask import query_dense  # the dense lane, on use

        return query_dense(
            ws, a.query, a.k, workflow=a.workflow, kinds=a.kinds, disable=disable
        )
    return ws.query(a.query, a.k, workflow=a.workflow, kinds=a.kinds, disable=disable)


def stats(ws: Workspace, _a: NoArgs) -> Result:
    """``pycsamt.stats``: counts by kind and workflow."""
    return ws.stats()


def rebuild(ws: Workspace, _a: NoArgs) -> Result:
    """``pycsamt.rebuild``: build from scratch and persist (one streamed pass)."""
    return ws.rebuild()


def validate(ws: Workspace, a: ValidateArgs) -> Result:
    """``pycsamt.validate``: the package imports of a snippet."""
    return ws.validate(a.code)


def ask(ws: Workspace, a: AskArgs) -> Result:
    """``pycsamt.ask``: routed, then answered (see :mod:`pycsamt_lsp.answer.route`)."""
    from pycsamt_lsp.answer.route import routed_answer

    return routed_answer(ws, a.question, k=a.k, dense=a.dense)


def search(ws: Workspace, a: SearchSourceArgs) -> Result:
    """``pycsamt.searchSource``: live search of the corpus source, with URIs."""
    from pycsamt_lsp.devsearch.search import search_source

    res = search_source(
        ws.root,
        a.query,
        profile=ws.profile,
        include_tests=a.includeTests,
        limit=a.limit,
    )
    for r in res.get("results", []):
        r["uri"] = (ws.root / r["path"]).as_uri()
    return res


def inspect(ws: Workspace, a: InspectSymbolArgs) -> Result:
    """``pycsamt.inspectSymbol``: signature, docstring and lines of a symbol."""
    from pycsamt_lsp.devsearch.search import inspect_symbol

    return inspect_symbol(ws.root, a.path, a.symbol, profile=ws.profile)


def read(ws: Workspace, a: ReadSourceArgs) -> Result:
    """``pycsamt.readSource``: a bounded window of a corpus file."""
    from pycsamt_lsp.devsearch.search import read_source

    return read_source(ws.root, a.path, a.start, a.lines, profile=ws.profile)


def run_eval(ws: Workspace, a: EvalArgs) -> Result:
    """``pycsamt.eval``: retrieval metrics on the JSONL suites."""
    from pycsamt_lsp.evals.service import run_eval as _run_eval_service

    return _run_eval_service(
        ws, suite_dir=a.suiteDir, k=a.k, ablate=a.ablate, disable=tuple(a.disable or ())
    )


# -- formatters -----------------------------------------------------------------


def format_query(res: Result) -> str:
    """A readable ranked table for ``pycsamt-lsp query``."""
    head = f"query: {res['query']!r}  workflow: {res['workflow'] or '-'}  top score: {res['top_score']}"
    if res.get("expansion"):
        head += f"\nexpansion: {', '.join(res['expansion'])}"
    lines = [head, ""]
    if not res["results"]:
        lines.append("no chunk matched")
    for r in res["results"]:
        where = r["source_path"] + (
            f":{r['line_start']}" if r.get("line_start") else ""
        )
        lines.append(
            f"{r['rank']:>2}. {r['score']:8.3f}  {r['kind']:<13} {r['workflow'] or '-':<14} {r['label']}"
        )
        lines.append(f"    {where}")
        if r.get("snippet"):
            lines.append(f"    {r['snippet'][:150]}")
    return "\n".join(lines)


def format_stats(res: Result) -> str:
    """Counts by kind and workflow for ``pycsamt-lsp stats``."""
    lines = [
        f"root:        {res.get('root')}",
        f"profile:     {res.get('profile')}",
        f"index:       {res.get('index_dir', '-')}",
        f"state:       {res.get('state')}",
        f"chunks:      {res.get('n_chunks')}  files: {res.get('n_files', 0)}  skipped: {res.get('skipped', 0)}",
        f"fingerprint: {res.get('fingerprint', '-')}",
        "",
        "by kind:",
    ]
    lines += [f"  {k:<16}{v:>7}" for k, v in res.get("by_kind", {}).items()]
    lines.append("by workflow:")
    lines += [f"  {k:<16}{v:>7}" for k, v in res.get("by_workflow", {}).items()]
    return "\n".join(lines)


def format_build(res: Result) -> str:
    """One line for ``pycsamt-lsp build``."""
    return (
        f"{res.get('action', 'build')}: {res['n_chunks']} chunks from {res['n_files']} files "
        f"in {res['seconds']} s (fingerprint {res['fingerprint'][:12]})"
    )


def format_validate(res: Result) -> str:
    """Errors, warnings and the checked imports for ``pycsamt-lsp validate``."""
    lines = [f"ok: {res['ok']}  syntax_ok: {res['syntax_ok']}"]
    lines += [f"error:   {e}" for e in res["errors"]]
    lines += [f"warning: {w}" for w in res["warnings"]]
    if res["checked"]:
        lines.append("checked: " + ", ".join(res["checked"]))
    return "\n".join(lines)


def format_search(res: Result) -> str:
    """Ranked hits with excerpts for ``pycsamt-lsp search``."""
    lines = [f"query: {res['query']!r}"]
    for r in res.get("results", []):
        sym = (r.get("symbol") or {}).get("name") or "-"
        ev = r.get("evidence", {})
        lines.append(
            f"{r['rank']}. {r['path']}:{r['line_start']}  {sym}  [{r.get('match')}]  sha256 {ev.get('sha256', '')[:12]}"
        )
        for ex in (r.get("excerpt") or "").splitlines()[:4]:
            lines.append(f"     {ex}")
    for hit in res.get("limits_hit", []):
        lines.append(f"limit reached: {hit['message']}")
    if res.get("limitation"):
        lines.append(res["limitation"])
    return "\n".join(lines)


def format_inspect(res: Result) -> str:
    """Location, signature and docstring for ``pycsamt-lsp inspect-symbol``."""
    doc = (res.get("docstring") or "").strip()
    return f"{res['path']}:{res['line_start']}-{res['line_end']}  {res.get('signature') or res['symbol']}\n\n{doc}"


def format_read(res: Result) -> str:
    """The window and its bounds for ``pycsamt-lsp read-source``."""
    tail = f"\n[{res['truncation']}]" if res.get("truncated") else ""
    return f"{res['path']} lines {res['start']}-{res['end']} of {res['total_lines']}\n{res['text']}{tail}"


def format_eval(res: Result) -> str:
    """The metrics report for ``pycsamt-lsp eval``."""
    from pycsamt_lsp.evals.report import format_report

    return format_report(res)
