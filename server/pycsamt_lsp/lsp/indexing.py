"""The index inside the server: open it with progress, watch the corpus,
debounce changes into refreshes, persist in the background.

``start`` finds the corpus root (settings, then the workspace folder), opens
the index in the command lane with ``$/progress`` and the ``pycsamt/indexState``
notification, then loads the package model so the first hover does not pay
for it. Watching is the client's (``didChangeWatchedFiles``, registered
dynamically) when it can and the corpus is in its workspace, else
server-side (``watchfiles``). A burst of events becomes one refresh.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from pycsamt_lsp.corpus.discovery import discover_root
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.errors import BuildCancelled, CorpusError, ProfileError
from pycsamt_lsp.lsp import folders
from pycsamt_lsp.lsp.progress import WorkDone

if TYPE_CHECKING:
    from pycsamt_lsp.corpus.profile import Profile
    from pycsamt_lsp.lsp.server import PycsamtServer
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["configure_ask", "preload", "register", "run_with_progress", "start"]

log = logging.getLogger("pycsamt_lsp")

# .pyi / .pyx: not indexed, but package-model modules (stubs, Cython)
_WATCH_GLOBS = ("**/*.py", "**/*.pyi", "**/*.pyx", "**/*.rst", "**/*.md")
#: a client's watched-file notification of at most this many paths is a
#: save (refreshed at once after a quiet spell; see ``queue_paths``)
LEADING_MAX_PATHS = 4
#: seconds a new snapshot waits, without another, before the features that
#: follow it re-run (see ``index_changed``)
HOOKS_SETTLE_S = 0.1
#: seconds after the index opened without a request wanting the package
#: model before it is loaded anyway (a request that wants it starts it at once)
MODEL_QUIET_S = 0.5


#: what a warm start's open and first answer import: numpy and the index
#: modules (``Workspace.open`` imports the ranking modules itself)
PRELOAD_MODULES = (
    "pycsamt_lsp.workspace.facade",
    "pycsamt_lsp.workspace.published",
    "pycsamt_lsp.workspace.freshness",
    "pycsamt_lsp.workspace.warm",
    "pycsamt_lsp.search.retrieval",
    "pycsamt_lsp.search.stages",
)


def _import_engine() -> None:
    import importlib

    for name in PRELOAD_MODULES:
        importlib.import_module(name)


def preload(ls: PycsamtServer) -> None:
    """Import the engine's index modules in the command lane, from the
    ``initialize`` handler once its answer is out.

    Why: numpy and the index modules are ~0.07 s of CPU a warm start used
    to spend before it could answer ``initialize`` (issue 18: warm start);
    none of it is needed for the handshake. Imported here they overlap with
    the client's side of the handshake (its handling of the answer, the
    ``initialized`` notification, the watcher registration's round trip),
    and :func:`start` waits for them before it makes the workspace.
    Engine modules never import ``lsp/`` (tests/test_architecture.py), so
    this thread and the event loop's lazy imports of ``lsp/`` modules cannot
    wait on each other's import locks.
    """
    if ls.preloaded is None:
        ls.preloaded = ls.spawn(
            ls.run_blocking("preload", _import_engine, lane="command")
        )


async def _preloaded(ls: PycsamtServer) -> None:
    """Wait for :func:`preload` (if it ran); a failure there is left to the
    imports that follow, which raise it where it can be reported."""
    task = ls.preloaded
    if task is not None:
        try:
            await asyncio.shield(task)
        except Exception:  # the import below raises it again
            log.debug("preloading the engine failed", exc_info=True)


def workspace_folder(ls: PycsamtServer, profile: Profile | None = None) -> str | None:
    """The first workspace folder that holds the profile's package, else the
    first folder (or the root path), if any (:mod:`.folders`); *profile*:
    the one the caller loaded already."""
    holding = folders.corpus_folders(ls, profile)
    if holding:
        return str(holding[0])
    paths = folders.folder_paths(ls)
    return str(paths[0]) if paths else None


async def start(ls: PycsamtServer) -> None:
    """Find the corpus, open the index with progress, then watch it."""
    assert ls.loop is not None and ls.opened is not None
    ls.model_loaded = ls.loop.create_future()
    ls.model_wanted = asyncio.Event()
    registering: asyncio.Task | None = None
    try:
        profile = load_profile(ls.settings.profile)
        folder = workspace_folder(ls, profile)
        root = discover_root(profile, ls.settings.corpusRoot, workspace=folder)
        if _watch_mode(ls, root) == "client":
            # sent now, so its round trip overlaps the engine's imports
            # instead of delaying the open (see ``_start_watching``); the
            # workspace's root is the resolved one
            registering = ls.spawn(_register_client_watcher(ls, root.resolve()))
        await _preloaded(ls)
        # imported after `initialize` was answered (see ``preload``): a broken
        # install (numpy) is reported here instead of leaving requests waiting
        from pycsamt_lsp.workspace.facade import Workspace
    except (CorpusError, ProfileError, ImportError) as exc:
        ls.state, ls.index_error = "error", str(exc)
        log.error("%s", exc)
        ls.show(f"pyCSAMT: {exc}")
        ls.send_state(str(exc))
        ls.opened.set_result(None)
        ls.model_loaded.set_result(None)
        return
    index_dir = Path(ls.settings.indexDir) if ls.settings.indexDir else None
    ws = Workspace(root, profile, index_dir=index_dir, long_lived=True)
    ls.ws = ws
    configure_ask(ls, folder)
    loop = ls.loop
    ws.listeners.append(lambda _snap: loop.call_soon_threadsafe(index_changed, ls))
    log.info(
        "corpus root %s (profile %s); index in %s", root, profile.name, ws.index_dir
    )
    # Watch first: a change made while the index opens is queued and applied
    # right after (refreshes wait for the open to finish), never missed.
    await _start_watching(ls, registering=registering)
    model_loaded = ls.model_loaded
    try:
        await run_with_progress(ls, "Indexing pyCSAMT corpus", ws.open)
        if not ls.opened.done():
            ls.opened.set_result(None)
        # Queries are answered from here on. The package model (and what
        # hover and diagnostics build on it) loads once something wants it,
        # after the first answer, or after a short quiet spell, whichever
        # comes first: loading it as soon as the index is open took the CPU
        # from the first query (warm start, issue 18). Editor requests wait
        # for it (``editor_workspace``), so none sees it half loaded.
        if ws.snapshot is not None:
            await _until_model_wanted(ls)
            ls.end_code_cache()  # the first answer is out (or a quiet spell)
            try:
                await ls.run_blocking(
                    "model load", _load_for_editing, ls, ws, lane="command"
                )
            except Exception:  # diagnostics retry it on first use
                log.exception("loading the package model failed")
            # outline the large modules: the first save of any of them (opened
            # or not) then re-chunks only what it changed (Workspace.prepare_saves;
            # each extra folder's workspace too, lsp.folders)
            ls.spawn(folders.outline(ls, ws))
            if ls.settings.dense:  # edits made while the server was down
                from pycsamt_lsp.lsp.embedding import reembed

                ls.spawn(reembed(ls, ws))
    finally:
        ls.end_code_cache()
        ls.resume_gc(collect=True)  # no open, or it failed (else done already)
        if not model_loaded.done():
            model_loaded.set_result(None)
    await folders.sync(ls, watch=watch_workspace)  # the other corpus folders


async def _until_model_wanted(ls: PycsamtServer) -> None:
    """Return when a request wants the package model (``ls.want_model``),
    or after :data:`MODEL_QUIET_S` without one."""
    wanted = ls.model_wanted
    if wanted is None or wanted.is_set():
        return
    try:
        await asyncio.wait_for(wanted.wait(), MODEL_QUIET_S)
    except TimeoutError:
        pass


def _load_for_editing(ls: PycsamtServer, ws: Workspace) -> None:
    """The package model, the editor analysis modules and the card tables,
    in a worker: the first hover, completion or diagnostics pass then pays
    none of it (the imports alone are ~0.15 s). The loaded ranking arrays
    are made ready for a save's update too (``Published.prepare``). First,
    the cyclic collector paused for the start is back (the first answer is
    out), after one collection of the start's garbage."""
    ls.resume_gc(collect=True)
    import pycsamt_lsp.analysis.editor  # noqa: F401 - imported for the first request
    from pycsamt_lsp.cards.card import warm

    pub = ws.published
    if pub is not None:
        pub.prepare()
    warm(ws)  # ensure_model(), then the card cache and the symbol table


