"""``pycsamt-lsp``: the engine from the command line, and ``serve`` for editors.

Every subcommand takes ``--root`` and ``--profile``, prints a readable table
by default and the same object as the matching LSP command with ``--json``,
and exits non-zero with a one-line error on bad input.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from pycsamt_lsp import __version__
from pycsamt_lsp.commands.registry import REGISTRY, ArgumentError, run_command
from pycsamt_lsp.corpus.discovery import CorpusError, discover_root, fetch_corpus
from pycsamt_lsp.corpus.profile import ProfileError, load_profile
from pycsamt_lsp.errors import CliError
from pycsamt_lsp.workspace.facade import QueryError, Workspace

__all__ = ["main"]

log = logging.getLogger("pycsamt_lsp")


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line error rule (no usage block on bad input)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", help="corpus root (default: discovered, see README)")
    p.add_argument(
        "--profile",
        default="pycsamt",
        help="profile name or .toml path (default: pycsamt)",
    )
    p.add_argument(
        "--index-dir",
        help="where the persisted index lives (default: ROOT/.pycsamt_rag)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging on stderr"
    )


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="pycsamt-lsp", description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version", version=f"pycsamt-lsp {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    p = sub.add_parser("corpus", help="fetch or locate the real corpus")
    _common(p)
    p.add_argument(
        "action",
        choices=["fetch", "path"],
        help="fetch: download and unpack; path: print the root",
    )
    p.add_argument(
        "--dest",
        help="cache folder (default: $PYCSAMT_LSP_CACHE or ~/.cache/pycsamt-lsp)",
    )

    p = sub.add_parser("build", help="build the index from scratch and persist it")
    _common(p)
    p.add_argument(
        "--embed",
        nargs="?",
        const="auto",
        metavar="BACKEND",
        help="also embed: auto|local|minilm|hash|openai[:model]",
    )
    p = sub.add_parser("stats", help="counts by kind and workflow of the index")
    _common(p)
    p = sub.add_parser("query", help="ranked chunks for a question")
    _common(p)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--workflow")
    p.add_argument(
        "--dense",
        action="store_true",
        help="fuse dense retrieval (needs build --embed)",
    )

    p = sub.add_parser("serve", help="run the language server (stdio by default)")
    _common(p)
    p.add_argument(
        "--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)"
    )
    p.add_argument("--stdio", action="store_true", help="stdio transport (the default)")

    p = sub.add_parser(
        "validate", help="check a Python file's package imports (exit 1 on errors)"
    )
    _common(p)
    p.add_argument("file", help="a Python file, or - for standard input")

    p = sub.add_parser(
        "search", help="live developer search over the source (no index)"
    )
    _common(p)
    p.add_argument("query")
    p.add_argument(
        "--include-tests", action="store_true", help="also search unit tests"
    )
    p.add_argument("--limit", type=int, default=6)

    p = sub.add_parser(
        "inspect-symbol", help="signature, docstring and lines of a symbol in a file"
    )
    _common(p)
    p.add_argument("path", help="corpus-relative path")
    p.add_argument("symbol", help="e.g. func or Class.method")

    p = sub.add_parser("read-source", help="read at most 80 lines of a corpus file")
    _common(p)
    p.add_argument("path", help="corpus-relative path")
    p.add_argument("--start", type=int, default=1)
    p.add_argument("--lines", type=int, default=80)

    p = sub.add_parser("eval", help="retrieval metrics on the JSONL suites")
    _common(p)
    p.add_argument(
        "--suite-dir",
        help="folder of *.jsonl suites (default: bundled + project suites)",
    )
    p.add_argument("-k", type=int, default=10)
    p.add_argument(
        "--ablate",
        action="store_true",
        help="switch each ranking component off in turn",
    )

    for extra in _EXTRA_PARSERS:
        extra(sub)
    return ap


#: Feature modules add their subcommands here: ``fn(subparsers)``.
_EXTRA_PARSERS: list = []
#: And their runners: ``cmd -> fn(args, open_workspace) -> (result, formatter)``.
_EXTRA_RUNNERS: dict[str, Any] = {}


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )


def _open(args: argparse.Namespace, *, load: bool = True) -> Workspace:
    profile = load_profile(args.profile)
    root = discover_root(profile, args.root, workspace=Path.cwd())
    ws = Workspace(
        root, profile, index_dir=Path(args.index_dir) if args.index_dir else None
    )
    if load:
        ws.open()
    return ws


def _emit(args: argparse.Namespace, result: dict[str, Any], fmt) -> None:
    if args.json or fmt is None:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(fmt(result))


def _run(args: argparse.Namespace) -> int:
    if args.cmd == "corpus":
        profile = load_profile(args.profile)
        if args.action == "fetch":
            root = fetch_corpus(profile, Path(args.dest) if args.dest else None)
        else:
            root = discover_root(profile, args.root, workspace=Path.cwd())
        _emit(args, {"root": str(root)}, lambda r: r["root"])
        return 0
    if args.cmd == "serve":
        from pycsamt_lsp.lsp.server import (
            serve,  # the only place the CLI touches LSP code
        )

        return serve(
            tcp=args.tcp, root=args.root, profile=args.profile, index_dir=args.index_dir
        )
    if args.cmd == "build":
        ws = _open(args, load=False)
        report = ws.build()
        ws.persist()
        if args.embed:
            from pycsamt_lsp.answer.ask import build_embed

            report["embeddings"] = build_embed(ws, args.embed)
        _emit(args, report, REGISTRY["pycsamt.rebuild"].format)
        return 0
    if args.cmd in ("stats", "query"):
        ws = _open(args)
        name = f"pycsamt.{args.cmd}"
        raw = (
            {}
            if args.cmd == "stats"
            else {
                "query": args.query,
                "k": args.k,
                "workflow": args.workflow,
                "dense": args.dense,
            }
        )
        _emit(args, run_command(name, ws, raw), REGISTRY[name].format)
        return 0
    if args.cmd == "validate":
        if args.file == "-":
            code = sys.stdin.read()
        else:
            try:
                code = Path(args.file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CliError(f"cannot read {args.file}: {exc}") from None
        ws = _open(args, load=False)
        result = run_command("pycsamt.validate", ws, {"code": code})
        _emit(args, result, REGISTRY["pycsamt.validate"].format)
        return 1 if result["errors"] else 0
    plain = {
        "search": (
            "pycsamt.searchSource",
            lambda a: {
                "query": a.query,
                "includeTests": a.include_tests,
                "limit": a.limit,
            },
        ),
        "inspect-symbol": (
            "pycsamt.inspectSymbol",
            lambda a: {"path": a.path, "symbol": a.symbol},
        ),
        "read-source": (
            "pycsamt.readSource",
            lambda a: {"path": a.path, "start": a.start, "lines": a.lines},
        ),
    }
    if args.cmd in plain:
        name, build = plain[args.cmd]
        result = run_command(name, _open(args, load=False), build(args))
        _emit(args, result, REGISTRY[name].format)
        return 0
    if args.cmd == "eval":
        raw = {"suiteDir": args.suite_dir, "k": args.k, "ablate": args.ablate}
        _emit(
            args,
            run_command("pycsamt.eval", _open(args), raw),
            REGISTRY["pycsamt.eval"].format,
        )
        return 0
    runner = _EXTRA_RUNNERS.get(args.cmd)
    if runner is None:
        raise CliError(f"unknown command {args.cmd!r}")
    result, fmt, code = runner(args, _open)
    _emit(args, result, fmt)
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    from pycsamt_lsp.commands import handlers as api  # noqa: F401 - registers the commands

    args = _parser().parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return _run(args)
    except (
        CliError,
        CorpusError,
        ProfileError,
        ArgumentError,
        QueryError,
        ValueError,
    ) as exc:
        print(f"pycsamt-lsp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _register_extras() -> None:
    from pycsamt_lsp.answer import ask as _ask

    _EXTRA_PARSERS.append(_ask.add_cli)
    _EXTRA_RUNNERS["ask"] = _ask.run_ask_cli


_register_extras()
