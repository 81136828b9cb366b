"""``pycsamt.ask``'s text formatter, and the dense helpers of two commands.

The command itself is listed in :mod:`pycsamt_lsp.commands.catalog` (its
arguments in :mod:`pycsamt_lsp.commands.args`), so the language server and
the CLI run the same handler. Also the helpers ``build --embed`` and
``query --dense`` call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycsamt_lsp.answer.context import settings_for
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.errors import EmbeddingError
from pycsamt_lsp.search.dense.fusion import dense_query
from pycsamt_lsp.search.dense.store import build_embeddings

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["build_embed", "format_ask", "query_dense"]


def _where(c: dict[str, Any]) -> str:
    if c.get("page"):
        return f"{c['source_path']}, p. {c['page']}"
    if c.get("line_start"):
        return f"{c['source_path']}:{c['line_start']}-{c.get('line_end') or c['line_start']}"
    return c.get("source_path") or ""


def format_ask(res: dict[str, Any]) -> str:
    """Readable text for ``pycsamt-lsp ask``: answer, gate, sources."""
    score = res.get("top_score")
    head = f"path: {res.get('path')}  retrieval: {res.get('retrieval')}"
    if isinstance(score, (int, float)):
        head += f"  top score: {score:.2f}"
    head += f"  confident: {'yes' if res.get('confident') else 'no'}"
    lines = [head]
    rt = res.get("route")
    if rt:  # the routing decision (issue 15)
        lines.append(
            f"route: {rt.get('intent')}  workflow: {rt.get('workflow') or '-'}  "
            f"line: {rt.get('line') or '-'}  scope: {rt.get('scope')}"
        )
    if res.get("fallback_reason"):
        lines.append(f"fallback: {res['fallback_reason']}")
    if res.get("dense_error"):
        lines.append(f"dense retrieval off: {res['dense_error']}")
    pc = res.get("project_context")
    if pc:
        lines.append(f"project: line {pc.get('line')} -> {pc.get('edi_dir')}")
    lines.append("")
    if res.get("clarifying_question"):
        lines += [f"? {res['clarifying_question']}", ""]
    lines.append(res.get("answer", "").rstrip())
    v = res.get("validation")
    if v:
        lines += [
            "",
            f"validation of generated code: {'ok' if v['ok'] else 'problems'}",
        ]
        lines += [f"  error:   {e}" for e in v["errors"]]
        lines += [f"  warning: {w}" for w in v["warnings"]]
    cites = res.get("citations") or []
    if cites:
        lines += ["", "sources:"]
        for c in cites:
            sc = c.get("score")
            sc_txt = f"  ({sc:.2f})" if isinstance(sc, (int, float)) else ""
            lines.append(f"  [{c['n']}] {c.get('label')} — {_where(c)}{sc_txt}")
    return "\n".join(lines)


def build_embed(
    ws: Workspace,
    backend: str | None = None,
    *,
    settings: AskSettings | None = None,
    progress=None,
) -> dict[str, Any]:
    """Embed the persisted index (``build --embed``); the report for the CLI.

    *backend*: ``auto`` (OpenAI with a key, else local), ``local``,
    ``minilm``, ``hash`` or ``openai[:model]``. Raises ``ValueError`` with a
    readable message when the backend is unavailable or fails.
    """
    s = settings or settings_for(ws)
    try:
        be = ws.dense.resolve_backend(
            backend or "auto", api_key=s.key(), base_url=s.url(), timeout=s.timeout
        )
        return build_embeddings(ws, be, progress=progress)
    except EmbeddingError as exc:
        raise ValueError(f"embedding failed: {exc}") from None


def query_dense(
    ws: Workspace,
    query: str,
    k: int = 10,
    *,
    workflow: str | None = None,
    kinds: list[str] | None = None,
    disable: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``pycsamt.query`` with ``dense: true``: RRF of BM25 and vectors, or BM25
    (*disable*: ranking and fusion stages, as ``dense_query``'s)."""
    s = settings_for(ws)
    return dense_query(
        ws,
        query,
        k,
        workflow=workflow,
        kinds=kinds,
        api_key=s.key(),
        base_url=s.url(),
        timeout=s.timeout,
        disable=disable,
    )
