"""Positions in the negotiated encoding (utf-16, utf-8, utf-32), end to end.

A real pytest-lsp client offers one ``general.positionEncodings`` value;
the buffer has BMP (``é``) and non-BMP (``𝄞``, two UTF-16 units, four
UTF-8 bytes) characters before the names, so a server that counts in the
wrong unit puts the squiggle and the quick fix on the wrong characters.
The expected columns are computed here by encoding the text with Python's
codecs, independently of the server's conversion; each quick fix is
applied the way a client applies it and the resulting text is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from lsp_helpers import wait_for, write_fixture_corpus
from test_server import _state, _track_index_state, client  # noqa: F401 - fixtures

ENCODINGS = ("utf-16", "utf-8", "utf-32")
LINE0 = 's = "é𝄞"; from pkg import correct_shif'
LINE1 = 't = "𝄞é"; from pkg.core.shift import ShiftAgent as SA'
LINE2 = 'u = "😋"; SA("L1", k=2)'
LINE3 = "import pkg.core.shift as sh"
LINE4 = 'w = "é𝄞"; sh.corr + 1'
BUFFER = f"{LINE0}\n{LINE1}\n{LINE2}\n{LINE3}\n{LINE4}\n"


def units(text: str, enc: str) -> int:
    """Code units of *text* in *enc* (Python's codecs, not the server's)."""
    if enc == "utf-8":
        return len(text.encode("utf-8"))
    if enc == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def to_code_points(line: str, n: int, enc: str) -> int:
    """Client column *n* -> code-point column (must fall on a character)."""
    for i in range(len(line) + 1):
        if units(line[:i], enc) == n:
            return i
    raise AssertionError(f"column {n} ({enc}) is inside a character of {line!r}")


def apply_edits(text: str, edits: list[types.TextEdit], enc: str) -> str:
    """Apply LSP text edits as a client does (last first)."""
    lines = text.split("\n")

    def offset(pos: types.Position) -> int:
        return sum(len(x) + 1 for x in lines[: pos.line]) + to_code_points(
            lines[pos.line], pos.character, enc
        )

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[
        ::-1
    ]:
        a, b = offset(e.range.start), offset(e.range.end)
        text = text[:a] + e.new_text + text[b:]
        lines = text.split("\n")
    return text


async def start_with(client: LanguageClient, root: Path, enc: str):
    profile = write_fixture_corpus(root)
    caps = client_capabilities("visual-studio-code")
    caps.general = types.GeneralClientCapabilities(position_encodings=[enc])
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            initialization_options={
                "corpusRoot": str(root),
                "profile": str(profile),
                "debounceMs": 50,
            },
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="c")],
        )
    )
    await wait_for(lambda: _state(client) in ("ready", "error"))
    assert _state(client) == "ready"
    return result


def at(line: str, needle: str, enc: str, delta: int = 0) -> int:
    """Client column of *needle* (+ *delta* code points) on *line*."""
    return units(line[: line.index(needle) + delta], enc)


@pytest.mark.parametrize("enc", ENCODINGS)
async def test_every_position_in_the_negotiated_encoding(
    client: LanguageClient, tmp_path: Path, enc: str
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    result = await start_with(client, corpus, enc)
    assert result.capabilities.position_encoding == enc

    script = corpus / "script.py"
    script.write_text(BUFFER, encoding="utf-8")
    uri = script.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=BUFFER
            )
        )
    )
    diags = await wait_for(lambda: client.diagnostics.get(uri), timeout=30)

    # the diagnostic covers exactly `correct_shif`
    [d] = [d for d in diags if d.code == "unknown-name" and d.range.start.line == 0]
    assert d.range.start == types.Position(
        line=0, character=at(LINE0, "correct_shif", enc)
    )
    assert d.range.end == types.Position(line=0, character=units(LINE0, enc))

    # every quick fix, applied, gives valid code on the right characters
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    quick = [a for a in actions or [] if a.kind == types.CodeActionKind.QuickFix]
    assert quick, actions
    results = [apply_edits(BUFFER, a.edit.changes[uri], enc) for a in quick]
    assert results[0] == BUFFER.replace("correct_shif\n", "correct_shift\n", 1)
    for fixed in results:
        first = fixed.split("\n")[0]
        assert first.startswith('s = "é𝄞"; from pkg'), first  # prefix untouched
        assert fixed.split("\n")[1:] == BUFFER.split("\n")[1:]

    # fix-all applies the unambiguous fix the same way
    fix_all = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0),
                end=types.Position(line=0, character=0),
            ),
            context=types.CodeActionContext(
                diagnostics=list(diags), only=[types.CodeActionKind.SourceFixAll]
            ),
        )
    )
    assert fix_all and all(a.kind == "source.fixAll.pycsamt" for a in fix_all)
    assert apply_edits(BUFFER, fix_all[0].edit.changes[uri], enc) == results[0]

    # hover: a position in client units, the range back on `ShiftAgent`
    col = at(LINE1, "ShiftAgent", enc, 3)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=1, character=col),
        )
    )
    assert hover is not None and "ShiftAgent" in hover.contents.value
    assert hover.range.start.character == at(LINE1, "ShiftAgent", enc)
    assert hover.range.end.character == at(LINE1, "ShiftAgent", enc, len("ShiftAgent"))

    # a keyword argument after a non-BMP character
    col = at(LINE2, "k=", enc)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=2, character=col),
        )
    )
    assert hover is not None and "k" in hover.contents.value
    assert (hover.range.start.character, hover.range.end.character) == (
        at(LINE2, "k=", enc),
        at(LINE2, "k=", enc, 1),
    )

    # definition from a client-unit position
    locs = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=1, character=at(LINE1, "ShiftAgent", enc, 1)),
        )
    )
    assert locs and locs[0].uri.endswith("pkg/core/shift.py")

    # completion inside a line, after the non-BMP character: a column read
    # in the wrong unit lands in ` + 1` and completes nothing
    got = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=4, character=at(LINE4, " + 1", enc)),
        )
    )
    labels = [i.label for i in (got.items if got else [])]
    assert "correct_shift" in labels, labels
