"""Dense vectors follow a save in the server (issue 14), through a real client.

With ``dense: true`` and vectors from a local model (the hashing backend
here: the MiniLM one is exercised by ``test_dense_cli.py`` when installed,
and the server runs the same :meth:`DenseService.reembed`), a changed file
is re-embedded after its refresh, off the event loop, with work-done
progress, and only its changed chunk goes to the model. Meanwhile and
afterwards ``pycsamt.query`` with ``dense: true`` keeps answering.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_helpers import wait_for, write_fixture_corpus
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.search.dense import (
    HashingBackend,
    build_embeddings,
    embed_text,
    load_store,
)
from pycsamt_lsp.search.dense.store import text_sha
from pycsamt_lsp.workspace.facade import Workspace
from test_server import _state, _states, _track_index_state, client, command, field  # noqa: F401


def _embed_tokens(client: LanguageClient) -> list:
    return [t for t in client.progress_reports if str(t).startswith("pycsamt-embed")]


def _ended(client: LanguageClient) -> list[str]:
    return [
        r.message
        for t in _embed_tokens(client)
        for r in client.progress_reports[t]
        if isinstance(r, types.WorkDoneProgressEnd)
    ]


async def _start_on_embedded_corpus(
    client: LanguageClient, tmp_path: Path, **options
) -> tuple[Path, Path, Path, int, str]:
    """A persisted fixture index with hashing-backend vectors, and the server
    started on it with *options*; returns (root, profile, index dir, vectors,
    the vectors' fingerprint before the server started)."""
    root, idx = tmp_path / "corpus", tmp_path / "idx"
    root.mkdir()
    prof = write_fixture_corpus(root)
    ws = Workspace(root, load_profile(prof), index_dir=idx)
    ws.build()
    ws.persist()
    n = build_embeddings(ws, HashingBackend())["n_vectors"]
    before = load_store(idx).fingerprint
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "corpusRoot": str(root),
                "profile": str(prof),
                "indexDir": str(idx),
                "debounceMs": 50,
                **options,
            },
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="c")],
        )
    )
    await wait_for(lambda: _state(client) in ("ready", "error"))
    return root, prof, idx, n, before


async def test_a_save_re_embeds_the_changed_chunk(
    client: LanguageClient, tmp_path: Path
):
    root, prof, idx, n, _ = await _start_on_embedded_corpus(
        client, tmp_path, dense=True
    )
    assert _state(client) == "ready", _states(client)
    q = {"query": "phase tensor strike", "k": 5, "dense": True}
    res = await command(client, "pycsamt.query", q)
    assert field(res, "retrieval") == "dense+bm25"
    # the setting is every query's default: the palette sends no "dense"
    res = await command(client, "pycsamt.query", {"query": "phase tensor strike"})
    assert field(res, "retrieval") == "dense+bm25"
    res = await command(client, "pycsamt.query", {**q, "dense": False})
    assert "retrieval" not in res and field(res, "results")  # BM25 alone
    assert not _embed_tokens(client)  # vectors current at start: no job

    phase = root / "pkg" / "phase.py"
    phase.write_text(
        phase.read_text().replace(
            "Geoelectric strike from the phase tensor.",
            "Induction arrows of the tipper, beside the phase tensor strike.",
        ),
        encoding="utf-8",
    )
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=phase.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )
    await wait_for(lambda: _ended(client), timeout=60)
    reports = client.progress_reports[_embed_tokens(client)[0]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].title == "Embedding changed chunks"
    assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports)
    # one chunk's text changed: one text embedded, the rest reused
    [msg] = _ended(client)
    assert msg.startswith(f"embedded 1 changed texts, reused {n - 1} of {n} vectors")

    stats = await command(client, "pycsamt.stats", {})
    store = load_store(idx)
    assert store.fingerprint == field(stats, "fingerprint")
    fresh = Workspace(root, load_profile(prof), index_dir=tmp_path / "check")
    fresh.build()
    snap = fresh.snapshot
    [slot] = [
        s
        for s in snap.alive_slots()
        if snap.table.symbols[s] == "pkg.phase.strike_angle"
    ]
    row = store.row_of()[snap.table.ids[slot]]
    assert store.text_sha[row] == text_sha(embed_text(snap.table.get(slot)))
    assert store.file_sha[row] == snap.files["pkg/phase.py"][0]
    # the edited function is ranked by its new vector
    res = await command(client, "pycsamt.query", {**q, "query": "induction arrows"})
    hit = [
        r
        for r in field(res, "results")
        if field(r, "symbol") == "pkg.phase.strike_angle"
    ]
    assert hit and field(hit[0], "cosine") is not None


async def test_dense_off_never_embeds(client: LanguageClient, tmp_path: Path):
    root, _prof, idx, _n, before = await _start_on_embedded_corpus(client, tmp_path)
    res = await command(client, "pycsamt.query", {"query": "phase tensor strike"})
    assert "retrieval" not in res and field(res, "results")  # the setting is off
    stats0 = await command(client, "pycsamt.stats", {})
    phase = root / "pkg" / "phase.py"
    phase.write_text(phase.read_text() + "\n\ndef extra():\n    return 1\n")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=phase.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )

    async def changed():
        s = await command(client, "pycsamt.stats", {})
        return field(s, "fingerprint") != field(stats0, "fingerprint")

    for _ in range(200):
        if await changed():
            break
        await __import__("asyncio").sleep(0.05)
    assert await changed()
    assert not _embed_tokens(client)
    assert load_store(idx).fingerprint == before