def configure_ask(ls: PycsamtServer, folder: str | None = None) -> None:
    """Hand the answering layer its settings (the key stays in the environment);
    *folder*: :func:`workspace_folder`, if the caller has it already.

    Before a command first uses it the answering layer is not even imported
    (answer/, routing/ and the dense lane are ~2 MB and ~0.3 s of a start):
    the settings wait in ``ws.ask_changes`` and apply when it loads."""
    ws = ls.ws
    if ws is None:
        return
    changes = {
        "model": ls.settings.openaiModel,
        "model_routing": ls.settings.openaiModelRouting,
        "dense": ls.settings.dense,
        "workspace_root": folder if folder is not None else workspace_folder(ls),
    }
    if "answers" in vars(ws):  # loaded (cached_property): configure it now
        ws.answers.configure(**changes)
    else:
        ws.ask_changes = changes


async def run_with_progress(ls: PycsamtServer, title: str, work) -> dict | None:
    """Run ``work(progress)`` in a worker with work-done progress and state updates.

    The work starts at once: the client's answer to the progress token's
    ``window/workDoneProgress/create`` (a round trip, 10-40 ms on a loaded
    machine, before a warm start's ~80 ms open) arrives while it runs. A
    report made before the token is begun is held, and the latest one sent
    right after ``begin`` (warm start, issue 18).
    """
    progress = WorkDone(ls, "pycsamt-index")
    ls.state, ls.percent = ("stale" if ls.ws and ls.ws.snapshot else "building"), 0
    begun = False
    held: list[tuple[int, str]] = []  # the latest report before ``begin``

    def send(pct: int, message: str) -> None:
        ls.percent = pct
        if ls.ws is not None and ls.ws.snapshot is not None and ls.state == "building":
            ls.state = "stale"
        if begun:
            progress.report(pct, message)
        else:
            held[:] = [(pct, message)]
        ls.send_state(message)

    report = progress.from_thread(send)
    ls.send_state(title)
    job = asyncio.ensure_future(ls.run_blocking(title, work, report, lane="command"))
    try:
        await progress.open(title, cancellable=False)
        begun = True
        if held:
            progress.report(*held[-1])
        result = await job
    except asyncio.CancelledError:
        # the server is stopping (client gone): stop a build process too, or
        # the exit would wait for the worker thread, i.e. the whole build
        job.cancel()
        if ls.ws is not None:
            ls.ws.cancel_build()
        raise
    except BuildCancelled:
        log.info("index build cancelled")
        progress.end("cancelled")
        return None
    except Exception as exc:  # reported to the user, server stays up
        log.exception("indexing failed")
        ls.state, ls.index_error = "error", f"indexing failed: {exc}"
        progress.end(ls.index_error)
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
    progress.end(summary)
    ls.send_state(summary)
    return result


