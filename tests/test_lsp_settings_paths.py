"""Settings, however they arrive; push vs pull diagnostics; fix-all and
``codeDescription`` (issue 16), through a real pytest-lsp client.

The configuration is served by pytest-lsp's own ``workspace/configuration``
handler (``set_configuration`` per scope), as eglot's dir-locals or
Neovim's ``settings`` would; the counts of "corpus root" and "file
watching" log lines are how many index opens and watchers the server ran.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_helpers import wait_for, write_fixture_corpus
from test_server import _state, _track_index_state, client  # noqa: F401 - fixtures

CODES_HELP = "https://github.com/pycsamt-lsp/pycsamt-lsp#diagnostic-codes"
BROKEN = "from pkg import correct_shif\nfrom pkg.phase import strike_angl\ndef f(:\n"


def logs(client: LanguageClient, needle: str) -> list[str]:
    return [m.message for m in client.log_messages if needle in m.message]


def open_doc(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="python", version=1, text=text
            )
        )
    )
    return path.as_uri()


async def init(
    client: LanguageClient,
    root: Path,
    caps: types.ClientCapabilities,
    options: dict | None = None,
):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            initialization_options=options or {},
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="w")],
        )
    )


async def test_pull_plus_push_builds_once_and_null_pulls_again(
    client: LanguageClient, tmp_path: Path
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    profile = write_fixture_corpus(corpus)
    # corpusRoot only from workspace/configuration, as eglot / Neovim send it
    cfg = {"corpusRoot": str(corpus), "profile": str(profile), "debounceMs": 50}
    client.set_configuration(cfg, section="pycsamt", scope_uri=corpus.as_uri())
    seen_items: list[types.ConfigurationItem] = []
    default = client.get_configuration

    def spy(*, section=None, scope_uri=None):
        seen_items.append(types.ConfigurationItem(section=section, scope_uri=scope_uri))
        return default(section=section, scope_uri=scope_uri)

    client.get_configuration = spy
    await init(client, corpus, client_capabilities("visual-studio-code"))
    # and the same settings pushed right after `initialized`
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"pycsamt": cfg})
    )
    await wait_for(lambda: _state(client) in ("ready", "error"))
    assert _state(client) == "ready"
    await asyncio.sleep(0.5)  # a second build would have started by now
    assert len(logs(client, "corpus root")) == 1, logs(client, "corpus root")
    assert len(logs(client, "file watching")) == 1
    assert [i.scope_uri for i in seen_items] == [corpus.as_uri()]
    assert seen_items[0].section == "pycsamt"

    uri = open_doc(client, corpus / "broken.py", BROKEN)
    diags = await wait_for(lambda: client.diagnostics.get(uri))
    codes = {d.code for d in diags}
    assert "unknown-name" in codes and "syntax-error" not in codes  # off by default
    assert all(d.code_description.href == CODES_HELP for d in diags)

    # VS Code's form: settings null means "ask me again"; the open document
    # is re-published with the new settings, and nothing is rebuilt
    client.set_configuration(
        {**cfg, "showSyntaxErrors": True, "diagnosticsSeverity": "warning"},
        section="pycsamt",
        scope_uri=corpus.as_uri(),
    )
    client.diagnostics.pop(uri)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=None)
    )
    diags = await wait_for(
        lambda: (
            (d := client.diagnostics.get(uri))
            and any(x.code == "syntax-error" for x in d)
            and d
        )
    )
    assert all(
        d.severity == types.DiagnosticSeverity.Warning
        for d in diags
        if d.code == "unknown-name"
    )
    assert len(seen_items) == 2 and seen_items[1].scope_uri == corpus.as_uri()
    assert len(logs(client, "corpus root")) == 1

    # a pushed object turns it off again, re-published too
    client.diagnostics.pop(uri)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"pycsamt": cfg})
    )
    diags = await wait_for(lambda: client.diagnostics.get(uri))
    assert "syntax-error" not in {d.code for d in diags}
    assert len(logs(client, "corpus root")) == 1


async def test_code_action_kinds_and_fix_all(client: LanguageClient, tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    profile = write_fixture_corpus(corpus)
    await init(
        client,
        corpus,
        client_capabilities("visual-studio-code"),
        {"corpusRoot": str(corpus), "profile": str(profile), "debounceMs": 50},
    )
    await wait_for(lambda: _state(client) == "ready")
    text = BROKEN.replace("def f(:\n", "")
    uri = open_doc(client, corpus / "two.py", text)
    diags = await wait_for(
        lambda: (d := client.diagnostics.get(uri)) and len(d) == 2 and d
    )

    async def actions(only):
        return (
            await client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    range=diags[0].range,
                    context=types.CodeActionContext(diagnostics=diags, only=only),
                )
            )
            or []
        )

    source = await actions([types.CodeActionKind.SourceFixAll])
    assert [a.kind for a in source] == ["source.fixAll.pycsamt"]
    assert await actions([types.CodeActionKind.Source]) == source  # `source` admits it
    quick = await actions([types.CodeActionKind.QuickFix])
    assert quick and {a.kind for a in quick} == {types.CodeActionKind.QuickFix}
    every = await actions(None)  # no filter: both, fix-all last
    assert every[-1].kind == "source.fixAll.pycsamt"
    assert [a.title for a in every[:-1]] == [a.title for a in quick]

    [edits] = source[0].edit.changes.values()
    lines = text.split("\n")
    for e in sorted(edits, key=lambda e: e.range.start.line, reverse=True):
        assert e.range.start.line == e.range.end.line  # ASCII: columns are code points
        line = lines[e.range.start.line]
        lines[e.range.start.line] = (
            line[: e.range.start.character] + e.new_text + line[e.range.end.character :]
        )
    fixed = "\n".join(lines)
    assert (
        fixed == "from pkg import correct_shift\nfrom pkg.phase import strike_angle\n"
    )


async def test_pull_diagnostics_when_the_client_offers_them(
    client: LanguageClient, tmp_path: Path
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    profile = write_fixture_corpus(corpus)
    caps = client_capabilities("neovim")  # textDocument.diagnostic is offered
    assert caps.text_document.diagnostic is not None
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(
        refresh_support=True
    )
    client.diagnostic_refresh_count = 0
    cfg = {"corpusRoot": str(corpus), "profile": str(profile), "debounceMs": 50}
    await init(client, corpus, caps, cfg)
    await wait_for(lambda: _state(client) == "ready")
    uri = open_doc(client, corpus / "pulled.py", BROKEN)

    async def pull():
        return await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri)
            )
        )

    report = await pull()
    assert report.kind == "full"
    codes = [d.code for d in report.items]
    assert "unknown-name" in codes and "syntax-error" not in codes
    assert all(d.code_description.href == CODES_HELP for d in report.items)
    await asyncio.sleep(0.3)
    assert uri not in client.diagnostics  # never pushed as well

    refreshes = client.diagnostic_refresh_count
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"pycsamt": {**cfg, "showSyntaxErrors": True}}
        )
    )
    await wait_for(lambda: client.diagnostic_refresh_count > refreshes)
    report = await pull()
    assert "syntax-error" in [d.code for d in report.items]
    assert uri not in client.diagnostics
