"""The server is made by a factory and holds its own state (issue 13).

No module of ``pycsamt_lsp.lsp`` creates a server or registers a feature on
import; :func:`create_server` registers every feature explicitly, and two
servers in one process share no timers, buffers, pending diagnostics or
worker lanes.
"""

from __future__ import annotations

import importlib
import pkgutil

from lsprotocol import types

import pycsamt_lsp.lsp
from pycsamt_lsp.commands.catalog import build_registry
from pycsamt_lsp.lsp.server import FEATURES, PycsamtServer, create_server

EDITOR_FEATURES = {
    types.INITIALIZE,
    types.INITIALIZED,
    types.SHUTDOWN,
    types.EXIT,
    types.TEXT_DOCUMENT_HOVER,
    types.TEXT_DOCUMENT_DEFINITION,
    types.TEXT_DOCUMENT_COMPLETION,
    types.COMPLETION_ITEM_RESOLVE,
    types.WORKSPACE_SYMBOL,
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.TEXT_DOCUMENT_DID_OPEN,
    types.TEXT_DOCUMENT_DID_CHANGE,
    types.TEXT_DOCUMENT_DID_SAVE,
    types.TEXT_DOCUMENT_DID_CLOSE,
    types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
    types.WORKSPACE_DID_CHANGE_CONFIGURATION,
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,  # multi-root (issue 16)
    types.TEXT_DOCUMENT_DIAGNOSTIC,  # pull diagnostics (issue 16)
}


def test_no_module_makes_a_server_on_import():
    for info in pkgutil.iter_modules(pycsamt_lsp.lsp.__path__):
        mod = importlib.import_module(f"pycsamt_lsp.lsp.{info.name}")
        for name, value in vars(mod).items():
            assert not isinstance(value, PycsamtServer), (info.name, name)


def test_every_feature_module_registers_explicitly():
    assert all(callable(getattr(m, "register", None)) for m in FEATURES)
    ls = create_server()
    assert set(ls.protocol.fm.features) == EDITOR_FEATURES
    assert set(ls.protocol.fm.commands) == set(build_registry())


def test_two_servers_share_no_state():
    a, b = create_server(), create_server()
    assert a.buffers is not b.buffers
    assert a.diagnostics_timers is not b.diagnostics_timers
    assert a.pending_paths is not b.pending_paths
    assert a.offload is not b.offload
    assert a.on_index_changed is not b.on_index_changed
    assert a.tasks is not b.tasks
    a.pending_paths.add("x.py")
    a.buffers.get("file:///a.py", "import pkg\n", "pkg", None)
    assert not b.pending_paths and not b.buffers._items
