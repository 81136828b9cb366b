"""``pycsamt.ask``: the command, its text formatter and CLI wiring.

Registered in the shared command registry on import, so the language server
(``workspace/executeCommand``) and the CLI (``pycsamt-lsp ask``) run the same
handler. Also the helpers the CLI calls for ``build --embed`` and
``query --dense``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from pycsamt_lsp.answer.context import AskSettings, answer_question, settings_for
from pycsamt_lsp.commands.registry import ArgumentError, command
from pycsamt_lsp.errors import EmbeddingError
from pycsamt_lsp.search.dense.fusion import dense_query
from pycsamt_lsp.search.dense.store import build_embeddings

__all__ = [
    "AskArgs",
    "add_cli",
    "build_embed",
    "format_ask",
    "query_dense",
    "run_ask",
    "run_ask_cli",
]


@dataclass
class AskArgs:
    question: str
    k: int = 6
    dense: bool | None = None

    def check(self) -> None:
        if not self.question.strip():
            raise ArgumentError("field 'question' must not be empty")
        if not 1 <= self.k <= 50:
            raise ArgumentError("field 'k' must be from 1 to 50")


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


@command("pycsamt.ask", AskArgs, title="Ask", heavy=True, fmt=format_ask)
def run_ask(ws: Any, a: AskArgs) -> dict[str, Any]:
    """Answer a question from the index (see :mod:`pycsamt_lsp.answer.context`)."""
    return answer_question(ws, a.question, k=a.k, dense=a.dense)


# -- CLI ---------------------------------------------------------------------------


def add_cli(subparsers: Any) -> None:
    """Add ``pycsamt-lsp ask QUESTION [-k K] [--dense] [--json] ...``."""
    from pycsamt_lsp.cli import _common

    p = subparsers.add_parser("ask", help="answer a question with cited sources")
    _common(p)
    p.add_argument("question")
    p.add_argument("-k", type=int, default=6, help="evidence chunks (1-50, default 6)")
    p.add_argument(
        "--dense",
        action="store_true",
        help="fuse dense vectors (needs `build --embed`)",
    )
    p.add_argument(
        "--offline", action="store_true", help="never call OpenAI, even with a key"
    )
    p.add_argument("--model", help="OpenAI chat model (default gpt-4o-mini)")
    p.add_argument(
        "--timeout", type=float, help="OpenAI timeout in seconds (default 30)"
    )
    p.add_argument(
        "--registry", help="project registry file (default .pycsamt/projects.toml)"
    )


def run_ask_cli(
    args: argparse.Namespace, open_workspace
) -> tuple[dict[str, Any], Any, int]:
    """Runner for ``_EXTRA_RUNNERS["ask"]``: ``(result, formatter, exit code)``."""
    from pycsamt_lsp.answer.context import configure
    from pycsamt_lsp.commands.registry import run_command

    ws = open_workspace(args)
    changes: dict[str, Any] = {}
    if args.offline:
        changes["use_openai"] = False
    if args.model:
        changes["model"] = args.model
    if args.timeout is not None:
        if args.timeout <= 0:
            raise ValueError("--timeout must be positive")
        changes["timeout"] = args.timeout
    if args.registry:
        changes["registry"] = args.registry
    if changes:
        configure(ws, **changes)
    raw = {"question": args.question, "k": args.k}
    if args.dense:
        raw["dense"] = True
    return run_command("pycsamt.ask", ws, raw), format_ask, 0


def build_embed(
    ws: Any,
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
    ws: Any,
    query: str,
    k: int = 10,
    *,
    workflow: str | None = None,
    kinds: list[str] | None = None,
) -> dict[str, Any]:
    """``pycsamt.query`` with ``dense: true``: RRF of BM25 and vectors, or BM25."""
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
    )
