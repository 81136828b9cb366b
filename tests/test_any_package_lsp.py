"""Every diagnostic on the line and columns of its construct (issue 17).

Through a real LSP client on the fixture corpus of ``test_server``: the
shadowing warning used to sit at line 0, column 0 for a name rebound by a
second import (the issue's 4-line repro), and on the whole statement for a
``def``/``class``/``except ... as``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from test_diagnostics_lsp import diagnostics_of, open_doc
from test_server import _track_index_state, client, start  # noqa: F401 - fixtures

# -- positions: every diagnostic on its construct (through the LSP) -------------

SHADOW = (
    "import os\n"
    "from pkg import correct_shift\n"
    "from pkg.core.shift import ShiftAgent as correct_shift\n"
    "correct_shift()\n"
)


async def test_shadowing_warning_on_the_rebinding_name(
    client: LanguageClient, tmp_path: Path
):
    """The issue's 4-line repro: the warning was at line 0, column 0."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    await start(client, corpus)
    script = tmp_path / "shadow.py"
    script.write_text(SHADOW)
    uri = open_doc(client, script, SHADOW)
    diags = await diagnostics_of(
        client, uri, lambda d: any("shadowed" in x.message for x in d)
    )
    [d] = [x for x in diags if "shadowed" in x.message]
    assert d.severity == types.DiagnosticSeverity.Warning
    line = SHADOW.splitlines()[2]
    col = line.index("as correct_shift") + 3
    assert (d.range.start.line, d.range.start.character) == (2, col)
    assert (d.range.end.line, d.range.end.character) == (2, col + len("correct_shift"))


@pytest.mark.parametrize(
    ("code", "line", "word"),
    [
        ("from pkg import correct_shift\ncorrect_shift = 3\n", 1, "correct_shift"),
        ("from pkg import correct_shift\ndef correct_shift():\n    pass\n", 1, None),
        ("from pkg import correct_shift\nclass correct_shift:\n    pass\n", 1, None),
        (
            "from pkg import correct_shift\ntry:\n    pass\n"
            "except ValueError as correct_shift:\n    pass\n",
            3,
            None,
        ),
        ("from pkg import correct_shift\ndef f(correct_shift=1):\n    pass\n", 1, None),
    ],
)
async def test_shadowing_positions_per_binding_kind(
    client: LanguageClient, tmp_path: Path, code, line, word
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    await start(client, corpus)
    script = tmp_path / "kinds.py"
    script.write_text(code)
    uri = open_doc(client, script, code)
    diags = await diagnostics_of(
        client, uri, lambda d: any("shadowed" in x.message for x in d)
    )
    [d] = [x for x in diags if "shadowed" in x.message]
    text = code.splitlines()[line]
    col = text.rindex("correct_shift")
    assert (d.range.start.line, d.range.start.character) == (line, col), text
    assert d.range.end.character == col + len("correct_shift")
