"""The pygls language server: handlers only, each a few lines into the workspace.

Life of the index inside the server:

1. ``initialize`` reads ``initializationOptions``; ``initialized`` asks for
   ``workspace/configuration``, finds the corpus root, then opens the index
   in a worker thread with ``$/progress`` (load when the fingerprint
   matches, update incrementally when it does not, build when there is
   nothing usable). Requests are answered from the loaded snapshot
   meanwhile, flagged ``stale``.
2. File changes arrive through ``workspace/didChangeWatchedFiles`` (registered
   dynamically when the client can) or from a server-side ``watchfiles``
   watcher. Bursts are debounced into one refresh that re-hashes the paths,
   re-chunks only changed files and swaps in a new snapshot; the index is
   persisted in the background afterwards.
3. Commands of :mod:`pycsamt_lsp.commands.registry` run in worker threads; bad
   arguments come back as ``InvalidParams`` errors and the server stays up.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from pycsamt_lsp import __version__
from pycsamt_lsp.commands.registry import REGISTRY, ArgumentError, parse_args
from pycsamt_lsp.corpus.discovery import CorpusError, discover_root
from pycsamt_lsp.corpus.profile import ProfileError, load_profile
from pycsamt_lsp.lsp.settings import Settings
from pycsamt_lsp.workspace.facade import BuildCancelled, QueryError, Workspace

__all__ = ["PycsamtServer", "serve", "server"]

log = logging.getLogger("pycsamt_lsp")

_LEVELS = {
    "error": (logging.ERROR, types.MessageType.Error),
    "warning": (logging.WARNING, types.MessageType.Warning),
    "info": (logging.INFO, types.MessageType.Info),
    "debug": (logging.DEBUG, types.MessageType.Log),
}
_WATCH_GLOBS = ("**/*.py", "**/*.rst", "**/*.md")
INDEX_STATE = "pycsamt/indexState"


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
        for level, kind in _LEVELS.values():
            if record.levelno >= level:
                mtype = kind
                break
        params = types.LogMessageParams(type=mtype, message=self.format(record))
        try:
            loop.call_soon_threadsafe(self.ls.window_log_message, params)
        except RuntimeError:  # loop closed while shutting down
            pass


class PycsamtServer(LanguageServer):
    """Language server state: settings, the workspace, watcher and tasks."""

    def __init__(self) -> None:
        super().__init__("pycsamt-lsp", __version__)
        self.settings = Settings()
        self.ws: Workspace | None = None
        self.state = "starting"
        self.percent = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.opened: asyncio.Future | None = None
        self.index_error: str | None = None
        self._pending: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None
        self._refreshing: asyncio.Lock | None = None
        self._persist: asyncio.TimerHandle | None = None
        self._watch_stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self.cli_overrides: dict[str, Any] = {}
        self.on_index_changed: list = []

    # -- helpers -------------------------------------------------------------

    def spawn(self, coro) -> asyncio.Task:
        """Run *coro* as a task the server keeps (and cancels at shutdown)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

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
        logger = logging.getLogger("pycsamt_lsp")
        logger.setLevel(_LEVELS[self.settings.logLevel][0])

    def update_settings(self, raw: Any) -> None:
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


server = PycsamtServer()


# -- lifecycle -----------------------------------------------------------------


