"""Completion on ordinary lines never freezes the server (issue 19).

The cursor-context patterns of completion used to backtrack exponentially on
ordinary prose and code lines (a docstring sentence, ``for station in survey
stations:``) and quadratically on long dotted chains. ``re`` holds the GIL
while it backtracks, so the worker thread starved the event loop and no other
request was answered. These tests drive the real server with the buffers that
froze it, then check that hover on another document still answers, and pin the
pure function's answers on the same lines.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from pycsamt_lsp.analysis.buffer import completion_context
from test_hover_lsp import completion, hover, index_states, open_corpus, open_doc  # noqa: F401
from test_server import client  # noqa: F401 - the client fixture

DOCSTRING = '''def f():
    """Static shift.

    Compute the static shift factors for every station.

    """
'''
INDENTED = "def g(group, name):\n    if group is None or name not in group:\n     \n"
PROSE = "    for station in survey stations:\n"
CHAIN = "x = " + "a." * 8000 + "\n"


@pytest.mark.usefixtures("index_states")
async def test_completion_on_ordinary_lines_answers_and_leaves_hover_alive(
    client: LanguageClient, tmp_path: Path
):
    await open_corpus(client, tmp_path)
    good = open_doc(
        client, tmp_path / "good.py", "from pkg.core.shift import correct_shift\n"
    )
    cases = [
        (DOCSTRING, 4, 0),
        (INDENTED, 2, 5),
        (PROSE, 0, len(PROSE) - 1),
        (CHAIN, 0, len(CHAIN) - 1),
        (PROSE, 1_000_000, 2_147_483_647),
    ]
    for i, (text, line, char) in enumerate(cases):
        uri = open_doc(client, tmp_path / f"buf{i}.py", text)
        got = await asyncio.wait_for(completion(client, uri, line, char), 10)
        # none of these positions completes a package name
        assert not got, (i, got)
        card = await asyncio.wait_for(hover(client, good, 0, 30), 10)
        assert card is not None and "correct_shift" in card.contents.value


def test_completion_context_on_the_lines_that_froze():
    lines = DOCSTRING.splitlines()
    assert completion_context(lines, 4, 0) is None
    assert completion_context(INDENTED.splitlines(), 2, 5) is None
    assert completion_context([PROSE.rstrip("\n")], 0, len(PROSE) - 1) is None
    chain = CHAIN.rstrip("\n")
    got = completion_context([chain], 0, len(chain))
    assert got is not None and got.kind == "attributes"
    assert got.base == ".".join(["a"] * 8000) and got.prefix == ""
    # the multi-line ``from M import (`` list still completes names
    names = ["from pkg.core import (", "    correct_shift,", "    Sta"]
    got = completion_context(names, 2, 7)
    assert (got.kind, got.base, got.prefix) == ("names", "pkg.core", "Sta")


def test_alias_guess_on_a_long_line_is_linear():
    """Hover in a buffer that does not parse reads ``from M import N as |``
    from the text; the alias pattern was searched with a quadratic regex
    (12 s on a 20,000-character name, the GIL held throughout). The backward
    scan gives the regex's answers and returns at once on 200,000."""
    import re

    from pycsamt_lsp.analysis.buffer import _alias_target, analyze

    def by_regex(before: str) -> str | None:
        m = re.search(r"([A-Za-z_]\w*)\s+as\s*$", before)
        return m.group(1) if m else None

    for before in (
        " correct_shift as",
        " a,  ShiftAgent  as  ",
        "9abc as",
        "éabc as",
        "as",
        " as",
        "abcas",
        "abc\tas\t",
        "a.b as",
        "é as",
    ):
        assert _alias_target(before) == by_regex(before), before
    assert _alias_target(" " + "a" * 200_000 + " xs") is None
    long = "from pkg.core.shift import " + "a" * 200_000 + " as x)"
    index = analyze(long + "\n", "pkg")
    assert not index.parsed
    ref = index.ref_at(0, len(long) - 1)
    assert ref is not None and ref.dotted == "pkg.core.shift." + "a" * 200_000