# -- file watching -------------------------------------------------------------


def _root_in_workspace(ls: PycsamtServer, root: Path) -> bool:
    for folder in folders.folder_paths(ls):
        try:
            root.resolve().relative_to(folder.resolve())
            return True
        except ValueError:
            continue
    return False


def _watch_mode(ls: PycsamtServer, root: Path) -> str:
    """``off``, ``client`` (``didChangeWatchedFiles``, registered dynamically)
    or ``server`` (``watchfiles``) for the corpus at *root*."""
    mode = ls.settings.watch
    if mode != "auto":
        return mode
    caps = ls.client_capabilities
    dyn = caps.workspace and caps.workspace.did_change_watched_files
    client_can = bool(dyn and dyn.dynamic_registration)
    return "client" if client_can and _root_in_workspace(ls, root) else "server"


async def _register_client_watcher(ls: PycsamtServer, root: Path) -> bool:
    """Ask the client to watch *root* (``client/registerCapability``); False
    when it refused or failed (the caller then watches server-side)."""
    base = root.as_posix().rstrip("/")
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
    except Exception as exc:  # noqa: BLE001 - fall back to our own watcher
        log.info("client watcher registration failed (%s); watching server-side", exc)
        return False
    log.info("file watching: client (didChangeWatchedFiles) for %s", base)
    return True


