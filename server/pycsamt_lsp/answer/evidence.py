"""Numbered evidence and everything an answer is built from.

:class:`AssembledContext` holds the retrieved chunks as numbered
:class:`Evidence` (each renders as a citation), the BM25 top score behind
the confidence gate, project context, related symbols and API cards of the
retrieved code. The functions here decorate evidence; retrieval itself is
:func:`pycsamt_lsp.answer.context.assemble`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.answer.prose import (
    NUMPYDOC_SECTION,
    first_sentence,
    label_of,
    snippet,
)
from pycsamt_lsp.cards.card import card_for
from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.chunking.python import module_name
from pycsamt_lsp.corpus.testfiles import is_test_symbol
from pycsamt_lsp.search.phrasings import is_phrasing_list

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "CODE_KINDS",
    "CONFIDENCE_FLOOR",
    "CONTEXT_CHARS",
    "EXCERPT_CHARS",
    "AssembledContext",
    "Evidence",
    "api_cards_for",
    "related_symbols_for",
]

log = logging.getLogger(__name__)

#: The seed's calibrated floor: on-topic queries score ~30-80 on pyCSAMT,
#: contentless ones below 20.
CONFIDENCE_FLOOR = 25.0
CODE_KINDS = ("python_symbol", "python_method", "module_doc")
#: Characters of one excerpt and of all excerpts sent to the model.
EXCERPT_CHARS = 1800
CONTEXT_CHARS = 12000


@dataclass
class Evidence:
    """One numbered piece of evidence."""

    n: int
    chunk: Chunk
    score: float
    uri: str

    def citation(self) -> dict[str, Any]:
        """The citation record an answer returns: where the chunk is (path, lines,
        page), what it is, and its score, numbered as in the answer text.
        """
        c = self.chunk
        page = c.metadata.get("page")
        return {
            "n": self.n,
            "id": c.id,
            "source_path": c.source_path,
            "line_start": c.line_start,
            "line_end": c.line_end,
            "page": page,
            "label": label_of(c),
            "kind": c.kind,
            "symbol": c.symbol,
            "workflow": c.workflow,
            "score": round(float(self.score), 4),
            "snippet": snippet(c),
            "uri": self.uri,
        }

    def where(self) -> str:
        """``path, page N`` or ``path:start-end`` (or the bare path): how the
        answer text points a reader at the source.
        """
        c = self.chunk
        if c.metadata.get("page"):
            return f"{c.source_path}, page {c.metadata['page']}"
        if c.line_start:
            return f"{c.source_path}:{c.line_start}-{c.line_end or c.line_start}"
        return c.source_path


def _names(question: str, symbol: str) -> bool:
    """True when *question* names *symbol* as an identifier.

    A plain English leaf (``correct``, ``run``) only counts in backticks or
    as a call; ``estimate_ss_ama`` or ``StaticShiftAgent`` count anywhere
    (case-insensitive), as does a dotted path ending in the leaf.
    """
    leaf = symbol.rsplit(".", 1)[-1]
    if len(leaf) < 3:
        return False
    esc = re.escape(leaf)
    if re.search(rf"(`[\w.]*{esc}`|\b{esc}\(|\.{esc}\b)", question):
        return True
    identifier_like = "_" in leaf.strip("_") or leaf[1:] != leaf[1:].lower()
    return identifier_like and re.search(rf"\b{esc}\b", question, re.I) is not None


@dataclass
class AssembledContext:
    """Everything an answer is built from (seed 2.9)."""

    question: str
    evidence: list[Evidence] = field(default_factory=list)
    top_score: float = 0.0
    workflow: str | None = None
    retrieval: str = "bm25"
    dense_error: str | None = None
    project_context: dict[str, Any] | None = None
    related_symbols: list[str] = field(default_factory=list)
    api_cards: list[dict[str, Any]] = field(default_factory=list)
    registry_lines: list[str] = field(default_factory=list)
    package: str = "pycsamt"

    @property
    def confident(self) -> bool:
        """Enough to answer without hedging: project context was found, or the
        best retrieval score clears ``CONFIDENCE_FLOOR``.
        """
        return bool(self.project_context) or self.top_score >= CONFIDENCE_FLOOR

    @property
    def citations(self) -> list[dict[str, Any]]:
        """One :meth:`Evidence.citation` per evidence chunk, in rank order."""
        return [e.citation() for e in self.evidence]

    def lead(self) -> Evidence | None:
        """The code chunk the question names, else the top-ranked evidence
        that is not just a list of ways to ask (search/phrasings.py)."""
        for e in self.evidence:
            c = e.chunk
            if c.symbol and c.kind in CODE_KINDS and _names(self.question, c.symbol):
                return e
        for e in self.evidence:
            if not is_phrasing_list(e.chunk.text, e.chunk.metadata.get("heading")):
                return e
        return None

    def context_text(self, max_chars: int = CONTEXT_CHARS) -> str:
        """The labelled excerpts handed to a model."""
        blocks: list[str] = []
        if self.project_context:
            pc = self.project_context
            blocks.append(
                "Project context (from the survey-line registry):\n"
                f"  line: {pc.get('line')}  project: {pc.get('project')}\n"
                f"  edi_dir: {pc.get('edi_dir')} (exists={pc.get('exists')}, n_edi={pc.get('n_edi_files')})\n"
                f"  sort_by: {pc.get('sort_by')}  output_root: {pc.get('output_root')}\n"
                f"  default_workflows: {pc.get('default_workflows')}\n"
                f"  static_shift_defaults: {pc.get('static_shift')}"
            )
        if self.api_cards:
            blocks.append(
                "API cards (real signatures):\n"
                + "\n".join(_card_lines(self.api_cards))
            )
        used = sum(len(b) for b in blocks)
        for e in self.evidence:
            c = e.chunk
            body = (c.text or "").strip()
            if len(body) > EXCERPT_CHARS:
                body = body[:EXCERPT_CHARS].rstrip() + "\n…"
            block = f"[{e.n}] {label_of(c)} ({c.kind}; {e.where()})\n{body}"
            if used + len(block) > max_chars and e.n > 1:
                break
            blocks.append(block)
            used += len(block)
        return "\n\n".join(blocks)


def _card_lines(cards: list[dict[str, Any]]) -> list[str]:
    out = []
    for card in cards:
        out.append(f"- {card.get('symbol')}: {card.get('signature') or ''}".rstrip())
        if card.get("returns"):
            out.append(f"    returns {card['returns']}")
    return out


def _card_from_chunk(chunk: Chunk) -> dict[str, Any] | None:
    md = chunk.metadata
    if not md.get("signature") and not md.get("params"):
        return None
    doc = (md.get("docstring") or "").strip()
    summary = first_sentence(NUMPYDOC_SECTION.split("\n" + doc, 1)[0])[0] if doc else ""
    return {
        "symbol": chunk.symbol,
        "kind": chunk.kind,
        "signature": md.get("signature"),
        "params": md.get("params") or [],
        "returns": md.get("returns"),
        "summary": summary,
        "source_path": chunk.source_path,
        "line_start": chunk.line_start,
    }


def api_cards_for(
    ws: Workspace, evidence: list[Evidence], limit: int = 5
) -> list[dict[str, Any]]:
    """API cards of the retrieved code symbols (from the package model; the
    chunk's own metadata when the model has no card)."""
    cards: list[dict[str, Any]] = []
    seen: set[str] = set()
    for e in evidence:
        c = e.chunk
        if (
            not c.symbol
            or c.kind not in ("python_symbol", "python_method")
            or c.symbol in seen
        ):
            continue
        seen.add(c.symbol)
        found = None
        try:
            found = card_for(ws, c.symbol)
        except Exception as exc:  # noqa: BLE001 - a card never breaks an answer
            log.debug("card_for(%s) failed: %s", c.symbol, exc)
        card = (
            {"symbol": c.symbol, **found.to_dict()}
            if found is not None
            else _card_from_chunk(c)
        )
        if card:
            cards.append(card)
        if len(cards) >= limit:
            break
    return cards


_CALLED = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def related_symbols_for(
    ws: Workspace, evidence: list[Evidence], limit: int = 8
) -> list[str]:
    """What the lead code symbol calls (resolved in the package model), then
    the other retrieved code symbols; no tests, no private names."""
    out: list[str] = []
    code = [e.chunk for e in evidence if e.chunk.symbol and e.chunk.kind in CODE_KINDS]
    shown = {c.symbol for c in code[:1]}
    if code:
        top = code[0]
        body = (top.text or "").split("\nCode:", 1)
        calls = _CALLED.findall(body[1]) if len(body) == 2 else []
        try:
            module = module_name(top.source_path)
            model = ws.model
            for name in dict.fromkeys(calls):
                if name.startswith("_") or name in ("self", "cls", "super"):
                    continue
                res = model.resolve(f"{module}.{name}")
                if res.exists and res.kind in ("class", "function", "method"):
                    target = res.target or f"{module}.{name}"
                    if target not in shown and target not in out:
                        out.append(target)
        except Exception as exc:  # noqa: BLE001 - best-effort cross references
            log.debug("related symbols: %s", exc)
    for c in code[1:]:
        sym = c.symbol or ""
        leaf = sym.rsplit(".", 1)[-1]
        if sym in out or sym in shown or leaf.startswith("_") or is_test_symbol(sym):
            continue
        out.append(sym)
    return out[:limit]
