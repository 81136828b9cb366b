"""Catalog routing: questions about the corpus as a whole.

"What workflows does the package cover?", "what is in the index?" are
answered from the index catalog (counts by kind and workflow, recipes,
areas, papers, manifest), not from a retrieval subset, and the answer says
so.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.answer.prose import human
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.chunking.pdf import paper_index

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["catalog_answer", "is_catalog_question"]

log = logging.getLogger(__name__)

_CATALOG_PATTERNS = tuple(
    re.compile(p, re.I)
    for p in (
        r"\b(what|which)\b[^?]{0,40}\bworkflows\b[^?]{0,30}\b(cover(s|ed)?|support(s|ed)?|available|offer(s|ed)?|exist|are there|provide[sd]?|include[sd]?|handle[sd]?)\b",
        r"\bworkflows\b[^?]{0,30}\b(does|do|can)\b[^?]{0,20}\b(package|library|pycsamt|index|corpus)\b",
        r"^\s*(list|show|name)\b[^?]{0,15}\b(workflows|recipes|papers|kinds)\b",
        r"\bwhat('s| is| are)\b[^?]{0,15}\bin\b[^?]{0,10}\b(the |this |your )?(index|corpus|knowledge base)\b",
        r"\bwhat does (the |this |your )?(index|corpus|knowledge base|package) (contain|cover|include|hold|index)\b",
        r"\bhow many\b[^?]{0,30}\b(chunks|files|recipes|modules|workflows|symbols|papers|documents)\b",
        r"\b(overview|summary|table of contents)\b[^?]{0,30}\b(index|corpus|knowledge base|package)\b",
        r"\b(what|which) (recipes|papers)\b",
    )
)


def is_catalog_question(question: str) -> bool:
    """True for questions about the corpus as a whole, not about one topic."""
    return any(p.search(question or "") for p in _CATALOG_PATTERNS)


def _catalog(ws: Workspace, settings: AskSettings) -> dict[str, Any]:
    snap = ws.require_published().snapshot
    t = snap.table
    by_kind: dict[str, int] = {}
    by_wf: dict[str, int] = {}
    recipes: dict[str, dict[str, Any]] = {}
    areas: dict[str, set[str]] = {}
    for slot in snap.alive_slots():
        kind, wf, rel = t.kinds[slot], t.workflows[slot], t.paths[slot]
        by_kind[kind] = by_kind.get(kind, 0) + 1
        key = wf or "none"
        by_wf[key] = by_wf.get(key, 0) + 1
        if kind == "recipe":
            r = recipes.setdefault(rel, {"path": rel, "workflows": set(), "slot": slot})
            if wf:
                r["workflows"].add(wf)
            if int(t.line_start[slot]) < int(t.line_start[r["slot"]]):
                r["slot"] = slot
    for rel in snap.files:
        parts = rel.split("/")
        area = (
            "/".join(parts[:2])
            if len(parts) > 2
            else (parts[0] if len(parts) > 1 else ".")
        )
        areas.setdefault(area, set()).add(rel)
    recipe_list = []
    for rel in sorted(recipes):
        r = recipes[rel]
        chunk = t.get(r["slot"])
        title = (chunk.metadata.get("heading") or "").strip() or rel.rsplit("/", 1)[-1]
        recipe_list.append(
            {
                "path": rel,
                "title": title,
                "workflows": sorted(r["workflows"]),
                "uri": ws.uri_of(rel),
                "line_start": chunk.line_start,
                "line_end": chunk.line_end,
            }
        )
    papers = None
    if settings.papers:
        try:
            pidx = paper_index(ws, settings.papers_dir)
            if pidx is not None:
                papers = {
                    "files": sorted(pidx.files),
                    "n_chunks": len(pidx),
                    "dropped_pages": sum(len(v) for v in pidx.dropped.values()),
                }
        except Exception as exc:  # noqa: BLE001
            log.info("papers unavailable: %s", exc)
    manifest = ws.manifest
    return {
        "n_chunks": snap.n_chunks,
        "n_files": len(snap.files),
        "by_kind": dict(sorted(by_kind.items())),
        "by_workflow": dict(sorted(by_wf.items(), key=lambda kv: (-kv[1], kv[0]))),
        "workflows": list(ws.profile.workflow_names),
        "recipes": recipe_list,
        "areas": {
            a: len(fs)
            for a, fs in sorted(areas.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        },
        "papers": papers,
        "fingerprint": snap.fingerprint,
        "created": manifest.get("created"),
        "embedded": manifest.get("embedded", False),
        "embed_model": manifest.get("embed_model"),
        "profile": ws.profile.name,
    }


def catalog_answer(
    ws: Workspace, question: str, settings: AskSettings | None = None
) -> dict[str, Any]:
    """Answer a question about the whole corpus from the catalog."""
    settings = settings or ws.answers.settings
    cat = _catalog(ws, settings)
    citations = []
    recipe_of: dict[str, list[int]] = {}
    for n, r in enumerate(cat["recipes"], 1):
        citations.append(
            {
                "n": n,
                "id": None,
                "source_path": r["path"],
                "line_start": r["line_start"],
                "line_end": r["line_end"],
                "page": None,
                "label": r["title"],
                "kind": "recipe",
                "symbol": None,
                "workflow": (r["workflows"] or [None])[0],
                "score": None,
                "snippet": f"Recipe for {', '.join(r['workflows']) or 'general use'}.",
                "uri": r["uri"],
            }
        )
        for wf in r["workflows"]:
            recipe_of.setdefault(wf, []).append(n)
    lines = [
        f"_Answered from the index catalog (all {cat['n_chunks']} chunks from "
        f"{cat['n_files']} files, profile `{cat['profile']}`), not from a "
        "retrieval subset._",
        "",
        "**Workflows** (chunks tagged with each; recipes cited):",
    ]
    for wf in cat["workflows"]:
        cites = "".join(f"[{n}]" for n in recipe_of.get(wf, []))
        lines.append(
            f"- {human(wf)} (`{wf}`): {cat['by_workflow'].get(wf, 0)} chunks"
            + (f", recipe {cites}" if cites else "")
        )
    untagged = cat["by_workflow"].get("none", 0)
    if untagged:
        lines.append(f"- no workflow: {untagged} chunks")
    lines += [
        "",
        "**By kind:** " + ", ".join(f"{k} {v}" for k, v in cat["by_kind"].items()),
    ]
    if cat["recipes"]:
        lines += ["", "**Recipes:**"]
        lines += [f"- {r['title']} [{n}]" for n, r in enumerate(cat["recipes"], 1)]
    top_areas = list(cat["areas"].items())[:8]
    if top_areas:
        lines += [
            "",
            "**Largest areas (files):** "
            + ", ".join(f"`{a}` {n}" for a, n in top_areas),
        ]
    if cat["papers"]:
        p = cat["papers"]
        lines += [
            "",
            f"**Papers:** {len(p['files'])} PDF(s), {p['n_chunks']} prose chunks "
            f"({p['dropped_pages']} non-prose pages dropped).",
        ]
    idx = f"fingerprint `{cat['fingerprint'][:12]}`"
    if cat["created"]:
        idx += f", built {cat['created']}"
    idx += f", dense vectors: {cat['embed_model'] or 'none'}"
    lines += ["", f"**Index:** {idx}."]
    return {
        "question": question,
        "answer": "\n".join(lines),
        "confident": True,
        "clarifying_question": None,
        "citations": citations,
        "path": "catalog",
        "retrieval": "none",
        "project_context": None,
        "related_symbols": [],
        "api_cards": [],
        "catalog": cat,
        "top_score": None,
    }