@server.feature(types.INITIALIZE)
def on_initialize(ls: PycsamtServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    handler = _ClientLogHandler(ls)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger = logging.getLogger("pycsamt_lsp")
    logger.addHandler(handler)
    logger.propagate = False  # the client shows these; stderr would repeat them
    ls.opened = ls.loop.create_future()  # requests before `initialized` wait on it
    ls.update_settings(params.initialization_options)
    if ls.cli_overrides:
        ls.settings, _ = ls.settings.merged(ls.cli_overrides)


@server.feature(types.INITIALIZED)
async def on_initialized(ls: PycsamtServer, _params: types.InitializedParams) -> None:
    caps = ls.client_capabilities
    if caps.workspace and caps.workspace.configuration:
        try:
            got = await ls.workspace_configuration_async(
                types.ConfigurationParams(
                    items=[types.ConfigurationItem(section="pycsamt")]
                )
            )
            if got and isinstance(got[0], dict):
                ls.update_settings(got[0])
                if ls.cli_overrides:
                    ls.settings, _ = ls.settings.merged(ls.cli_overrides)
        except Exception as exc:  # noqa: BLE001 - configuration is optional
            log.info("workspace/configuration failed: %s", exc)
    ls.spawn(_start(ls))


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: PycsamtServer, *_args) -> None:
    if ls._watch_stop is not None:
        ls._watch_stop.set()
    if ls.ws is not None:
        ls.ws.cancel_build()  # a build process must not outlive the server
    for handle in (ls._flush, ls._persist):
        if handle is not None:
            handle.cancel()
    tasks = [t for t in ls._tasks if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    if (
        ls.ws is not None
        and ls.ws.snapshot is not None
        and not ls.ws.stats().get("persisted", True)
    ):
        await asyncio.to_thread(ls.ws.persist)


def _workspace_folder(ls: PycsamtServer) -> str | None:
    try:
        folders = list(ls.workspace.folders.values())
    except RuntimeError:
        return None
    if folders:
        return to_fs_path(folders[0].uri)
    root = ls.workspace.root_path
    return root or None


async def _start(ls: PycsamtServer) -> None:
    """Find the corpus, open the index with progress, then watch it."""
    try:
        profile = load_profile(ls.settings.profile)
        root = discover_root(
            profile, ls.settings.corpusRoot, workspace=_workspace_folder(ls)
        )
    except (CorpusError, ProfileError) as exc:
        ls.state, ls.index_error = "error", str(exc)
        log.error("%s", exc)
        ls.show(f"pyCSAMT: {exc}")
        ls.send_state(str(exc))
        ls.opened.set_result(None)
        return
    index_dir = Path(ls.settings.indexDir) if ls.settings.indexDir else None
    ws = Workspace(root, profile, index_dir=index_dir, long_lived=True)
    ls.ws = ws
    _configure_ask(ls)
    ws.listeners.append(lambda _snap: ls.loop.call_soon_threadsafe(_index_changed, ls))
    log.info(
        "corpus root %s (profile %s); index in %s", root, profile.name, ws.index_dir
    )
    # Watch first: a change made while the index opens is queued and applied
    # right after (refreshes wait for the open to finish), never missed.
    await _start_watching(ls)
    await _run_with_progress(ls, "Indexing pyCSAMT corpus", ws.open)
    if not ls.opened.done():
        ls.opened.set_result(None)
    # Queries are answered from here on; load the package model right away
    # too, so the first hover or diagnostics pass does not wait for it.
    if ws.snapshot is not None:
        try:
            await asyncio.to_thread(ws.ensure_model)
        except Exception:  # noqa: BLE001 - diagnostics retry it on first use
            log.exception("loading the package model failed")


def _configure_ask(ls: PycsamtServer) -> None:
    """Hand the answering layer its settings (the key stays in the environment)."""
    if ls.ws is None:
        return
    from pycsamt_lsp.answer.context import configure

    configure(
        ls.ws,
        model=ls.settings.openaiModel,
        dense=ls.settings.dense,
        workspace_root=_workspace_folder(ls),
    )


async def _run_with_progress(ls: PycsamtServer, title: str, work) -> dict | None:
    """Run ``work(progress)`` in a thread with work-done progress and state updates."""
    caps = ls.client_capabilities
    use_progress = bool(caps.window and caps.window.work_done_progress)
    token = f"pycsamt-index-{uuid.uuid4().hex[:8]}"
    progress = ls.work_done_progress
    if use_progress:
        try:
            await progress.create_async(token)
        except Exception as exc:  # noqa: BLE001 - progress is a courtesy
            log.info("client refused progress: %s", exc)
            use_progress = False
    ls.state, ls.percent = ("stale" if ls.ws and ls.ws.snapshot else "building"), 0
    if use_progress:
        progress.begin(
            token,
            types.WorkDoneProgressBegin(title=title, percentage=0, cancellable=False),
        )
    ls.send_state(title)
    last = [-1]

    def report(pct: int, message: str) -> None:
        if pct == last[0]:
            return
        last[0] = pct

        def send() -> None:
            ls.percent = pct
            if (
                ls.ws is not None
                and ls.ws.snapshot is not None
                and ls.state == "building"
            ):
                ls.state = "stale"
            if use_progress:
                progress.report(
                    token, types.WorkDoneProgressReport(message=message, percentage=pct)
                )
            ls.send_state(message)

        ls.loop.call_soon_threadsafe(send)

    try:
        result = await asyncio.to_thread(work, report)
    except asyncio.CancelledError:
        # the server is stopping (client gone): stop a build process too, or
        # the exit would wait for the worker thread, i.e. the whole build
        if ls.ws is not None:
            ls.ws.cancel_build()
        raise
    except BuildCancelled:
        log.info("index build cancelled")
        if use_progress:
            progress.end(token, types.WorkDoneProgressEnd(message="cancelled"))
        return None
    except Exception as exc:  # noqa: BLE001 - reported to the user, server stays up
        log.exception("indexing failed")
        ls.state, ls.index_error = "error", f"indexing failed: {exc}"
        if use_progress:
            progress.end(token, types.WorkDoneProgressEnd(message=ls.index_error))
        ls.show(f"pyCSAMT: {ls.index_error}")
        ls.send_state(ls.index_error)
        return None
    ls.state, ls.percent = "ready", 100
    summary = (
        f"{result.get('action', 'build')}: {result['n_chunks']} chunks from "
        f"{result['n_files']} files in {result['seconds']} s"
        + (" (built in a separate process)" if result.get("isolated") else "")
    )
    log.info("index %s", summary)
    if use_progress:
        progress.end(token, types.WorkDoneProgressEnd(message=summary))
    ls.send_state(summary)
    return result


# -- file watching -------------------------------------------------------------


def _root_in_workspace(ls: PycsamtServer, root: Path) -> bool:
    folder = _workspace_folder(ls)
    if not folder:
        return False
    try:
        root.resolve().relative_to(Path(folder).resolve())
        return True
    except ValueError:
        return False


async def _start_watching(ls: PycsamtServer) -> None:
    ws = ls.ws
    if ws is None or ls.settings.watch == "off":
        return
    caps = ls.client_capabilities
    dyn = caps.workspace and caps.workspace.did_change_watched_files
    client_can = bool(dyn and dyn.dynamic_registration)
    mode = ls.settings.watch
    if mode == "auto":
        mode = "client" if client_can and _root_in_workspace(ls, ws.root) else "server"
    if mode == "client":
        base = ws.root.as_posix().rstrip("/")
        watchers = [
            types.FileSystemWatcher(glob_pattern=f"{base}/{g}") for g in _WATCH_GLOBS
        ]
        try:
            await ls.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id=f"pycsamt-watch-{uuid.uuid4().hex[:8]}",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                watchers=watchers
                            ),
                        )
                    ]
                )
            )
            log.info("file watching: client (didChangeWatchedFiles) for %s", base)
            return
        except Exception as exc:  # noqa: BLE001 - fall back to our own watcher
            log.info(
                "client watcher registration failed (%s); watching server-side", exc
            )
    ls._watch_stop = asyncio.Event()
    ls.spawn(_watch_server_side(ls, ws.root, ls._watch_stop))


