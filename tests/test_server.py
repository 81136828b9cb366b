"""End-to-end: a real LSP client over stdio against ``pycsamt-lsp serve``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import wait_for, write_fixture_corpus

SERVER = [sys.executable, "-m", "pycsamt_lsp", "serve"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def start(
    client: LanguageClient, root: Path, caps: str = "visual-studio-code", **opts
):
    """Initialize on the fixture corpus and wait until the index is ready."""
    profile = write_fixture_corpus(root)
    options = {
        "corpusRoot": str(root),
        "profile": str(profile),
        "debounceMs": 50,
        **opts,
    }
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(caps),
            initialization_options=options,
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="corpus")],
        )
    )
    await wait_for(lambda: _state(client) in ("ready", "error"))
    assert _state(client) == "ready", _states(client)
    return profile


def _states(client: LanguageClient) -> list[dict]:
    return [m for m in getattr(client, "_index_states", [])]


def _state(client: LanguageClient) -> str | None:
    states = _states(client)
    return states[-1]["state"] if states else None


@pytest.fixture(autouse=True)
def _track_index_state(client: LanguageClient):
    client._index_states = []

    @client.feature("pycsamt/indexState")
    def _on_state(params):
        client._index_states.append(
            params
            if isinstance(params, dict)
            else {
                k: getattr(params, k)
                for k in ("state", "percent", "nChunks", "message")
            }
        )

    client._registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _on_register(params: types.RegistrationParams):
        client._registrations.extend(params.registrations)

    return None


async def until(client: LanguageClient, check, timeout: float = 30.0):
    """Re-run the async *check* after each index-state notification (bounded).

    One waiter for the notification is kept until a notification ends it,
    never cancelled: a cancelled wait stays registered in pytest-lsp, and the
    next ``pycsamt/indexState`` then fails on it (``InvalidStateError``) instead
    of reaching the client, which failed a later request of the same test."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    waiter: asyncio.Future | None = None
    while True:
        value = await check()
        if value or loop.time() > end:
            return value
        if waiter is None or waiter.done():
            waiter = asyncio.ensure_future(
                client.wait_for_notification("pycsamt/indexState")
            )
        await asyncio.wait({waiter}, timeout=0.5)


async def command(client: LanguageClient, name: str, arg=None):
    args = [] if arg is None else [arg]
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=args)
    )


def field(obj, key):
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


async def test_progress_and_query(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path)
    tokens = [t for t in client.progress_reports if str(t).startswith("pycsamt-index")]
    assert tokens, "no work-done progress was created"
    reports = client.progress_reports[tokens[0]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert any(
        isinstance(r, types.WorkDoneProgressReport) and r.percentage is not None
        for r in reports
    )
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert "chunks" in reports[-1].message

    res = await command(
        client, "pycsamt.query", {"query": "correct the static shift", "k": 5}
    )
    results = field(res, "results")
    assert results, res
    assert field(results[0], "symbol").startswith("pkg.core.shift")
    assert all("tests/" not in field(r, "source_path") for r in results)
    assert field(res, "workflow") == "static_shift"
    methods = [r.method for r in client._registrations]
    assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES in methods


async def test_bad_arguments_then_next_request_works(
    client: LanguageClient, tmp_path: Path
):
    await start(client, tmp_path)
    for bad in (
        {"k": 3},
        {"query": 42},
        {"query": "x", "k": "ten"},
        {"query": "x", "nope": 1},
        "just text",
    ):
        with pytest.raises(Exception) as info:
            await command(client, "pycsamt.query", bad)
        assert "pycsamt.query" in str(info.value)
    res = await command(client, "pycsamt.stats", {})
    assert field(res, "n_chunks") > 0


async def test_new_function_found_after_change(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path)
    before = await command(client, "pycsamt.stats", {})
    target = tmp_path / "pkg" / "phase.py"
    target.write_text(
        target.read_text()
        + '\n\ndef magnetotelluric_tipper_vector(z):\n    """Induction arrows."""\n    return z\n'
    )
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=target.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )

    async def found():
        res = await command(
            client, "pycsamt.query", {"query": "magnetotelluric_tipper_vector", "k": 3}
        )
        return [
            r
            for r in field(res, "results")
            if field(r, "symbol") == "pkg.phase.magnetotelluric_tipper_vector"
        ]

    assert await until(client, found)
    after = await command(client, "pycsamt.stats", {})
    assert field(after, "fingerprint") != field(before, "fingerprint")
    assert field(after, "builds") == field(before, "builds") + 1


