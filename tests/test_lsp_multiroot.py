"""Multi-root workspaces through a real pytest-lsp client (issue 16).

Each workspace folder that holds the profile's package gets its own
workspace; a buffer is checked against the folder that contains it; folders
added and removed with ``workspace/didChangeWorkspaceFolders`` are followed.
No ``corpusRoot`` is set: the folders alone decide.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_helpers import wait_for, write_fixture_corpus
from test_server import _state, _track_index_state, client  # noqa: F401 - fixtures

USES_OTHER = "from pkg import other_fn\n"


def corpus(root: Path, extra: str = "") -> Path:
    root.mkdir(parents=True)
    profile = write_fixture_corpus(root)
    if extra:
        init = root / "pkg" / "__init__.py"
        init.write_text(init.read_text() + extra)
    return profile


def folder(path: Path) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=path.as_uri(), name=path.name)


def open_doc(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="python", version=version, text=text
            )
        )
    )
    return path.as_uri()


def names(client: LanguageClient, uri: str) -> list[str] | None:
    diags = client.diagnostics.get(uri)
    return None if diags is None else [d.message for d in diags]


async def start(client: LanguageClient, folders: list[Path], profile: Path):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"profile": str(profile), "debounceMs": 50},
            root_uri=folders[0].as_uri(),
            workspace_folders=[folder(f) for f in folders],
        )
    )
    await wait_for(lambda: _state(client) in ("ready", "error"))
    assert _state(client) == "ready"


async def test_each_folder_with_a_corpus_serves_its_buffers(
    client: LanguageClient, tmp_path: Path
):
    plain = tmp_path / "notes"  # first folder: no corpus
    plain.mkdir()
    a = tmp_path / "a"
    profile = corpus(a)
    b = tmp_path / "b"
    corpus(b, "\n\ndef other_fn():\n    return 1\n")
    await start(client, [plain, a, b], profile)

    def roots() -> list[str]:
        return [m.message for m in client.log_messages if "corpus root" in m.message]

    assert any(str(a) in r for r in roots()), roots()  # not the first folder or a cache
    await wait_for(lambda: any(str(b) in r for r in roots()))

    in_a = open_doc(client, a / "s.py", USES_OTHER)
    in_b = open_doc(client, b / "s.py", USES_OTHER)
    in_plain = open_doc(client, plain / "s.py", USES_OTHER)
    await wait_for(lambda: names(client, in_a) and names(client, in_b) is not None)
    assert any("other_fn" in m for m in names(client, in_a))
    assert names(client, in_b) == []  # b's own package has other_fn
    await wait_for(lambda: names(client, in_plain))  # outside both: the primary (a)
    assert any("other_fn" in m for m in names(client, in_plain))

    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=in_b),
            position=types.Position(line=0, character=18),
        )
    )
    assert hover is not None and "other_fn" in hover.contents.value

    got = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=in_b),
            position=types.Position(line=0, character=len("from pkg import ")),
        )
    )
    assert "other_fn" in [i.label for i in got.items]  # b's package, not a's

    # b's own corpus changes: its watcher is registered, the event refreshes
    # b's workspace (not a's), and the buffer's squiggle goes
    await wait_for(
        lambda: any(
            str(b) in str(w["globPattern"])
            for r in client._registrations
            for w in r.register_options["watchers"]
        )
    )
    newer = open_doc(client, b / "t.py", "from pkg import newer_fn\n")
    await wait_for(lambda: names(client, newer))
    init = b / "pkg" / "__init__.py"
    init.write_text(init.read_text() + "\n\ndef newer_fn():\n    return 3\n")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=init.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )
    await wait_for(lambda: names(client, newer) == [])

    # b leaves the workspace: its buffer is now checked against a
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[], removed=[folder(b)])
        )
    )
    await asyncio.sleep(0.3)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=in_b, version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text=USES_OTHER + "\n")
            ],
        )
    )
    await wait_for(lambda: names(client, in_b))
    assert any("other_fn" in m for m in names(client, in_b))

    # a new folder with a corpus is opened and serves its buffers
    c = tmp_path / "c"
    corpus(c, "\n\ndef other_fn():\n    return 2\n")
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[folder(c)], removed=[])
        )
    )
    await wait_for(
        lambda: any(
            "corpus root" in m.message and str(c) in m.message
            for m in client.log_messages
        )
    )
    in_c = open_doc(client, c / "s.py", USES_OTHER)
    await wait_for(lambda: names(client, in_c) is not None)
    assert names(client, in_c) == []
