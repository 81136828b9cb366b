"""The catalogue of commands: :func:`build_registry`, listed explicitly.

Why explicit: commands used to exist only once a module full of decorators
had been imported, so a front end that forgot the import silently had fewer
commands (a test of ``pycsamt.ask`` skipped itself when that happened). Here
the list is one function; the CLI (:mod:`pycsamt_lsp.cli`), the language
server and the generated client description all call it, so a command added
here appears in all three with the same name and fields.
"""

from __future__ import annotations

import argparse
import sys
from functools import cache
from pathlib import Path
from typing import Any

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
from pycsamt_lsp.commands.registry import CliSpec, Command, CommandRegistry, Lazy
from pycsamt_lsp.errors import ArgumentError, CliError

__all__ = ["build_registry", "default_registry", "run_command"]

Result = dict[str, Any]
_H = "pycsamt_lsp.commands.handlers"


def _h(name: str) -> Lazy:
    """A handler or formatter of :mod:`pycsamt_lsp.commands.handlers`,
    imported when a command first runs (see :class:`Lazy`)."""
    return Lazy(_H, name)


# -- CLI hooks of the commands whose command line differs from their fields ----


def _build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embed",
        nargs="?",
        const="auto",
        metavar="BACKEND",
        help="also embed: auto|local|minilm|hash|openai[:model]",
    )


def _build_finish(args: argparse.Namespace, ws: Any, report: Result) -> Result:
    if args.embed:
        from pycsamt_lsp.answer.ask import build_embed
        from pycsamt_lsp.search.dense.progress import stderr_progress

        report["embeddings"] = build_embed(ws, args.embed, progress=stderr_progress())
    return report


def _validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a Python file, or - for standard input")


def _validate_raw(args: argparse.Namespace) -> dict[str, Any]:
    if args.file == "-":
        return {"code": sys.stdin.read()}
    try:
        return {"code": Path(args.file).read_text(encoding="utf-8")}
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {args.file}: {exc}") from None


def _validate_exit(result: Result) -> int:
    return 1 if result["errors"] else 0


def _ask_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--offline", action="store_true", help="never call OpenAI, even with a key"
    )
    p.add_argument("--model", help="OpenAI chat model (default gpt-4o-mini)")
    p.add_argument(
        "--model-routing",
        action="store_true",
        help="with a key, the chat model routes the question (offline fallback)",
    )
    p.add_argument(
        "--timeout", type=float, help="OpenAI timeout in seconds (default 30)"
    )
    p.add_argument(
        "--registry", help="project registry file (default .pycsamt/projects.toml)"
    )


def _ask_prepare(args: argparse.Namespace, ws: Any) -> None:
    changes: dict[str, Any] = {}
    if args.offline:
        changes["use_openai"] = False
    if args.model:
        changes["model"] = args.model
    if args.model_routing:
        changes["model_routing"] = True
    if args.timeout is not None:
        if args.timeout <= 0:
            raise ArgumentError("--timeout must be positive")
        changes["timeout"] = args.timeout
    if args.registry:
        changes["registry"] = args.registry
    if changes:
        from pycsamt_lsp.answer.context import configure

        configure(ws, **changes)


# -- the catalogue -------------------------------------------------------------


def build_registry() -> CommandRegistry:
    """Every command of the engine, in the order the CLI lists them."""
    return CommandRegistry(
        [
            Command(
                "pycsamt.rebuild",
                NoArgs,
                _h("rebuild"),
                _h("format_build"),
                title="Rebuild Index",
                heavy=True,
                cli=CliSpec(
                    "build",
                    help="build the index from scratch and persist it",
                    load=False,
                    options=_build_options,
                    finish=_build_finish,
                ),
            ),
            Command(
                "pycsamt.stats",
                NoArgs,
                _h("stats"),
                _h("format_stats"),
                title="Show Index Stats",
                cli=CliSpec("stats", help="counts by kind and workflow of the index"),
            ),
            Command(
                "pycsamt.query",
                QueryArgs,
                _h("query"),
                _h("format_query"),
                title="Query",
                cli=CliSpec("query", help="ranked chunks for a question"),
            ),
            Command(
                "pycsamt.validate",
                ValidateArgs,
                _h("validate"),
                _h("format_validate"),
                title="Validate Selection",
                heavy=True,
                cli=CliSpec(
                    "validate",
                    help="check a Python file's package imports (exit 1 on errors)",
                    load=False,
                    arguments=_validate_arguments,
                    to_raw=_validate_raw,
                    exit_code=_validate_exit,
                ),
            ),
            Command(
                "pycsamt.searchSource",
                SearchSourceArgs,
                _h("search"),
                _h("format_search"),
                title="Search Source",
                heavy=True,
                cli=CliSpec(
                    "search",
                    help="live developer search over the source (no index)",
                    load=False,
                ),
            ),
            Command(
                "pycsamt.inspectSymbol",
                InspectSymbolArgs,
                _h("inspect"),
                _h("format_inspect"),
                title="Inspect Symbol",
                heavy=True,
                cli=CliSpec(
                    "inspect-symbol",
                    help="signature, docstring and lines of a symbol in a file",
                    load=False,
                ),
            ),
            Command(
                "pycsamt.readSource",
                ReadSourceArgs,
                _h("read"),
                _h("format_read"),
                title="Read Source",
                heavy=True,
                cli=CliSpec(
                    "read-source",
                    help="read at most 80 lines of a corpus file",
                    load=False,
                ),
            ),
            Command(
                "pycsamt.eval",
                EvalArgs,
                _h("run_eval"),
                _h("format_eval"),
                title="Run Eval",
                heavy=True,
                cli=CliSpec("eval", help="retrieval metrics on the JSONL suites"),
            ),
            Command(
                "pycsamt.ask",
                AskArgs,
                _h("ask"),
                Lazy("pycsamt_lsp.answer.ask", "format_ask"),
                title="Ask",
                heavy=True,
                cli=CliSpec(
                    "ask",
                    help="answer a question with cited sources",
                    options=_ask_options,
                    prepare=_ask_prepare,
                ),
            ),
        ]
    )


@cache
def default_registry() -> CommandRegistry:
    """The registry built once per process (it is immutable)."""
    return build_registry()


def run_command(name: str, ctx: Any, raw: Any) -> Result:
    """Validate *raw* and run the command *name* of the default registry."""
    return default_registry().run(name, ctx, raw)
