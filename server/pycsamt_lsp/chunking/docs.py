"""reStructuredText and Markdown into section chunks, split at headings.

Markdown headings are ``#`` lines (outside code fences). reStructuredText
titles are a text line followed by an underline of one repeated punctuation
character at least as long as the text, optionally with an overline of the
same character. Recipes use the same splitter with kind ``recipe``.
"""

from __future__ import annotations

import re

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
    """
    lines = text.splitlines()
    sections: list[list] = [["", 1, []]]
    i, n = 0, len(lines)
    in_fence = False
    # a rst title needs an adornment on its own line or the next: matched
    # once per line here, so most lines skip the heading test altogether
    adorned = (
        [bool(RST_ADORNMENT.match(ln)) for ln in lines] + [False]
        if suffix != ".md"
        else []
    )
    while i < n:
        line = lines[i]
        if suffix == ".md":
            if FENCE.match(line):
                in_fence = not in_fence
            m = None if in_fence else MD_HEADING.match(line)
            if m:
                sections.append([m.group(2).strip(), i + 1, []])
                i += 1
                continue
        elif adorned[i] or adorned[i + 1]:
            got = _rst_heading(lines, i)
            if got:
                sections.append([got[0], i + 1, []])
                i += got[1]
                continue
        sections[-1][2].append(line)
        i += 1
    out: list[tuple[str, int, int, str]] = []
    for k, (title, start, body) in enumerate(sections):
        end = sections[k + 1][1] - 1 if k + 1 < len(sections) else max(n, 1)
        joined = "\n".join(body).strip()
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
