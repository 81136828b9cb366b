"""Multi-root: each workspace folder that holds a corpus gets its own workspace.

The primary workspace (``ls.ws``; commands, workspace symbols) is the one
:func:`pycsamt_lsp.lsp.indexing.start` opens: the ``corpusRoot`` setting,
else the first workspace folder that holds the profile's package (not just
the first folder: a checkout in the second folder used to be ignored and
the cached sdist loaded silently), else the installed package or the cache.
Every other folder that holds the package gets a workspace of its own
(``ls.extra``, keyed by its resolved root), opened in the command lane
after the primary one. A buffer is served by the workspace whose root
contains it (the deepest), else by the primary one. Folders added or
removed (``workspace/didChangeWorkspaceFolders``) are followed: a removed
folder's workspace is dropped (its build cancelled), an added one opened;
when the primary workspace came from a folder that is removed, or the
first corpus folder changes, the primary is reopened through the one
start path of :mod:`.configuration`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import to_fs_path

from pycsamt_lsp.corpus.layout import package_dir
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.errors import ProfileError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pycsamt_lsp.corpus.profile import Profile
    from pycsamt_lsp.lsp.server import PycsamtServer
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "corpus_folders",
    "extra_ready",
    "folder_paths",
    "on_folders_changed",
    "outline",
    "sync",
    "workspace_for",
]

log = logging.getLogger("pycsamt_lsp")


def folder_paths(ls: PycsamtServer) -> list[Path]:
    """The workspace folders (or the root path), in the client's order."""
    try:
        folders = list(ls.workspace.folders.values())
        root = ls.workspace.root_path
    except RuntimeError:
        return []
    out = []
    for f in folders:
        try:
            p = to_fs_path(f.uri)
        except Exception:  # noqa: BLE001 - an odd URI is just not a folder
            p = None
        if p:
            out.append(Path(p))
    if not out and root:
        out.append(Path(root))
    return out


def corpus_folders(ls: PycsamtServer, profile: Profile | None = None) -> list[Path]:
    """The folders that hold the profile's package (flat or ``src/``);
    *profile*: the one the caller loaded already (else the setting's is
    read: a TOML parse, ~3 ms)."""
    try:
        pkg = (profile or load_profile(ls.settings.profile)).package
    except (ProfileError, OSError):
        return []
    return [f for f in folder_paths(ls) if package_dir(f, pkg) is not None]


