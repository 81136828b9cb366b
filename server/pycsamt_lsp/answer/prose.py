"""Readable text out of a chunk: prose, snippets, labels, first sentences.

Shared by citations, offline answers, clarifying questions and the catalog:
each decides what of a chunk a reader sees, never what is retrieved.
"""

from __future__ import annotations

import re

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.text.markup import RST_ADORNMENT_INDENTED

__all__ = [
    "LIST_ITEM",
    "NUMPYDOC_SECTION",
    "SNIPPET_LIMIT",
    "clip",
    "first_sentence",
    "human",
    "label_of",
    "prose_of",
    "snippet",
]

SNIPPET_LIMIT = 280

NUMPYDOC_SECTION = re.compile(
    r"\n\s*(Parameters|Returns|Yields|Raises|See Also|Notes|Examples|Attributes"
    r"|References|Warnings)\s*\n\s*-{3,}"
)
_HEADER_LINE = re.compile(
    r"\s*(Module|File|Class|Function|Method|Signature|Symbol|Paper|Document)\s*:\s"
)


def prose_of(chunk: Chunk) -> str:
    """The most readable slice of a chunk: docstring prose or section body."""
    text = chunk.text or ""
    if chunk.kind == "pdf_page":
        text = text.split("\n", 1)[-1]
    elif "Docstring:" in text:
        body = text.split("Docstring:", 1)[1].split("\nCode:", 1)[0]
        body = NUMPYDOC_SECTION.split(body, 1)[0]
        text = body  # no docstring: no prose (the snippet falls back to the code)
    elif chunk.kind == "module_doc":
        text = text.split("\n\n", 1)[-1] if "\n\n" in text else text
    elif text.startswith("Document:"):
        text = text.split("\n", 1)[-1]
        heading = (chunk.metadata.get("heading") or "").strip()
        lines = text.splitlines()
        if lines and heading and lines[0].strip().lstrip("#").strip() == heading:
            lines = lines[1:]
        text = "\n".join(lines)
        text = re.sub(r"```.*?```", "", text, flags=re.S)
    lines = [ln for ln in text.splitlines() if not _HEADER_LINE.match(ln)]
    if chunk.symbol:  # a reST title repeating the module name, and its adornment
        while lines and (
            not lines[0].strip()
            or lines[0].strip() == chunk.symbol
            or RST_ADORNMENT_INDENTED.match(lines[0])
        ):
            lines = lines[1:]
    text = "\n".join(ln for ln in lines if not RST_ADORNMENT_INDENTED.match(ln))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def snippet(chunk: Chunk, limit: int = SNIPPET_LIMIT) -> str:
    """At most *limit* characters of prose, whitespace collapsed."""
    text = " ".join(prose_of(chunk).split()) or " ".join((chunk.text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def label_of(chunk: Chunk) -> str:
    """Symbol for code, ``file: Section`` for docs, ``file, p. N`` for papers."""
    if chunk.symbol:
        return chunk.symbol
    src = chunk.source_path.rsplit("/", 1)[-1]
    if chunk.kind == "pdf_page":
        return f"{src}, p. {chunk.metadata.get('page')}"
    stem = src.rsplit(".", 1)[0]
    title = (chunk.metadata.get("heading") or "").strip()
    if title and title.lower() != stem.lower():
        return f"{stem}: {title}"
    return title or chunk.source_path


LIST_ITEM = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])\s+(.*?)(?=\n\s*(?:[-*+]|\d+[.)])\s|\Z)", re.S
)


def clip(text: str, limit: int) -> str:
    """*text* cut to *limit* characters at a line or sentence end when possible."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind("\n"), head.rfind(". ") + 1)
    if cut < limit // 2:
        cut = head.rfind(" ")
    return head[: max(cut, 1)].rstrip() + " …"


def first_sentence(text: str, max_len: int = 200) -> tuple[str, str]:
    """``(first sentence, the rest)`` of a docstring or section.

    The first sentence of the first paragraph, cut to *max_len* with an
    ellipsis; the rest is the later paragraphs (or, for a single paragraph,
    what follows the first sentence), so a summary line never repeats.
    """
    text = (text or "").strip()
    if not text:
        return "", ""
    para = " ".join(text.split("\n\n", 1)[0].split())
    m = re.search(r"(?<=[.!?])\s", para)
    first = para[: m.start()] if m else para
    if len(first) > max_len:
        first = first[: max_len - 1].rstrip() + "…"
    rest = text.split("\n\n", 1)[1].strip() if "\n\n" in text else ""
    if m and not rest:
        rest = para[m.end() :].strip()
    return first, rest


def human(workflow: str) -> str:
    """A workflow name for a sentence (``static_shift`` -> ``static shift``)."""
    return workflow.replace("_", " ")
