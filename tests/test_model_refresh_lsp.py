"""A model-only module of a ``src/`` layout package is kept current (issue 17).

A module the index does not hold (with the shortest profile, no ``roots``:
every module) is still part of the package model; when it is saved the model
must follow, in a flat layout and equally in a ``src/`` one, where its
corpus-relative path is ``src/spkg/...``. Through a real LSP client on a
tree the test writes: an import of a name the module lacks is an error; once
the file on disk gains it (and the editor's watcher reports the change), the
error goes away; a new module file does the same for ``import spkg.new``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_helpers import wait_for
from test_diagnostics_lsp import diagnostics_of, open_doc
from test_server import _state, _states, _track_index_state, client  # noqa: F401

FILES = {
    "pyproject.toml": '[project]\nname = "spkg"\nversion = "0.1"\n',
    "src/spkg/__init__.py": '"""A src-layout package."""\n',
    "src/spkg/core.py": '''
        """Core functions."""


        def real_fn():
            return 1
    ''',
}


def _write_tree(root: Path) -> Path:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    prof = root.parent / "spkg.toml"
    # the shortest profile: no roots, so no module of spkg is indexed
    prof.write_text('name = "spkg"\npackage = "spkg"\n', encoding="utf-8")
    return prof


async def _start(client: LanguageClient, root: Path, prof: Path) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "corpusRoot": str(root),
                "profile": str(prof),
                "debounceMs": 50,
            },
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="proj")],
        )
    )
    await wait_for(lambda: _state(client) in ("ready", "error"))
    assert _state(client) == "ready", _states(client)
    # the watcher registration is sent once the index is ready
    await wait_for(
        lambda: any(
            r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
            for r in client._registrations
        )
    )


def _changed(client: LanguageClient, path: Path, kind: types.FileChangeType) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=path.as_uri(), type=kind)]
        )
    )


def _about(diags: list[types.Diagnostic], word: str) -> list[types.Diagnostic]:
    return [d for d in diags if word in d.message]


async def test_saved_model_only_module_of_a_src_layout_updates_diagnostics(
    client: LanguageClient, tmp_path: Path
):
    root = tmp_path / "proj"
    prof = _write_tree(root)
    await _start(client, root, prof)

    code = "from spkg.core import real_fn\nfrom spkg.core import later_fn\nimport spkg.extra\n"
    script = tmp_path / "use.py"
    script.write_text(code, encoding="utf-8")
    uri = open_doc(client, script, code)
    diags = await diagnostics_of(
        client, uri, lambda d: _about(d, "later_fn") and _about(d, "extra")
    )
    # nothing on line 0: ``real_fn`` is real (its name may appear in the
    # later_fn error's did-you-mean: the module is left out of the index,
    # and a typo within such a module is offered that module's names)
    assert not [d for d in diags if d.range.start.line == 0], diags
    [d] = _about(diags, "later_fn")
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.range.start.line == 1
    assert "spkg.core.real_fn" in d.message, d.message
    [d] = _about(diags, "extra")
    assert d.severity == types.DiagnosticSeverity.Error

    # the module is saved with the new function: the error on it goes away
    core = root / "src" / "spkg" / "core.py"
    core.write_text(
        core.read_text(encoding="utf-8") + "\n\ndef later_fn():\n    return 2\n",
        encoding="utf-8",
    )
    _changed(client, core, types.FileChangeType.Changed)
    diags = await diagnostics_of(client, uri, lambda d: not _about(d, "later_fn"))
    assert _about(diags, "extra"), diags  # only what changed is re-judged

    # a new module file: ``import spkg.extra`` is real now
    extra = root / "src" / "spkg" / "extra.py"
    extra.write_text('"""Added later."""\n', encoding="utf-8")
    _changed(client, extra, types.FileChangeType.Created)
    diags = await diagnostics_of(client, uri, lambda d: not d)
    assert list(diags) == []

    # and deleting it makes the import an error again
    extra.unlink()
    _changed(client, extra, types.FileChangeType.Deleted)
    diags = await diagnostics_of(client, uri, lambda d: bool(_about(d, "extra")))
    assert _about(diags, "extra")[0].severity == types.DiagnosticSeverity.Error


async def test_saved_stub_of_a_src_layout_updates_diagnostics(
    client: LanguageClient, tmp_path: Path
):
    """A ``.pyi`` is never indexed: the editor's watcher must still report it
    (the registered globs cover stubs), and its names follow the saved file."""
    root = tmp_path / "proj"
    prof = _write_tree(root)
    stub = root / "src" / "spkg" / "fast.pyi"  # a compiled module's stub
    stub.write_text("def speed() -> int: ...\n", encoding="utf-8")
    await _start(client, root, prof)
    globs = [
        str(w["globPattern"])
        for r in client._registrations
        if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        for w in r.register_options["watchers"]
    ]
    assert any(g.endswith("*.pyi") for g in globs), globs

    code = "from spkg.fast import speed\nfrom spkg.fast import slow\n"
    uri = open_doc(client, tmp_path / "use.py", code)
    diags = await diagnostics_of(client, uri, lambda d: bool(_about(d, "slow")))
    assert not _about(diags, "speed"), diags
    assert _about(diags, "slow")[0].severity == types.DiagnosticSeverity.Error

    stub.write_text("def speed() -> int: ...\ndef slow() -> int: ...\n", "utf-8")
    _changed(client, stub, types.FileChangeType.Changed)
    diags = await diagnostics_of(client, uri, lambda d: not d)
    assert list(diags) == []
