"""One start path for settings, however they arrive.

Settings come in three ways, in any order around ``initialized``:

* ``initializationOptions`` (``initialize``);
* pulled: ``workspace/configuration`` for section ``pycsamt``, one item per
  workspace folder with its ``scopeUri`` (eglot's dir-locals, Neovim's
  ``settings``, VS Code's per-folder settings), at ``initialized`` and again
  whenever the client pushes ``didChangeConfiguration`` with
  ``settings: null`` or without a ``pycsamt`` section (VS Code's form: "my
  configuration changed, ask me");
* pushed: ``didChangeConfiguration`` carrying the settings object.

They are merged once, in layers: defaults < initializationOptions < the
latest configuration (pulled or pushed: each is the whole section, so a
key the user removed falls back) < the command line's ``--root`` and
friends. Nothing starts before ``initialized`` has pulled; after that,
every arrival recomputes the settings and :func:`apply` compares the corpus
they select (root, profile, index folder) with the one running: the same
corpus is never built twice (a pull plus a push after ``initialized`` used
to run two full builds and two watchers); a different one replaces it. Any
settings change re-checks the open documents (severity, syntax errors).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from pycsamt_lsp.lsp.settings import Settings

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["apply", "corpus_key", "pull", "push", "recompute"]

log = logging.getLogger("pycsamt_lsp")


def corpus_key(s: Settings) -> tuple[Any, ...]:
    """What selects the corpus and its index: a change means a new build."""
    return (s.corpusRoot, s.profile, s.indexDir)


def recompute(ls: PycsamtServer) -> Settings:
    """Merge the layers into ``ls.settings``; report each new problem once."""
    merged, problems = Settings().merged(ls.init_settings)
    merged, more = merged.merged(ls.config_settings)
    problems += more
    if ls.cli_overrides:
        merged, _ = merged.merged(ls.cli_overrides)
    ls.settings = merged
    ls.apply_log_level()
    for p in problems:
        if p in ls.settings_problems:
            continue
        ls.settings_problems.add(p)
        log.warning("%s", p)
        ls.show(f"pyCSAMT: {p}", types.MessageType.Warning)
    return merged


def _folder_uris(ls: PycsamtServer) -> list[str]:
    try:
        folders = list(ls.workspace.folders.values())
    except RuntimeError:
        return []
    if folders:
        return [f.uri for f in folders]
    root = ls.workspace.root_uri
    return [root] if root else []


async def pull(ls: PycsamtServer) -> bool:
    """Ask the client for section ``pycsamt`` (per folder, with ``scopeUri``);
    True when it answered. The first folder's answer is the configuration
    (``ls.folder_settings`` keeps each folder's)."""
    caps = ls.client_capabilities
    if not (caps.workspace and caps.workspace.configuration):
        return False
    uris = _folder_uris(ls)
    items = [types.ConfigurationItem(scope_uri=u, section="pycsamt") for u in uris]
    if not items:
        items = [types.ConfigurationItem(section="pycsamt")]
    try:
        got = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=items)
        )
    except Exception as exc:  # noqa: BLE001 - configuration is optional
        log.info("workspace/configuration failed: %s", exc)
        return False
    answers = list(got or [])
    ls.folder_settings = {
        u: a for u, a in zip(uris, answers, strict=False) if isinstance(a, dict)
    }
    first = next((a for a in answers if isinstance(a, dict)), None)
    ls.config_settings = first
    return True


def push(ls: PycsamtServer, settings: Any) -> bool:
    """A ``didChangeConfiguration`` body: True when it carried settings,
    False when the client means "pull again" (``null``, or no ``pycsamt``
    section in an object that holds other sections)."""
    if settings is None:
        return False
    if isinstance(settings, dict):
        if not settings:
            return False
        if "pycsamt" not in settings and not _looks_flat(settings):
            return False
    ls.config_settings = settings
    return True


def _looks_flat(raw: dict) -> bool:
    """An object of our own keys (``{"corpusRoot": ...}``) rather than a
    whole configuration tree of other sections."""
    import dataclasses  # tiny, only here

    ours = {f.name for f in dataclasses.fields(Settings)} | {"openai", "diagnostics"}
    return any(k in ours for k in raw)


def apply(ls: PycsamtServer, *, reason: str, restart: bool = False) -> None:
    """Act on the current settings: (re)start the index when the corpus
    changed (never twice for one corpus) or *restart* says the folders that
    select it changed, else hand the answering layer its settings; re-check
    the open documents."""
    from pycsamt_lsp.lsp import diagnostics, indexing  # no cycle

    if not ls.config_done or ls.loop is None or ls.shutdown_requested:
        return  # `initialized` has not pulled yet: it applies once it has
    key = corpus_key(ls.settings)
    if key != ls.started_key or restart:
        first = ls.started_key is None
        ls.started_key = key
        if not first:
            log.info("corpus root or profile changed (%s); reopening the index", reason)
            if ls.watch_stop is not None:
                ls.watch_stop.set()
            if ls.ws is not None:
                ls.ws.cancel_build()
            if ls.start_task is not None and not ls.start_task.done():
                ls.start_task.cancel()
            if ls.opened is None or ls.opened.done():
                ls.opened = ls.loop.create_future()
        ls.start_task = ls.spawn(indexing.start(ls))
        return
    indexing.configure_ask(ls)
    if ls.ws is not None and ls.ws.snapshot is not None:
        diagnostics.refresh_open_documents(ls)