async def test_identical_rewrite_and_delete(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path)
    before = await command(client, "pycsamt.stats", {})
    target = tmp_path / "pkg" / "phase.py"
    target.write_text(target.read_text())  # byte-identical rewrite
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=target.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )
    # a later deletion is processed after the rewrite: once it shows, the rewrite was seen too
    gone = tmp_path / "docs" / "guide.rst"
    gone.unlink()
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=gone.as_uri(), type=types.FileChangeType.Deleted)
            ]
        )
    )
    after = {}

    async def refreshed():
        nonlocal after
        after = await command(client, "pycsamt.stats", {})
        return field(after, "n_files") == field(before, "n_files") - 1

    assert await until(client, refreshed)
    assert (
        field(after, "builds") == field(before, "builds") + 1
    )  # one rebuild: the delete only
    res = await command(
        client, "pycsamt.query", {"query": "guide agent phase tensor", "k": 10}
    )
    assert all(
        field(r, "source_path") != "docs/guide.rst" for r in field(res, "results")
    )


async def test_corrupt_index_is_rebuilt(client: LanguageClient, tmp_path: Path):
    # build and persist with the CLI first, then corrupt chunks.jsonl
    from pycsamt_lsp.cli import main

    profile = write_fixture_corpus(tmp_path)
    assert main(["build", "--root", str(tmp_path), "--profile", str(profile)]) == 0
    chunks = tmp_path / ".pycsamt_rag" / "chunks.jsonl"
    chunks.write_bytes(b"{not json" + chunks.read_bytes()[9:])
    await start(client, tmp_path)
    res = await command(client, "pycsamt.stats", {})
    assert field(res, "n_chunks") > 0
    assert field(res, "loaded_from") == "build"
    logs = " ".join(m.message for m in client.log_messages)
    assert "corrupt" in logs


async def test_server_side_watcher(client: LanguageClient, tmp_path: Path):
    await start(client, tmp_path, caps="neovim", watch="server")
    target = tmp_path / "pkg" / "newmod.py"
    target.write_text(
        '"""Brand new."""\n\ndef unheard_of_symbol_xyz():\n    """Docs."""\n'
    )

    async def found():
        res = await command(
            client, "pycsamt.query", {"query": "unheard_of_symbol_xyz", "k": 3}
        )
        return [
            r
            for r in field(res, "results")
            if field(r, "symbol") == "pkg.newmod.unheard_of_symbol_xyz"
        ]

    assert await until(client, found)


@pytest.fixture(scope="session")
def real_index_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("real-index")


async def _start_real(client: LanguageClient, root: Path, index_dir: Path):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "corpusRoot": str(root),
                "indexDir": str(index_dir),
            },
        )
    )

    async def settled():
        return _state(client) in ("ready", "error")

    assert await until(client, settled, timeout=300)
    assert _state(client) == "ready", _states(client)
    token = next(
        t for t in client.progress_reports if str(t).startswith("pycsamt-index")
    )
    return client.progress_reports[token]


@pytest.mark.corpus
async def test_real_corpus_cold_start(
    client: LanguageClient, real_corpus: Path, real_index_dir: Path
):
    for f in real_index_dir.glob("*"):
        f.unlink()
    reports = await _start_real(client, real_corpus, real_index_dir)
    percents = [
        r.percentage for r in reports if isinstance(r, types.WorkDoneProgressReport)
    ]
    assert len(percents) >= 3 and percents == sorted(percents)
    assert reports[-1].message.startswith("build:")
    # the server's heap never holds the build: a child process built it
    assert reports[-1].message.endswith("(built in a separate process)")
    res = await command(
        client, "pycsamt.query", {"query": "static shift correction", "k": 5}
    )
    assert any(field(r, "workflow") == "static_shift" for r in field(res, "results"))
    stats = await command(client, "pycsamt.stats", {})
    assert field(stats, "n_chunks") > 3000
    assert field(stats, "loaded_from") == "build"


@pytest.mark.corpus
async def test_real_corpus_warm_start(
    client: LanguageClient, real_corpus: Path, real_index_dir: Path
):
    from pycsamt_lsp.cli import main

    if not (real_index_dir / "manifest.json").exists():
        assert (
            main(
                [
                    "build",
                    "--root",
                    str(real_corpus),
                    "--index-dir",
                    str(real_index_dir),
                ]
            )
            == 0
        )
    reports = await _start_real(client, real_corpus, real_index_dir)
    assert reports[-1].message.startswith("load:")
    stats = await command(client, "pycsamt.stats", {})
    assert field(stats, "loaded_from") == "disk"
    res = await command(
        client, "pycsamt.query", {"query": "phase tensor strike direction", "k": 3}
    )
    assert field(field(res, "results")[0], "workflow") == "phase_analysis"
