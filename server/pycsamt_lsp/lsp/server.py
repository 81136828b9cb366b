"""The language server: its state, the factory that wires it, the entry point.

Life of the index inside the server:

1. ``initialize`` reads ``initializationOptions``; ``initialized`` asks for
   ``workspace/configuration``, finds the corpus root, then opens the index
   in a worker thread with ``$/progress`` (load when the fingerprint
   matches, update incrementally when it does not, build when there is
   nothing usable). Requests are answered from the loaded snapshot
   meanwhile, flagged ``stale`` (:mod:`.lifecycle`, :mod:`.indexing`).
2. File changes arrive through ``workspace/didChangeWatchedFiles`` (registered
   dynamically when the client can) or from a server-side ``watchfiles``
   watcher. Bursts are debounced into one refresh that re-hashes the paths,
   re-chunks only changed files and swaps in a new snapshot; the index is
   persisted in the background afterwards (:mod:`.indexing`).
3. Commands of :mod:`pycsamt_lsp.commands.registry` run in worker threads;
   argument errors come back as ``InvalidParams``, internal failures as
   ``InternalError``, and the server stays up (:mod:`.commands`).
4. Editor features (:mod:`.hover`, :mod:`.definition`, :mod:`.completion`,
   :mod:`.symbols`, :mod:`.diagnostics`) each answer within a budget
   (:mod:`.offload`), on positions clamped to the document.

Nothing registers on import: :func:`create_server` makes a server and calls
each feature module's ``register(server)``. All mutable state (timers, the
buffer cache, pending diagnostics, the worker lanes) is on the instance, so
two servers in one process share nothing.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from pycsamt_lsp import __version__
from pycsamt_lsp.errors import QueryError
from pycsamt_lsp.lsp import (
    code_actions,
    commands,
    completion,
    definition,
    diagnostics,
    folders,
    hover,
    indexing,
    lifecycle,
    symbols,
)
from pycsamt_lsp.lsp.offload import Offload
from pycsamt_lsp.lsp.protocol import OneLineFormatter, PycsamtProtocol, is_parse_error
from pycsamt_lsp.lsp.settings import Settings

if TYPE_CHECKING:
    from pycsamt_lsp.analysis.editor import BufferCache
    from pycsamt_lsp.lsp.codecache import StartCodeCache
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["FEATURES", "INDEX_STATE", "PycsamtServer", "create_server", "serve"]

log = logging.getLogger("pycsamt_lsp")

INDEX_STATE = "pycsamt/indexState"
LEVELS = MappingProxyType(
    {
        "error": (logging.ERROR, types.MessageType.Error),
        "warning": (logging.WARNING, types.MessageType.Warning),
        "info": (logging.INFO, types.MessageType.Info),
        "debug": (logging.DEBUG, types.MessageType.Log),
    }
)
#: Feature modules, each with ``register(server)``; the factory calls them in order.
FEATURES = (
    lifecycle,
    indexing,
    commands,
    diagnostics,
    code_actions,
    hover,
    definition,
    completion,
    symbols,
)


class PycsamtServer(LanguageServer):
    """Everything the server holds: settings, the workspace, the index
    state, timers, the buffer cache, pending diagnostics and worker lanes."""

    #: seconds an editor request (hover, completion, definition) may work
    editor_budget: float = 5.0
    #: seconds one diagnostics pass may work
    diagnostics_budget: float = 15.0
    #: editor features skip buffers longer than this (characters)
    max_document_chars: int = 4_000_000

    def __init__(self) -> None:
        super().__init__("pycsamt-lsp", __version__, protocol_cls=PycsamtProtocol)
        self.settings = Settings()
        self.cli_overrides: dict[str, Any] = {}
        # the settings layers and the one start path (lsp.configuration)
        self.init_settings: Any = None
        self.config_settings: Any = None
        self.folder_settings: dict[str, Any] = {}
        self.settings_problems: set[str] = set()
        self.config_done = False
        self.started_key: tuple | None = None
        self.start_task: asyncio.Task | None = None
        #: the engine's imports, started once ``initialize`` is answered
        #: (:func:`.indexing.preload`)
        self.preloaded: asyncio.Task | None = None
        #: multi-root: the other folders' workspaces by resolved root (lsp.folders)
        self.extra: dict[str, Workspace] = {}
        self.extra_opened: dict[str, asyncio.Future] = {}
        self.extra_stops: dict[str, asyncio.Event] = {}
        self.ws: Workspace | None = None
        self.state = "starting"
        self.percent = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        #: resolved once the first index is open (requests wait on it)
        self.opened: asyncio.Future | None = None
        #: resolved once the package model is loaded after an open
        self.model_loaded: asyncio.Future | None = None
        #: set when a request wants the package model (lsp.indexing loads it
        #: then, after the first answer or after a quiet spell)
        self.model_wanted: asyncio.Event | None = None
        self.index_error: str | None = None
        # file watching and refreshes (lsp.indexing)
        self.pending_paths: set[str] = set()
        self.flush_timer: asyncio.TimerHandle | None = None
        #: the index-change hooks waiting for a snapshot to settle (lsp.indexing)
        self.hooks_timer: asyncio.TimerHandle | None = None
        #: loop time of the last watched-file event (the debounce's leading edge)
        self.last_change_at: float = float("-inf")
        self.persist_timer: asyncio.TimerHandle | None = None
        self.refreshing: asyncio.Lock | None = None
        self.watch_stop: asyncio.Event | None = None
        # editor state (lsp.diagnostics, lsp.hover & co)
        self.diagnostics_timers: dict[str, asyncio.TimerHandle] = {}
        #: last full pull-diagnostics report per URI (answered when a pass is over budget)
        self.pulled: dict[str, list[types.Diagnostic]] = {}
        self._buffers: BufferCache | None = None
        self._buffers_lock = threading.Lock()
        self.offload = Offload(editor_budget=self.editor_budget)
        self.tasks: set[asyncio.Task] = set()
        self.on_index_changed: list = []
        self.shutdown_requested = False
        self.exit_code = 0
        #: the cyclic collector was paused for the start (``serve``): it is
        #: turned back on once the first answer is out (:meth:`resume_gc`)
        self.gc_paused = False
        #: cattrs' generated functions of the start, kept between starts
        #: (``serve`` installs it; :meth:`end_code_cache` ends it)
        self.code_cache: StartCodeCache | None = None

    # -- helpers -------------------------------------------------------------

    @property
    def buffers(self) -> BufferCache:
        """The buffer analysis cache, made on first use (in the worker of the
        first editor request: the analysis modules are not imported before)."""
        got = self._buffers
        if got is None:
            with self._buffers_lock:
                if self._buffers is None:
                    from pycsamt_lsp.analysis.editor import BufferCache

                    self._buffers = BufferCache()
                got = self._buffers
        return got

    def want_model(self) -> None:
        """A request needs the package model (or the first answer is out):
        load it now if it is not loaded yet (:func:`.indexing.start`)."""
        if self.model_wanted is not None:
            self.model_wanted.set()

    def resume_gc(self, *, collect: bool) -> None:
        """Turn the cyclic collector back on if the start paused it; with
        *collect*, first collect what the start left (one full collection,
        freed heap back to the OS, the rest frozen again: ``heap.compact``).

        Why paused: a start (imports, lsprotocol's converter, the first
        messages, the index load) allocates some 120,000 containers, and
        the ~200 collections they set off, a full one among them, cost
        ~0.15 G of its ~2.2 G instructions to the first answer (issue 18:
        warm start); the garbage is 17,000 objects, ~4 MB. Collected here,
        after the first answer (before the package model loads, so that load
        reuses the freed memory), it costs the same once, off the path.
        """
        if not self.gc_paused:
            return
        self.gc_paused = False
        if collect:
            from pycsamt_lsp.index import heap

            heap.compact()
        gc.enable()

    def end_code_cache(self) -> None:
        """End the start's cattrs code cache (the first answer is out, or
        the start ended without one); its file, if it must be rewritten, is
        written in the command lane, off the event loop."""
        cache, self.code_cache = self.code_cache, None
        write = cache.stop() if cache is not None else None
        if write is not None:
            self.spawn(self.run_blocking("code cache", write, lane="command"))

    def spawn(self, coro) -> asyncio.Task:
        """Run *coro* as a task the server keeps (and cancels at shutdown)."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def run_blocking(
        self,
        what: str,
        fn,
        *args: Any,
        lane: str = "editor",
        budget: float | None = None,
        default: Any = None,
    ) -> Any:
        """The one helper that runs blocking work off the event loop
        (bounded; see :class:`~pycsamt_lsp.lsp.offload.Offload`)."""
        return await self.offload.run(
            what, fn, *args, lane=lane, budget=budget, default=default
        )

    def send_state(self, message: str = "") -> None:
        """Tell the client the index state (status bar)."""
        ws = self.ws
        snap = ws.snapshot if ws else None
        self.protocol.notify(
            INDEX_STATE,
            {
                "state": self.state,
                "percent": self.percent,
                "nChunks": snap.n_chunks if snap else 0,
                "message": message,
            },
        )

    def show(
        self, message: str, kind: types.MessageType = types.MessageType.Error
    ) -> None:
        """A message the user must act on (``window/showMessage``)."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def apply_log_level(self) -> None:
        """Set the ``pycsamt_lsp`` logger to the ``logLevel`` setting."""
        logging.getLogger("pycsamt_lsp").setLevel(LEVELS[self.settings.logLevel][0])

    def update_settings(self, raw: Any) -> None:
        """Merge *raw* client settings into the current ones; each invalid value
        keeps its previous setting and is reported (log and a warning message).
        """
        new, problems = self.settings.merged(raw)
        self.settings = new
        self.apply_log_level()
        for p in problems:
            log.warning("%s", p)
            self.show(f"pyCSAMT: {p}", types.MessageType.Warning)

    async def workspace_ready(self, timeout: float = 600.0) -> Workspace:
        """The workspace with a snapshot, waiting for the first one if needed."""
        if self.ws is not None and self.ws.snapshot is not None:
            return self.ws
        if self.opened is None:
            raise QueryError(self.index_error or "the index has not been started")
        try:
            await asyncio.wait_for(asyncio.shield(self.opened), timeout)
        except TimeoutError:
            raise QueryError("the index is still building; try again shortly") from None
        if self.ws is None or self.ws.snapshot is None:
            raise QueryError(self.index_error or "no index is available")
        return self.ws

    async def editor_workspace(self, uri: str | None = None) -> Workspace | None:
        """The workspace for an editor request on *uri* (the workspace
        folder's that contains it, else the primary one), its package model
        loaded (the one-off model load is not charged to a request's
        budget), or None when there is no index to answer from."""
        try:
            ws = await self.workspace_ready()
        except QueryError:
            return None
        own = folders.workspace_for(self, uri)
        if own is not None and own is not ws:
            return own if await folders.extra_ready(self, own, 600.0) else None
        fut = self.model_loaded
        if fut is not None and not fut.done():
            self.want_model()
            try:
                await asyncio.wait_for(asyncio.shield(fut), 600.0)
            except TimeoutError:
                return None
        return ws

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors outside a request: a body that is not JSON gets its
        ``ParseError``; the rest is logged as one line, not shown as a
        pop-up (the user cannot act on a client's protocol error)."""
        if is_parse_error(error):
            self.protocol.parse_error(error)  # type: ignore[attr-defined]
            return
        if source is FeatureRequestError:
            return  # already answered, as the request's error response
        log.warning("%s: %s", getattr(source, "__name__", source), error)


def create_server() -> PycsamtServer:
    """A new server with every feature registered (nothing global)."""
    ls = PycsamtServer()
    for feature in FEATURES:
        feature.register(ls)
    return ls


def _stderr_logging() -> None:
    """stderr gets pygls' records as one line each (no tracebacks
    for a client's malformed requests); an existing handler (the CLI's) is
    reused rather than doubled."""
    root = logging.getLogger()
    fmt = "%(levelname)s %(name)s: %(message)s"
    streams = [h for h in root.handlers if isinstance(h, logging.StreamHandler)]
    if not streams:
        streams = [logging.StreamHandler(sys.stderr)]
        root.addHandler(streams[0])
    for h in streams:
        h.setFormatter(OneLineFormatter(fmt))


def serve(
    *,
    tcp: str | None = None,
    root: str | None = None,
    profile: str | None = None,
    index_dir: str | None = None,
    resume_gc: bool = False,
    code_cache: StartCodeCache | None = None,
) -> int:
    """Run the server on stdio (or TCP for debugging); returns the exit code
    (1 when the client sent ``exit`` without ``shutdown``, as LSP says).
    *resume_gc*: the caller paused the cyclic collector for the start; the
    server turns it back on after its first answer (:meth:`PycsamtServer.resume_gc`).
    *code_cache*: the start's code cache when the caller installed its first
    part already (:func:`~pycsamt_lsp.lsp.codecache.early_code_cache`)."""
    from pycsamt_lsp.index import heap
    from pycsamt_lsp.lsp.codecache import start_code_cache
    from pycsamt_lsp.lsp.offload import tune_gil

    heap.tune_malloc()  # before any thread or index: heap growth (issue 18)
    tune_gil()  # a 1 ms GIL switch interval: editor hand-offs under load
    _stderr_logging()
    overrides: dict[str, Any] = {}
    if root:
        overrides["corpusRoot"] = str(Path(root).resolve())
    if profile and profile != "pycsamt":
        overrides["profile"] = profile
    if index_dir:
        overrides["indexDir"] = str(Path(index_dir).resolve())
    code_cache = start_code_cache(code_cache)  # before the converter is made
    ls = create_server()
    ls.code_cache = code_cache
    ls.cli_overrides = overrides
    ls.gc_paused = resume_gc
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            ls.start_tcp(host or "127.0.0.1", int(port))
        else:
            ls.start_io()
    finally:
        if ls.ws is not None:  # the client went away without a shutdown
            ls.ws.cancel_build()
        if ls.code_cache is not None:
            ls.code_cache.stop()  # no first answer: nothing written
            ls.code_cache = None
        ls.offload.shutdown()
        ls.resume_gc(collect=False)
    stuck = ls.offload.busy("editor")
    # a job's thread may also be alive without being counted any more (its
    # request was answered at the budget); Python would join it at exit
    alive = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    if stuck or alive:
        # Python would join those threads at exit, i.e. wait for the very
        # work their budget gave up on; the client asked us to go now.
        log.warning(
            "exiting with %d editor jobs (%d threads) still running", stuck, len(alive)
        )
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed by ``exit`` already
                pass
        os._exit(ls.exit_code)
    return ls.exit_code
