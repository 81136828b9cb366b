"""The commands of the engine, registered once for the CLI and the server.

Handlers receive the :class:`~pycsamt_lsp.workspace.facade.Workspace` and the
validated argument dataclass, and return the dict that both front ends show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycsamt_lsp.commands.registry import EvalArgs, NoArgs, QueryArgs, command
from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["format_query", "format_stats"]


def format_query(res: dict[str, Any]) -> str:
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


def format_stats(res: dict[str, Any]) -> str:
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


@command("pycsamt.query", QueryArgs, title="Query", fmt=format_query)
def _query(ws: Workspace, a: QueryArgs) -> dict[str, Any]:
    if a.dense:
        from pycsamt_lsp.answer.ask import query_dense

        return query_dense(ws, a.query, a.k, workflow=a.workflow, kinds=a.kinds)
    return ws.query(a.query, a.k, workflow=a.workflow, kinds=a.kinds)


@command("pycsamt.stats", NoArgs, title="Show Index Stats", fmt=format_stats)
def _stats(ws: Workspace, _a: NoArgs) -> dict[str, Any]:
    return ws.stats()


def _format_build(res: dict[str, Any]) -> str:
    return (
        f"{res.get('action', 'build')}: {res['n_chunks']} chunks from {res['n_files']} files "
        f"in {res['seconds']} s (fingerprint {res['fingerprint'][:12]})"
    )


@command(
    "pycsamt.rebuild", NoArgs, title="Rebuild Index", heavy=True, fmt=_format_build
)
def _rebuild(ws: Workspace, _a: NoArgs) -> dict[str, Any]:
    report = ws.build()
    ws.persist()
    return report


# -- validation (issue: hallucinated imports) --------------------------------


@dataclass
class ValidateArgs:
    code: str


def format_validate(res: dict[str, Any]) -> str:
    lines = [f"ok: {res['ok']}  syntax_ok: {res['syntax_ok']}"]
    lines += [f"error:   {e}" for e in res["errors"]]
    lines += [f"warning: {w}" for w in res["warnings"]]
    if res["checked"]:
        lines.append("checked: " + ", ".join(res["checked"]))
    return "\n".join(lines)


@command(
    "pycsamt.validate",
    ValidateArgs,
    title="Validate Selection",
    heavy=True,
    fmt=format_validate,
)
def _validate(ws: Workspace, a: ValidateArgs) -> dict[str, Any]:
    return ws.validate(a.code)


# -- developer source search -------------------------------------------------


@dataclass
class SearchSourceArgs:
    query: str
    includeTests: bool = False  # noqa: N815 - LSP arguments are camelCase
    limit: int = 6


@dataclass
class InspectSymbolArgs:
    path: str
    symbol: str


@dataclass
class ReadSourceArgs:
    path: str
    start: int = 1
    lines: int = 80


def format_search(res: dict[str, Any]) -> str:
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


def format_inspect(res: dict[str, Any]) -> str:
    doc = (res.get("docstring") or "").strip()
    return f"{res['path']}:{res['line_start']}-{res['line_end']}  {res.get('signature') or res['symbol']}\n\n{doc}"


def format_read(res: dict[str, Any]) -> str:
    tail = f"\n[{res['truncation']}]" if res.get("truncated") else ""
    return f"{res['path']} lines {res['start']}-{res['end']} of {res['total_lines']}\n{res['text']}{tail}"


@command(
    "pycsamt.searchSource",
    SearchSourceArgs,
    title="Search Source",
    heavy=True,
    fmt=format_search,
)
def _search_source(ws: Workspace, a: SearchSourceArgs) -> dict[str, Any]:
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


@command(
    "pycsamt.inspectSymbol",
    InspectSymbolArgs,
    title="Inspect Symbol",
    heavy=True,
    fmt=format_inspect,
)
def _inspect_symbol(ws: Workspace, a: InspectSymbolArgs) -> dict[str, Any]:
    from pycsamt_lsp.devsearch.search import inspect_symbol

    return inspect_symbol(ws.root, a.path, a.symbol, profile=ws.profile)


@command(
    "pycsamt.readSource",
    ReadSourceArgs,
    title="Read Source",
    heavy=True,
    fmt=format_read,
)
def _read_source(ws: Workspace, a: ReadSourceArgs) -> dict[str, Any]:
    from pycsamt_lsp.devsearch.search import read_source

    return read_source(ws.root, a.path, a.start, a.lines, profile=ws.profile)


# -- evaluation -------------------------------------------------------------


def run_eval(ws: Workspace, a: EvalArgs) -> dict[str, Any]:
    """Retrieval metrics on the JSONL suites (``pycsamt.eval``)."""
    from pathlib import Path

    from pycsamt_lsp import __version__
    from pycsamt_lsp.evals.harness import (
        ablation,
        default_suite_paths,
        evaluate_suites,
        reproducibility,
    )

    project_root = Path(__file__).resolve().parents[3]
    if a.suiteDir:
        d = Path(a.suiteDir).expanduser()
        if not d.is_dir():
            raise ValueError(f"suite folder {d} does not exist")
        paths = sorted(d.glob("*.jsonl"))
    else:
        paths = default_suite_paths(ws.root, project_root, package=ws.profile.package)
    if not paths:
        raise ValueError("no JSONL suites found (pass suiteDir)")

    def make_retrieve(disabled: str | None):
        disable = (disabled,) if disabled else ()

        def retrieve(query: str, k: int) -> list[dict[str, Any]]:
            res = ws.query(query, k, disable=disable, snippets=False)
            out = []
            for r in res["results"]:
                chunk = ws.chunk(r["id"])
                out.append({**r, "text": chunk.text if chunk else ""})
            return out

        return retrieve

    infer = ws.profile.query_workflow
    if a.ablate:
        report = ablation(
            make_retrieve, paths, infer, k=a.k, is_test_path=ws.profile.is_test_path
        )
    else:
        report = evaluate_suites(
            paths,
            make_retrieve(None),
            infer,
            k=a.k,
            is_test_path=ws.profile.is_test_path,
        )
    stats = ws.stats()
    report["reproducibility"] = reproducibility(
        tool_version=__version__,
        project_root=project_root,
        build_command="pycsamt-lsp build",
        manifest=ws.manifest,
        counts_by_kind=stats.get("by_kind"),
        counts_by_workflow=stats.get("by_workflow"),
        dense=False,
        suite_paths=paths,
        corpus_root=ws.root,
        profile=ws.profile.name,
    )
    return report


def _format_eval(res: dict[str, Any]) -> str:
    from pycsamt_lsp.evals.harness import format_report

    return format_report(res)


command("pycsamt.eval", EvalArgs, title="Run Eval", heavy=True, fmt=_format_eval)(
    run_eval
)


from pycsamt_lsp.answer import ask  # noqa: E402,F401 - registers pycsamt.ask
