"""Markup structure: reST section adornments, Markdown headings, code fences.

Why one module: docs chunking, developer search, the offline answer's prose
and the editor's diagnostics each recognised headings and fences with their
own regex, and the reST ones accepted different adornment characters. The
adornment set here is docutils' (any non-alphanumeric printable ASCII
character that it allows), so a heading one feature sees, all see.
"""

from __future__ import annotations

import re

__all__ = [
    "FENCE",
    "FENCED_BLOCK",
    "MD_HEADING",
    "MD_HEADING_INDENTED",
    "RST_ADORNMENT",
    "RST_ADORNMENT_CHARS",
    "RST_ADORNMENT_INDENTED",
    "fence",
    "is_rst_adornment",
    "md_heading",
]

#: Characters a reST section title may be underlined (or overlined) with.
RST_ADORNMENT_CHARS = "=-~^\"'`#*+.:_<>!$%&,;?@\\/|"
_ADORN_CLASS = "[" + re.escape(RST_ADORNMENT_CHARS) + "]"
#: A reST adornment line: one character repeated at least three times.
RST_ADORNMENT = re.compile(rf"^({_ADORN_CLASS})\1{{2,}}\s*$")
#: The same, also when indented (docstrings, quoted blocks).
RST_ADORNMENT_INDENTED = re.compile(rf"^\s*({_ADORN_CLASS})\1{{2,}}\s*$")

#: An ATX Markdown heading at column 0: ``(hashes, title)``; the title may be empty.
MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: CommonMark's rule (up to three leading spaces), with a non-empty title.
MD_HEADING_INDENTED = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")

#: A fence line (opening or closing): ``(indent, marker, info word or None)``.
FENCE = re.compile(r"^(\s*)(```|~~~)\s*(\w+)?")
#: A whole backtick-fenced block in a Markdown text: ``(language, body)``.
FENCED_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def is_rst_adornment(line: str, *, indented: bool = False) -> bool:
    """True when *line* is a reST section over/underline."""
    pat = RST_ADORNMENT_INDENTED if indented else RST_ADORNMENT
    return pat.match(line) is not None


def md_heading(line: str, *, indented: bool = False) -> tuple[int, str] | None:
    """``(level, title)`` of an ATX heading line, else ``None``."""
    m = (MD_HEADING_INDENTED if indented else MD_HEADING).match(line)
    return (len(m.group(1)), m.group(2)) if m else None


def fence(line: str) -> tuple[str, str, str | None] | None:
    """``(indent, marker, info)`` when *line* opens or closes a code fence."""
    m = FENCE.match(line)
    return (m.group(1), m.group(2), m.group(3)) if m else None
