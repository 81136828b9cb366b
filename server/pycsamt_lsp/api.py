"""The commands of the engine, registered once for the CLI and the server.

Handlers receive the :class:`~pycsamt_lsp.workspace.Workspace` and the
validated argument dataclass, and return the dict that both front ends show.
"""

from __future__ import annotations

from typing import Any

from .commands import NoArgs, QueryArgs, command
from .workspace import Workspace

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
