"""reStructuredText and Markdown into section chunks, split at headings.

Markdown headings are ``#`` lines (outside code fences). reStructuredText
titles are a text line followed by an underline of one repeated punctuation
character at least as long as the text, optionally with an overline of the
same character. Recipes use the same splitter with kind ``recipe``.
"""

from __future__ import annotations

import re
from itertools import compress, count

from pycsamt_lsp.chunking.chunk import Chunk
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.text.markup import FENCE, MD_HEADING, RST_ADORNMENT

__all__ = ["chunk_doc", "split_sections"]

#: Sections shorter than this with no heading carry no retrievable content.
MIN_SECTION_CHARS = 24


def _rst_heading(lines: list[str], i: int) -> tuple[str, int] | None:
    """``(title, lines consumed)`` when a rst title starts at line *i*."""
    n = len(lines)
    line = lines[i]
    # overline + title + underline
    if RST_ADORNMENT.match(line) and i + 2 < n:
        title = lines[i + 1].strip()
        under = lines[i + 2]
        if (
            title
            and RST_ADORNMENT.match(under)
            and under.strip()[0] == line.strip()[0]
            and len(line.strip()) >= len(title)
            and not RST_ADORNMENT.match(lines[i + 1])
        ):
            return title, 3
    # title + underline
    if (
        line.strip()
        and not RST_ADORNMENT.match(line)
        and i + 1 < n
        and not line.startswith((" ", "\t"))
    ):
        under = lines[i + 1]
        if RST_ADORNMENT.match(under) and len(under.strip()) >= len(line.strip()):
            return line.strip(), 2
    return None


def split_sections(text: str, suffix: str) -> list[tuple[str, int, int, str]]:
    """``(title, line_start, line_end, body)`` per section, 1-based lines.

    Content before the first heading has an empty title.

    Only the lines that can start a heading are visited in Python (a
    section's body is the slice of lines between two headings): for reST,
    a line that is an adornment or precedes one (one ``RST_ADORNMENT.match``
    per line, mapped in C); for Markdown, a line starting with ``#`` or
    holding a fence marker (a fence toggles headings off until it closes).
    The checkout's 156k lines of docs were a Python step each.
    """
    lines = text.splitlines()
    n = len(lines)
    #: ``[title, line_start (1-based), first body line (0-based)]``
    heads: list[list] = [["", 1, 0]]
    ends: list[int] = []  # 0-based end (exclusive) of each section's body
    if suffix == ".md":
        in_fence = False
        for i in [
            i
            for i, ln in enumerate(lines)
            if ln[:1] == "#" or "```" in ln or "~~~" in ln
        ]:
            line = lines[i]
            if FENCE.match(line):
                in_fence = not in_fence
            m = None if in_fence else MD_HEADING.match(line)
            if m:
                ends.append(i)
                heads.append([m.group(2).strip(), i + 1, i + 1])
    else:
        # a rst title needs an adornment on its own line or the next
        adorned = list(compress(count(), map(RST_ADORNMENT.match, lines)))
        cands = sorted({j for a in adorned for j in (a - 1, a) if j >= 0})
        i = 0  # the first line not consumed by a heading
        for c in cands:
            if c < i:
                continue
            got = _rst_heading(lines, c)
            if got:
                ends.append(c)
                heads.append([got[0], c + 1, c + got[1]])
                i = c + got[1]
    ends.append(n)
    out: list[tuple[str, int, int, str]] = []
    for k, (title, start, first) in enumerate(heads):
        end = heads[k + 1][1] - 1 if k + 1 < len(heads) else max(n, 1)
        joined = "\n".join(lines[first : ends[k]]).strip()
        if joined or title:
            out.append((title, start, max(end, start), joined))
    return out


def chunk_doc(
    rel: str, text: str, profile: Profile, *, kind: str = "doc_section"
) -> list[Chunk]:
    """Section chunks of one ``.md``/``.rst`` file (``kind="recipe"`` for recipes)."""
    suffix = ".md" if rel.lower().endswith(".md") else ".rst"
    priority = profile.priority_for(rel)
    chunks: list[Chunk] = []
    file_workflow = None
    if kind == "recipe":
        m = re.search(r"^\s*\**workflow\**\s*:\s*\**`?([a-z0-9_]+)", text, re.I | re.M)
        if m and m.group(1).lower() in profile.workflow_names:
            file_workflow = m.group(1).lower()
    for idx, (title, start, end, body) in enumerate(split_sections(text, suffix)):
        if len(body) < MIN_SECTION_CHARS and not title:
            continue
        header = f"{title}\n\n" if title else ""
        workflow = file_workflow or profile.chunk_workflow(rel, title, body[:400])
        chunks.append(
            Chunk(
                id=f"{rel}:sec{idx}",
                text=f"Document: {rel}\n{header}{body}".strip(),
                source_path=rel,
                kind=kind,
                symbol=None,
                workflow=workflow,
                priority=priority,
                metadata={
                    "heading": title or None,
                    "section_index": idx,
                    "line_start": start,
                    "line_end": end,
                },
            )
        )
    return chunks