async def _watch_server_side(
    ls: PycsamtServer, root: Path, stop: asyncio.Event
) -> None:
    """Watch the corpus with ``watchfiles`` (Rust ``notify``; batches events)."""
    import watchfiles

    profile = ls.ws.profile if ls.ws else None

    def wanted(_change: watchfiles.Change, path: str) -> bool:
        return (
            path.endswith(profile.suffixes if profile else (".py",))
            and "/.pycsamt_rag" not in path
        )

    log.info("file watching: server-side (watchfiles) for %s", root)
    try:
        async for changes in watchfiles.awatch(
            root,
            watch_filter=wanted,
            stop_event=stop,
            debounce=max(ls.settings.debounceMs, 50),
            step=50,
            recursive=True,
            ignore_permission_denied=True,
        ):
            _queue_paths(ls, [p for _c, p in changes])
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - the server keeps running without it
        log.warning("server-side file watcher stopped: %s", exc)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def on_watched_files(
    ls: PycsamtServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = []
    for ev in params.changes:
        p = to_fs_path(ev.uri)
        if p:
            paths.append(p)
    _queue_paths(ls, paths)


def _queue_paths(ls: PycsamtServer, paths: list[str]) -> None:
    """Debounce: a burst of events (a ``git checkout``) becomes one refresh."""
    if not paths or ls.ws is None:
        return
    ls._pending.update(paths)
    if ls._flush is not None:
        ls._flush.cancel()
    ls._flush = ls.loop.call_later(
        ls.settings.debounceMs / 1000.0, lambda: ls.spawn(_flush_pending(ls))
    )


async def _flush_pending(ls: PycsamtServer) -> None:
    if ls._refreshing is None:
        ls._refreshing = asyncio.Lock()
    async with ls._refreshing:
        if ls.opened is not None:
            await asyncio.shield(ls.opened)
        paths, ls._pending = sorted(ls._pending), set()
        if not paths or ls.ws is None:
            return
        try:
            report = await asyncio.to_thread(ls.ws.refresh, paths)
        except Exception:  # noqa: BLE001 - logged; the old snapshot keeps serving
            log.exception("refresh failed for %d paths", len(paths))
            return
        n = len(report["changed"]) + len(report["added"]) + len(report["removed"])
        log.info(
            "refresh of %d paths: %d changed, %d added, %d removed",
            len(paths),
            len(report["changed"]),
            len(report["added"]),
            len(report["removed"]),
        )
        if n:
            _schedule_persist(ls)


def _schedule_persist(ls: PycsamtServer, delay: float = 2.0) -> None:
    """Persist in the background, once a burst of updates has settled."""
    if ls._persist is not None:
        ls._persist.cancel()
    ls._persist = ls.loop.call_later(
        delay, lambda: ls.spawn(asyncio.to_thread(ls.ws.persist))
    )


def _index_changed(ls: PycsamtServer) -> None:
    """A new snapshot is live: tell the client and the features that follow it."""
    if ls.state == "ready":
        ls.send_state("index updated")
    for fn in list(ls.on_index_changed):
        try:
            fn(ls)
        except Exception:  # noqa: BLE001 - one feature must not break others
            log.exception("index-change hook failed")


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_configuration(
    ls: PycsamtServer, params: types.DidChangeConfigurationParams
) -> None:
    before = (ls.settings.corpusRoot, ls.settings.profile)
    ls.update_settings(params.settings)
    _configure_ask(ls)
    if (
        ls.settings.corpusRoot,
        ls.settings.profile,
    ) != before and ls.opened is not None:
        log.info("corpus root or profile changed; reopening the index")
        if ls._watch_stop is not None:
            ls._watch_stop.set()
        ls.opened = ls.loop.create_future()
        ls.spawn(_start(ls))


# -- commands ------------------------------------------------------------------


def _make_command(name: str):
    cmd = REGISTRY[name]

    async def run(ls: PycsamtServer, *args: Any) -> Any:
        try:
            parsed = parse_args(cmd.args, list(args))
        except ArgumentError as exc:
            raise JsonRpcInvalidParams(message=f"{name}: {exc}") from None
        if name == "pycsamt.rebuild":
            ws = await ls.workspace_ready()

            result = await _run_with_progress(
                ls, "Rebuilding pyCSAMT index", ws.rebuild
            )
            if result is None:
                raise JsonRpcInternalError(message=ls.index_error or "rebuild failed")
            return result
        try:
            ctx = await ls.workspace_ready()
            result = await asyncio.to_thread(cmd.handler, ctx, parsed)
        except (ArgumentError, QueryError, ValueError) as exc:
            raise JsonRpcInvalidParams(message=f"{name}: {exc}") from None
        except Exception as exc:
            log.exception("command %s failed", name)
            raise JsonRpcInternalError(message=f"{name} failed: {exc}") from None
        if isinstance(result, dict) and ls.state != "ready":
            result = {**result, "stale": True, "state": ls.state}
        return result

    run.__name__ = name.replace(".", "_")
    return run


def register_commands(ls: PycsamtServer) -> None:
    """Register every command of the shared registry (idempotent)."""
    from pycsamt_lsp.commands import handlers as api  # noqa: F401 - fills the registry

    for name in sorted(REGISTRY):
        if name not in ls.protocol.fm.commands:
            ls.command(name)(_make_command(name))


# -- entry point ---------------------------------------------------------------


def serve(
    *,
    tcp: str | None = None,
    root: str | None = None,
    profile: str | None = None,
    index_dir: str | None = None,
) -> int:
    """Run the server on stdio (or TCP for debugging); returns the exit code."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    overrides: dict[str, Any] = {}
    if root:
        overrides["corpusRoot"] = str(Path(root).resolve())
    if profile and profile != "pycsamt":
        overrides["profile"] = profile
    if index_dir:
        overrides["indexDir"] = str(Path(index_dir).resolve())
    server.cli_overrides = overrides
    register_commands(server)
    from pycsamt_lsp.lsp import features  # noqa: F401 - registers editor features

    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    finally:
        if server.ws is not None:  # the client went away without a shutdown
            server.ws.cancel_build()
    return 0