async def _start_watching(
    ls: PycsamtServer,
    ws: Workspace | None = None,
    *,
    registering: asyncio.Task | None = None,
) -> None:
    """Watch *ws* (the primary workspace by default; a folder's own one
    from :mod:`.folders`): the client's watcher when it can, else ours.

    *registering*: the client registration :func:`start` sent for the
    primary workspace before it made it (the round trip then overlaps the
    engine's imports: a warm start waited 3-8 ms for it before the open,
    issue 18); awaited here, so the client watches before the open checks
    the corpus. An event that arrives before the workspace exists is for a
    change the open's check sees on disk anyway."""
    primary = ws is None
    ws = ls.ws if ws is None else ws
    if ws is None or ls.settings.watch == "off":
        return
    if registering is not None:
        if await registering:
            return
    elif _watch_mode(ls, ws.root) == "client" and await _register_client_watcher(
        ls, ws.root
    ):
        return
    stop = asyncio.Event()
    if primary:
        ls.watch_stop = stop
    else:
        ls.extra_stops[str(ws.root)] = stop
    ls.spawn(_watch_server_side(ls, ws.root, stop))


async def watch_workspace(ls: PycsamtServer, ws: Workspace) -> None:
    """Watch a workspace folder's own workspace (:mod:`.folders`)."""
    await _start_watching(ls, ws)


