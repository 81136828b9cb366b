"""One set of markup rules (reST adornments, Markdown headings, fences), in
parity with the regexes of docs chunking, developer search, the offline
answer's prose, the editor's diagnostics and the code-block extractor."""

from __future__ import annotations

import re
import string

import pytest

from pycsamt_lsp.text.markup import (
    FENCE,
    FENCED_BLOCK,
    MD_HEADING,
    RST_ADORNMENT_CHARS,
    fence,
    is_rst_adornment,
    md_heading,
)

# -- the replaced implementations, verbatim ---------------------------------
OLD_DOCS_ADORN = re.compile(r"^([=\-~^\"'`#*+.:_<>!$%&,;?@\\/|])\1{2,}\s*$")
OLD_DEVSEARCH_ADORN = re.compile(r"^([=\-~^\"'`*+#:.])\1{2,}\s*$")
OLD_PROSE_ADORN = re.compile(r"^\s*([=\-~^*+#`'\".:_])\1{2,}\s*$")
OLD_DOCS_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
OLD_DEVSEARCH_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
OLD_DOCS_FENCE = re.compile(r"^\s*(```|~~~)")
OLD_DIAG_FENCE = re.compile(r"^(\s*)(```|~~~)\s*(\w+)?")
OLD_CODEBLOCKS = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def _lines() -> list[str]:
    out = []
    for c in string.printable:
        for n in (1, 2, 3, 8):
            for pre in ("", " ", "  ", "\t"):
                for post in ("", " ", "\r"):
                    out.append(pre + c * n + post)
    out += ["Title", "", "# Heading", "   ## Indented ##", "#NoSpace", "####### seven"]
    out += ["```python", "  ~~~ bash", "```", "`` not", "#", "## ", "    # four"]
    return out


LINES = _lines()


def test_rst_adornment_equals_docs_chunking_exactly():
    for line in LINES:
        assert is_rst_adornment(line) == bool(OLD_DOCS_ADORN.match(line)), repr(line)


def test_rst_adornment_accepts_everything_devsearch_and_prose_did():
    for line in LINES:
        if OLD_DEVSEARCH_ADORN.match(line):
            assert is_rst_adornment(line), repr(line)
        if OLD_PROSE_ADORN.match(line):
            assert is_rst_adornment(line, indented=True), repr(line)


def test_the_only_new_adornment_characters_are_docutils_punctuation():
    old = set("=-~^\"'`*+#:._")
    added = set(RST_ADORNMENT_CHARS) - old
    assert added == set("<>!$%&,;?@\\/|")
    assert all(c in string.punctuation for c in RST_ADORNMENT_CHARS)


def test_markdown_headings_equal_both_old_rules():
    for line in LINES:
        old = OLD_DOCS_HEADING.match(line)
        got = md_heading(line)
        assert (got is None) == (old is None), repr(line)
        if old:
            assert got == (len(old.group(1)), old.group(2))
        old = OLD_DEVSEARCH_HEADING.match(line)
        got = md_heading(line, indented=True)
        assert (got is None) == (old is None), repr(line)
        if old:
            assert got[1] == old.group(1)
    assert MD_HEADING.pattern == OLD_DOCS_HEADING.pattern


def test_fences_equal_docs_and_diagnostics():
    for line in [*LINES, "```py extra", "~~~", "  ```c++"]:
        assert bool(fence(line)) == bool(OLD_DOCS_FENCE.match(line)), repr(line)
        old = OLD_DIAG_FENCE.match(line)
        assert (FENCE.match(line) and FENCE.match(line).groups()) == (
            old and old.groups()
        )


@pytest.mark.parametrize(
    "md",
    [
        "x\n```python\nimport a\n```\n```\nplain text\n```\n```py\nb()\n```",
        "```bash title\nls\n```\ntext ```c++\nint x;\n```",
        "no fence",
    ],
)
def test_fenced_blocks_equal_the_code_block_extractor(md):
    assert FENCED_BLOCK.findall(md) == OLD_CODEBLOCKS.findall(md)