def _contains(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def workspace_for(ls: PycsamtServer, uri: str | None) -> Workspace | None:
    """The workspace that serves *uri*: the deepest extra root containing
    it, else the primary workspace."""
    if uri and ls.extra:
        try:
            path = Path(to_fs_path(uri) or "").resolve()
        except Exception:  # noqa: BLE001 - not a file URI: the primary serves it
            path = None
        if path is not None:
            best = None
            for key, ws in ls.extra.items():
                root = Path(key)
                if _contains(root, path) and (best is None or len(key) > len(best[0])):
                    best = (key, ws)
            if best is not None and not (
                ls.ws is not None
                and _contains(ls.ws.root, path)
                and len(str(ls.ws.root)) > len(best[0])
            ):
                return best[1]
    return ls.ws


async def extra_ready(ls: PycsamtServer, ws: Workspace, timeout: float) -> bool:
    """Wait for an extra workspace's first open; False when it failed."""
    fut = ls.extra_opened.get(str(ws.root))
    if fut is None:
        return ws.snapshot is not None
    try:
        await asyncio.wait_for(asyncio.shield(fut), timeout)
    except TimeoutError:
        return False
    return ws.snapshot is not None


async def sync(
    ls: PycsamtServer,
    watch: Callable[[PycsamtServer, Workspace], Awaitable[None]] | None = None,
) -> None:
    """Open a workspace for each corpus folder the primary does not serve
    (and *watch* it once open); drop those whose folder is gone."""
    if ls.loop is None or ls.shutdown_requested:
        return
    primary = ls.ws.root.resolve() if ls.ws is not None else None
    wanted = {str(f.resolve()) for f in corpus_folders(ls) if f.resolve() != primary}
    for key in [k for k in ls.extra if k not in wanted]:
        log.info("workspace folder %s removed: its index is dropped", key)
        ws = ls.extra.pop(key)
        ws.cancel_build()
        stop = ls.extra_stops.pop(key, None)
        if stop is not None:
            stop.set()
        fut = ls.extra_opened.pop(key, None)
        if fut is not None and not fut.done():
            fut.set_result(None)
    try:
        profile = load_profile(ls.settings.profile)
    except (ProfileError, OSError) as exc:
        log.warning("multi-root: %s", exc)
        return
    from pycsamt_lsp.workspace.facade import Workspace  # numpy: after `initialize`

    loop = ls.loop
    for key in sorted(wanted - set(ls.extra)):
        ws = Workspace(Path(key), profile, long_lived=True)
        ls.extra[key] = ws
        ls.extra_opened[key] = loop.create_future()
        ws.listeners.append(lambda _snap: loop.call_soon_threadsafe(_index_changed, ls))
        log.info("corpus root %s (workspace folder; profile %s)", key, profile.name)
        ls.spawn(_open_extra(ls, key, ws, watch))


async def _open_extra(
    ls: PycsamtServer,
    key: str,
    ws: Workspace,
    watch: Callable[[PycsamtServer, Workspace], Awaitable[None]] | None,
) -> None:
    try:
        # no $/progress of its own: the status bar follows the primary index
        await ls.run_blocking(
            f"open {key}", ws.open, lambda _pct, _msg: None, lane="command"
        )
        if ws.snapshot is not None:
            await ls.run_blocking("model load", ws.ensure_model, lane="command")
            if key in ls.extra:  # as the primary's: see ``outline``
                ls.spawn(outline(ls, ws))
            if watch is not None and key in ls.extra:
                await watch(ls, ws)
    except Exception:  # that folder answers nothing, the rest works
        log.exception("opening the workspace of %s failed", key)
    finally:
        fut = ls.extra_opened.get(key)
        if fut is not None and not fut.done():
            fut.set_result(None)
    _index_changed(ls)


async def outline(ls: PycsamtServer, ws: Workspace) -> None:
    """Outline *ws*'s large modules (:meth:`Workspace.prepare_saves`) in the
    command lane, once its index is open: the first save of any of them,
    opened in an editor or not, then re-chunks only its changed statements
    instead of parsing the whole file. Every folder's workspace gets it,
    the primary's (:func:`pycsamt_lsp.lsp.indexing.start`) and each extra
    one's (an extra folder's first saves used to parse whole)."""
    try:
        n = await ls.run_blocking("outline", ws.prepare_saves, lane="command")
    except Exception:  # saves then parse whole, as before
        log.exception("outlining the large modules of %s failed", ws.root)
        return
    log.info("outlined %d large modules of %s for their first saves", n or 0, ws.root)


def _index_changed(ls: PycsamtServer) -> None:
    """A folder's snapshot changed: the features that follow the index
    (diagnostics, card warm-up) run their hooks, as for the primary one."""
    for fn in list(ls.on_index_changed):
        try:
            fn(ls)
        except Exception:  # one feature must not break others
            log.exception("index-change hook failed")


async def on_folders_changed(
    ls: PycsamtServer,
    reopen: Callable[[], None],
    watch: Callable[[PycsamtServer, Workspace], Awaitable[None]] | None = None,
) -> None:
    """pygls has updated ``ls.workspace.folders``: follow it (*reopen*
    restarts the primary index through the one start path)."""
    first = corpus_folders(ls)
    primary_from_folder = ls.settings.corpusRoot is None
    primary = ls.ws.root.resolve() if ls.ws is not None else None
    if primary_from_folder and primary is not None:
        want = first[0].resolve() if first else None
        if want != primary and (want is not None or not _in_any(ls, primary)):
            log.info("workspace folders changed: reopening the primary index")
            reopen()
            return  # indexing.start syncs the extras once the primary is open
    await sync(ls, watch=watch)


def _in_any(ls: PycsamtServer, root: Path) -> bool:
    return any(_contains(f.resolve(), root) for f in folder_paths(ls))