async def _watch_server_side(
    ls: PycsamtServer, root: Path, stop: asyncio.Event
) -> None:
    """Watch the corpus with ``watchfiles`` (Rust ``notify``; batches events)."""
    import watchfiles  # only this watcher mode needs the extension

    profile = ls.ws.profile if ls.ws else None

    def wanted(_change: watchfiles.Change, path: str) -> bool:
        return (
            path.endswith(
                (*(profile.suffixes if profile else (".py",)), ".pyi", ".pyx")
            )
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
            queue_paths(ls, [p for _c, p in changes])
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - the server keeps running without it
        log.warning("server-side file watcher stopped: %s", exc)


def on_watched_files(
    ls: PycsamtServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = []
    for ev in params.changes:
        try:
            p = to_fs_path(ev.uri)
        except Exception:  # noqa: BLE001 - one bad URI must not drop the others
            p = None
        if p and "\x00" not in p:
            paths.append(p)
        else:
            log.warning("ignored a watched-file event with a bad URI: %.200r", ev.uri)
    # a save is one notification of a path or two (the client's watcher has
    # batched the events of the write); a checkout is a long list
    queue_paths(ls, paths, leading=len(paths) <= LEADING_MAX_PATHS)


def queue_paths(ls: PycsamtServer, paths: list[str], *, leading: bool = False) -> None:
    """Debounce: a burst of events (a ``git checkout``) becomes one refresh,
    ``debounceMs`` after its last event.

    With *leading* (a client's notification of a few paths: a save, sent
    once the editor has written the file), the first event after a quiet
    spell of ``debounceMs`` is refreshed at once, and only the events that
    follow it within the spell wait. Waiting the whole spell before every
    save was most of what a user waited for between saving and finding the
    saved code (250 ms by default, against a refresh of ~25 ms; issue 18).
    The server-side watcher's batches (``watchfiles``, which yields the
    start of a checkout as soon as 50 ms pass without a change) keep the
    trailing debounce, so a checkout stays one refresh."""
    if not paths or ls.ws is None or ls.loop is None:
        return
    ls.pending_paths.update(paths)
    if ls.flush_timer is not None:
        ls.flush_timer.cancel()
    spell = max(ls.settings.debounceMs, 0) / 1000.0
    now = ls.loop.time()
    quiet = now - ls.last_change_at >= spell
    ls.last_change_at = now
    ls.flush_timer = ls.loop.call_later(
        0.0 if leading and quiet else spell, lambda: ls.spawn(_flush_pending(ls))
    )


async def _flush_pending(ls: PycsamtServer) -> None:
    if ls.refreshing is None:
        ls.refreshing = asyncio.Lock()
    async with ls.refreshing:
        if ls.opened is not None:
            await asyncio.shield(ls.opened)
        paths, ls.pending_paths = sorted(ls.pending_paths), set()
        if not paths or ls.ws is None:
            return
        # each path to the workspace whose folder holds it (lsp.folders)
        groups: dict[int, tuple[Workspace, list[str]]] = {}
        for p in paths:
            own = folders.workspace_for(ls, Path(p).as_uri()) or ls.ws
            groups.setdefault(id(own), (own, []))[1].append(p)
        for own, group in groups.values():
            await _refresh(ls, own, group)


async def _refresh(ls: PycsamtServer, ws: Workspace, paths: list[str]) -> None:
    """Refresh *paths* in *ws* and persist it once the burst settles."""
    if ws is not ls.ws and not await folders.extra_ready(ls, ws, 600.0):
        return  # that folder's index never opened: nothing to refresh
    try:
        report = await ls.run_blocking(
            "refresh", _timed_refresh, ws, paths, lane="command"
        )
    except Exception:  # logged; the old snapshot keeps serving
        log.exception("refresh failed for %d paths", len(paths))
        return
    n = len(report["changed"]) + len(report["added"]) + len(report["removed"])
    log.info(
        "refresh of %d paths: %d changed, %d added, %d removed, %d re-chunked in "
        "their changed statements (%.1f ms, CPU %.1f ms)",
        len(paths),
        len(report["changed"]),
        len(report["added"]),
        len(report["removed"]),
        len(report.get("rechunked", ())),
        1e3 * report.get("seconds", 0.0),
        1e3 * report.get("cpu_seconds", 0.0),
    )
    if n and ws is ls.ws:
        _schedule_persist(ls)
    elif n:
        ls.spawn(ls.run_blocking("persist", ws.persist, lane="command"))
    if n and ls.settings.dense:  # dense vectors follow the edit (lsp.embedding)
        from pycsamt_lsp.lsp.embedding import reembed

        ls.spawn(reembed(ls, ws))


#: A refresh of more paths than this applies their model updates in its own
#: job (``Workspace.refresh_modelled``) instead of leaving them to the first
#: reader of the model, which may be a hover (lsp/offload.py, measured there).
MODEL_WITH_REFRESH = 8


def _timed_refresh(ws: Workspace, paths: list[str]) -> dict:
    """``ws.refresh(paths)`` with the CPU time of the thread that ran it
    (``cpu_seconds``): next to the wall time, what waiting for a core or
    the GIL added on a busy machine."""
    t0 = time.thread_time()
    # a burst's model updates here, under the lock with the refresh: else the
    # first hover after it re-models the burst in its own thread (seconds);
    # a save's stay deferred, off the query that follows it
    if len(paths) > MODEL_WITH_REFRESH:
        report = ws.refresh_modelled(paths)
    else:
        report = ws.refresh(paths)
    report["cpu_seconds"] = round(time.thread_time() - t0, 4)
    return report


def _schedule_persist(ls: PycsamtServer, delay: float = 2.0) -> None:
    """Persist in the background, once a burst of updates has settled."""
    if ls.persist_timer is not None:
        ls.persist_timer.cancel()
    ws = ls.ws
    assert ls.loop is not None and ws is not None

    def fire() -> None:
        ls.spawn(ls.run_blocking("persist", ws.persist, lane="command"))

    ls.persist_timer = ls.loop.call_later(delay, fire)


def index_changed(ls: PycsamtServer) -> None:
    """A new snapshot is live: tell the client now, and the features that
    follow it (diagnostics of the open documents, the card warm-up) once
    :data:`HOOKS_SETTLE_S` passed without another snapshot.

    Their work after a save (the saved module's model update, a whole parse
    when no tree of it is kept, and the cards' symbol tables: ~40-140 ms of
    CPU for the 239 KB funcutils.py) held the GIL while the query that
    followed the save waited: through the server, save -> found took
    ~0.35 s more than the ~20 ms refresh on a loaded machine (issue 18).
    The pause lets a query sent on the save's heels run alone, and a burst
    of snapshots re-runs them once."""
    if ls.state == "ready":
        ls.send_state("index updated")
    if ls.hooks_timer is not None:
        ls.hooks_timer.cancel()
    if ls.loop is None:
        _run_hooks(ls)
        return
    ls.hooks_timer = ls.loop.call_later(HOOKS_SETTLE_S, _run_hooks, ls)


def _run_hooks(ls: PycsamtServer) -> None:
    ls.hooks_timer = None
    for fn in list(ls.on_index_changed):
        try:
            fn(ls)
        except Exception:  # one feature must not break others
            log.exception("index-change hook failed")


def register(ls: PycsamtServer) -> None:
    """Register the file-watching handler on *ls*."""
    ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(on_watched_files)
