"""``workspace/executeCommand``: every command of the catalogue
(:func:`pycsamt_lsp.commands.catalog.build_registry`).

A handler is a few lines: parse the arguments against the command's
dataclass, wait for the index, run the command in the command lane. The
error mapping is the one rule of :mod:`pycsamt_lsp.errors`: the caller's
fault (:class:`~pycsamt_lsp.errors.ArgumentError` and its family) is
``InvalidParams``; anything else is an ``InternalError`` whose message says
what failed, one line, never empty.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from pycsamt_lsp.commands.catalog import build_registry
from pycsamt_lsp.commands.registry import Command, parse_args
from pycsamt_lsp.errors import is_argument_error
from pycsamt_lsp.lsp import indexing
from pycsamt_lsp.lsp.protocol import describe_error

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["register"]

log = logging.getLogger("pycsamt_lsp")


def _given(args: tuple[Any, ...], key: str) -> bool:
    """Whether the command's one argument object names *key* itself."""
    return len(args) == 1 and isinstance(args[0], dict) and key in args[0]


def _make_command(cmd: Command):
    name = cmd.name

    # ``ls: LanguageServer``: pygls resolves the annotations of a command
    # handler at run time, and the real class is only imported for typing.
    async def run(ls: LanguageServer, *args: Any) -> Any:
        server: PycsamtServer = ls  # type: ignore[assignment]
        try:
            parsed = parse_args(cmd.args, list(args))
            if name == "pycsamt.query" and not _given(args, "dense"):
                # the ``dense`` setting is the default of every query the
                # client sends (the palette's, an editor's), not only ask's
                parsed.dense = server.settings.dense
            if name == "pycsamt.rebuild":
                ws = await server.workspace_ready()
                result = await indexing.run_with_progress(
                    server, "Rebuilding pyCSAMT index", ws.rebuild
                )
                if result is None:
                    raise RuntimeError(server.index_error or "rebuild failed")
                return result
            ctx = await server.workspace_ready()
            try:
                result = await server.run_blocking(
                    name, cmd.handler, ctx, parsed, lane="command"
                )
            finally:  # the first answer is out: the package model may load
                server.want_model()
        except Exception as exc:  # every failure is answered
            if is_argument_error(exc):
                log.info("%s: %s", name, describe_error(exc))
                raise JsonRpcInvalidParams(
                    message=f"{name}: {describe_error(exc)}"
                ) from None
            log.exception("command %s failed", name)
            raise JsonRpcInternalError(
                message=f"{name} failed: {describe_error(exc)}"
            ) from None
        if isinstance(result, dict) and server.state != "ready":
            result = {**result, "stale": True, "state": server.state}
        return result

    run.__name__ = name.replace(".", "_")
    return run


def register(ls: PycsamtServer) -> None:
    """Register every command of the catalogue on *ls* (built explicitly)."""
    registry = build_registry()
    for name in sorted(registry):
        ls.command(name)(_make_command(registry[name]))
