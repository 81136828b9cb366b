"""Hallucinated-import diagnostics and quick fixes through a real LSP client."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from test_server import _track_index_state, client, start, until  # noqa: F401 - fixtures

BUFFER = "from pkg import correct_shif\nfrom pkg.core.shift import ShiftAgent\nShiftAgent('L1', k=2)\n"


def open_doc(
    client: LanguageClient, path: Path, text: str, language: str = "python"
) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=text
            )
        )
    )
    return uri


async def diagnostics_of(
    client: LanguageClient, uri: str, want
) -> list[types.Diagnostic]:
    async def check():
        diags = client.diagnostics.get(uri)
        return (diags,) if diags is not None and want(diags) else None

    got = await until(client, check)
    assert got, client.diagnostics.get(uri)
    return got[0]


async def test_diagnostic_quick_fix_and_corpus_edit(
    client: LanguageClient, tmp_path: Path
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    await start(client, corpus)
    script = tmp_path / "script.py"
    script.write_text(BUFFER)
    uri = open_doc(client, script, BUFFER)
    diags = await diagnostics_of(client, uri, lambda d: len(d) >= 1)
    [d] = [d for d in diags if d.code == "unknown-name"]
    assert d.source == "pycsamt-lsp"
    assert d.severity == types.DiagnosticSeverity.Error
    assert (d.range.start.line, d.range.start.character, d.range.end.character) == (
        0,
        16,
        28,
    )
    assert "correct_shift" in d.message

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    assert actions and actions[0].kind == types.CodeActionKind.QuickFix
    assert len(actions) <= 3
    fix = actions[0]
    [edit] = fix.edit.changes[uri]
    lines = BUFFER.splitlines(keepends=True)
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = (
        line[: edit.range.start.character]
        + edit.new_text
        + line[edit.range.end.character :]
    )
    fixed = "".join(lines)
    assert "correct_shift" in fixed
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    await diagnostics_of(client, uri, lambda d: not d)

    # a name that does not exist yet, then the corpus gains it
    text3 = fixed + "from pkg.phase import future_function\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text3)],
        )
    )
    await diagnostics_of(
        client, uri, lambda d: any("future_function" in x.message for x in d)
    )
    phase = corpus / "pkg" / "phase.py"
    phase.write_text(phase.read_text() + "\n\ndef future_function():\n    return 1\n")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=phase.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )
    await diagnostics_of(client, uri, lambda d: not d)


async def test_keyword_markdown_and_broken_buffer(
    client: LanguageClient, tmp_path: Path
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    await start(client, corpus, showSyntaxErrors=True)  # off by default
    bad_kw = "from pkg.core.shift import correct_shift\ncorrect_shift([1], factr=2.0)\n"
    uri = open_doc(client, tmp_path / "kw.py", bad_kw)
    diags = await diagnostics_of(client, uri, lambda d: len(d) >= 1)
    assert any(d.code == "unknown-keyword" and d.range.start.line == 1 for d in diags)

    md = "# Notes\n\nSome text.\n\n```python\nimport pkg.nowhere\n```\n"
    md_uri = open_doc(client, tmp_path / "notes.md", md, "markdown")
    diags = await diagnostics_of(client, md_uri, lambda d: len(d) >= 1)
    assert diags[0].range.start.line == 5 and diags[0].code == "unknown-module"

    broken = "from pkg import nothing_here\ndef broken(:\n    pass\n"
    b_uri = open_doc(client, tmp_path / "broken.py", broken)
    diags = await diagnostics_of(client, b_uri, lambda d: len(d) >= 2)
    codes = {d.code for d in diags}
    assert "syntax-error" in codes and "unknown-name" in codes
    # the server is still answering
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="pycsamt.validate",
            arguments=[{"code": "from pkg import correct_shift"}],
        )
    )
    assert res["ok"] is True

    client.text_document_did_close(
        types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)
        )
    )
    await diagnostics_of(client, uri, lambda d: not d)


async def test_quick_fix_inside_a_module_the_index_leaves_out(
    client: LanguageClient, tmp_path: Path
):
    """A module the profile excludes (UI glue) is deferred by the build, not
    parsed; its names are left out of the package-wide did-you-mean, yet a
    typo inside it gets that module's name as the quick fix."""
    import json

    from lsp_helpers import PROFILE_TOML

    corpus = tmp_path / "corpus"
    (corpus / "pkg" / "app").mkdir(parents=True)
    (corpus / "pkg" / "app" / "__init__.py").write_text("")
    (corpus / "pkg" / "app" / "window.py").write_text(
        "class MainWindow:\n    pass\n\n\ndef open_window():\n    return MainWindow()\n"
    )
    profile = tmp_path / "glue.toml"
    profile.write_text(
        PROFILE_TOML.replace('"/tests/"]', '"/tests/", "pkg/app/"]'), encoding="utf-8"
    )
    await start(client, corpus, profile=str(profile))
    model = json.loads((corpus / ".pycsamt_rag" / "package_model.json").read_text())
    record = model["model"]["files"]["pkg/app/window.py"]
    assert "deferred" in record and "head" not in record  # not parsed by the build
    text = (
        "from pkg.app.window import MainWindw\n"
        "from pkg.app.window import open_window\n"
        "from pkg import open_windw\n"
    )
    script = tmp_path / "glue.py"
    script.write_text(text)
    uri = open_doc(client, script, text)
    diags = await diagnostics_of(client, uri, lambda d: len(d) >= 2)
    assert sorted(d.range.start.line for d in diags) == [0, 2]  # open_window is real

    async def fixes(line: int) -> list[str]:
        [d] = [d for d in diags if d.range.start.line == line]
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=d.range,
                context=types.CodeActionContext(diagnostics=[d]),
            )
        )
        return [e.new_text for a in actions or () for e in a.edit.changes[uri]]

    assert (await fixes(0))[0] == "MainWindow"
    assert not any("open_window" in t for t in await fixes(2))
