"""Session life: ``initialize``, ``initialized``, configuration, ``shutdown``, ``exit``.

``initialize`` installs the client log handler and reads the
``initializationOptions``; ``initialized`` asks for ``workspace/configuration``
and starts the index (:func:`pycsamt_lsp.lsp.indexing.start`) through the
one start path of :mod:`.configuration`, which ``didChangeConfiguration``
goes through too. ``shutdown``
stops the watcher, the build and every task, and persists an index that was
updated in memory; ``exit`` records the exit code LSP asks for (0 after a
``shutdown``, 1 without one).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from pycsamt_lsp.lsp import configuration, folders, indexing

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["register"]

log = logging.getLogger("pycsamt_lsp")


class _ClientLogHandler(logging.Handler):
    """Forwards ``pycsamt_lsp`` log records to ``window/logMessage``."""

    def __init__(self, ls: PycsamtServer) -> None:
        super().__init__()
        self.ls = ls

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.ls.loop
        if loop is None or loop.is_closed():
            return
        mtype = types.MessageType.Log
        for level, kind in (
            (logging.ERROR, types.MessageType.Error),
            (logging.WARNING, types.MessageType.Warning),
            (logging.INFO, types.MessageType.Info),
        ):
            if record.levelno >= level:
                mtype = kind
                break
        try:
            text = self.format(record)
        except Exception:  # noqa: BLE001 - a log line must never fail a request
            return
        params = types.LogMessageParams(type=mtype, message=text)
        try:
            loop.call_soon_threadsafe(self.ls.window_log_message, params)
        except RuntimeError:  # loop closed while shutting down
            pass


def on_initialize(ls: PycsamtServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    handler = _ClientLogHandler(ls)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger = logging.getLogger("pycsamt_lsp")
    logger.addHandler(handler)
    logger.propagate = False  # the client shows these; stderr would repeat them
    ls.opened = ls.loop.create_future()  # requests before `initialized` wait on it
    ls.init_settings = params.initialization_options
    configuration.recompute(ls)
    # the engine's imports (numpy, the index) once this answer is sent:
    # pygls writes it when this handler returns, before the loop's next turn
    ls.loop.call_soon(indexing.preload, ls)


async def on_initialized(ls: PycsamtServer, _params: types.InitializedParams) -> None:
    if await configuration.pull(ls):
        configuration.recompute(ls)
    ls.config_done = True
    configuration.apply(ls, reason="initialized")


async def on_configuration(
    ls: PycsamtServer, params: types.DidChangeConfigurationParams
) -> None:
    pushed = configuration.push(ls, params.settings)
    if not pushed and not await configuration.pull(ls):
        return
    configuration.recompute(ls)
    configuration.apply(ls, reason="didChangeConfiguration")


async def on_folders(
    ls: PycsamtServer, _params: types.DidChangeWorkspaceFoldersParams
) -> None:
    """``workspace/didChangeWorkspaceFolders`` (pygls has updated the folder
    list): the folders' workspaces follow (:mod:`.folders`)."""
    await folders.on_folders_changed(
        ls,
        lambda: configuration.apply(
            ls, reason="didChangeWorkspaceFolders", restart=True
        ),
        watch=indexing.watch_workspace,
    )


async def on_shutdown(ls: PycsamtServer, *_args) -> None:
    ls.shutdown_requested = True
    if ls.watch_stop is not None:
        ls.watch_stop.set()
    if ls.ws is not None:
        ls.ws.cancel_build()  # a build process must not outlive the server
    for extra in ls.extra.values():  # the other folders' workspaces (lsp.folders)
        extra.cancel_build()
    for stop in ls.extra_stops.values():
        stop.set()
    timers = (ls.flush_timer, ls.persist_timer, ls.hooks_timer)
    for handle in (*timers, *ls.diagnostics_timers.values()):
        if handle is not None:
            handle.cancel()
    ls.diagnostics_timers.clear()
    tasks = [t for t in ls.tasks if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    if (
        ls.ws is not None
        and ls.ws.snapshot is not None
        and not ls.ws.stats().get("persisted", True)
    ):
        await ls.run_blocking("persist at shutdown", ls.ws.persist, lane="command")


def on_exit(ls: PycsamtServer, *_args) -> None:
    """Runs before pygls stops the loop: LSP's exit code is 1 without shutdown."""
    ls.exit_code = 0 if ls.shutdown_requested else 1
    if not ls.shutdown_requested:
        log.warning("exit without shutdown: exiting with code 1")


def register(ls: PycsamtServer) -> None:
    """Register the lifecycle handlers on *ls*."""
    ls.feature(types.INITIALIZE)(on_initialize)
    ls.feature(types.INITIALIZED)(on_initialized)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(on_configuration)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(on_folders)
    ls.feature(types.SHUTDOWN)(on_shutdown)
    ls.feature(types.EXIT)(on_exit)
