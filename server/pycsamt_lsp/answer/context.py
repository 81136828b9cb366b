"""Answering one question (``pycsamt.ask``): assembled context, the gate, the answer.

One question goes through these steps:

1. **Catalog routing** (:mod:`.catalog`). A question about the corpus as a
   whole is answered from the index catalog, not from a retrieval subset.
2. **Assembled context** (:func:`assemble`, :mod:`.evidence`). Ranked
   chunks (BM25, or BM25 fused with dense vectors when asked for), plus the
   best prose chunks of the papers side index, become numbered evidence
   with citations (path, line span or page, label, score, a snippet of at
   most 280 characters, ``file://`` URI); project context from the
   survey-line registry (:mod:`.registry`); related symbols; API cards of
   the retrieved code.
3. **Confidence gate.** ``confident <=> project context resolved or
   s_max >= 25.0`` (``s_max`` the top BM25 score of the main index).
   Below it the result carries a clarifying question built from what was
   retrieved and a list of the closest matches (:mod:`.offline`).
4. **Answer.** Without an OpenAI key: a deterministic answer composed from
   the top chunks with numbered citations ``[n]`` (:mod:`.offline`). With a
   key (setting or ``OPENAI_API_KEY``): the model (:mod:`.openai_client`),
   its Python code checked by the import validator (:mod:`.codeblocks`).
   Timeouts and API errors fall back to the offline answer with the reason
   shown. The key is never logged, echoed or put in a result.

Settings and registries are the workspace's own (``ws.answers``,
:class:`~pycsamt_lsp.answer.service.AnswerService`); :func:`configure` and
:func:`settings_for` are the entry points the server and the CLI use.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.answer.catalog import catalog_answer, is_catalog_question
from pycsamt_lsp.answer.codeblocks import validate_answer_code, validation_note
from pycsamt_lsp.answer.evidence import (
    CONFIDENCE_FLOOR,
    AssembledContext,
    Evidence,
    api_cards_for,
    related_symbols_for,
)
from pycsamt_lsp.answer.offline import (
    clarifying_question,
    low_confidence_answer,
    offline_answer,
)
from pycsamt_lsp.answer.openai_client import openai_answer, scrub
from pycsamt_lsp.answer.registry import ProjectRegistry
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.chunking.pdf import paper_index
from pycsamt_lsp.errors import AnswerError
from pycsamt_lsp.search.dense.fusion import dense_query

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "answer_question",
    "assemble",
    "configure",
    "load_registry",
    "settings_for",
]

log = logging.getLogger(__name__)


def configure(ws: Workspace, **changes: Any) -> AskSettings:
    """Update the ask settings of a workspace (the server calls this on config changes).

    ``configure(ws, model="gpt-4o-mini", dense=True, workspace_root="/proj")``;
    unknown names raise ``TypeError``.
    """
    return ws.answers.configure(**changes)


def settings_for(ws: Workspace) -> AskSettings:
    """The ask settings of a workspace (defaults when never configured)."""
    return ws.answers.settings


def load_registry(
    ws: Workspace, settings: AskSettings | None = None
) -> ProjectRegistry | None:
    """The project registry, or None (missing or malformed: a logged warning)."""
    return ws.answers.registry(ws.root, settings)


def _merge(
    main: list[tuple[float, Chunk, float, str]],
    papers: list[tuple[float, Chunk, float, str]],
    k: int,
) -> list[tuple[Chunk, float, str]]:
    """Stable merge: main order kept, a paper chunk goes before the first
    main item it outscores (BM25 units on both sides)."""
    out: list[tuple[Chunk, float, str]] = []
    i = j = 0
    while len(out) < k and (i < len(main) or j < len(papers)):
        if j < len(papers) and (i >= len(main) or papers[j][0] > main[i][0]):
            out.append(papers[j][1:])
            j += 1
        else:
            out.append(main[i][1:])
            i += 1
    return out


def assemble(
    ws: Workspace,
    question: str,
    *,
    k: int = 6,
    dense: bool | None = None,
    settings: AskSettings | None = None,
) -> AssembledContext:
    """Retrieve, number and decorate the evidence for *question*."""
    settings = settings or ws.answers.settings
    use_dense = settings.dense if dense is None else dense
    retrieval, dense_error = "bm25", None
    if use_dense:
        res = dense_query(
            ws,
            question,
            k,
            api_key=settings.key(),
            base_url=settings.url(),
            timeout=settings.timeout,
        )
        retrieval = res.get("retrieval", "bm25")
        dense_error = res.get("dense_error")
    else:
        res = ws.query(question, k)
    main: list[tuple[float, Chunk, float, str]] = []
    for r in res["results"]:
        chunk = ws.chunk(r["id"])
        if chunk is None:
            continue
        merge_key = r.get("bm25_score") if retrieval != "bm25" else r["score"]
        main.append((float(merge_key or 0.0), chunk, float(r["score"]), r["uri"]))
    papers: list[tuple[float, Chunk, float, str]] = []
    if settings.papers:
        try:
            pidx = paper_index(ws, settings.papers_dir)
            if pidx is not None:
                for chunk, score in pidx.search(question, k, ws.profile):
                    s = score * (1.0 + 0.12 * (chunk.priority - 1))
                    papers.append((s, chunk, s, ws.uri_of(chunk.source_path)))
        except Exception as exc:  # noqa: BLE001 - papers are optional evidence
            log.info("papers unavailable: %s", exc)
    evidence = [
        Evidence(n, chunk, score, uri)
        for n, (chunk, score, uri) in enumerate(_merge(main, papers, k), 1)
    ]
    ctx = AssembledContext(
        question=question,
        evidence=evidence,
        top_score=float(res.get("top_score") or 0.0),
        workflow=res.get("workflow"),
        retrieval=retrieval,
        dense_error=dense_error,
        package=ws.profile.package,
    )
    registry = load_registry(ws, settings)
    if registry is not None:
        ctx.registry_lines = registry.names()
        line, _unknown = registry.find_line(question)
        if line:
            try:
                ctx.project_context = registry.resolve(line)
            except KeyError:
                ctx.project_context = None
    ctx.api_cards = api_cards_for(ws, evidence)
    ctx.related_symbols = related_symbols_for(ws, evidence)
    return ctx


# -- the whole question -------------------------------------------------------------


def answer_question(
    ws: Workspace,
    question: str,
    *,
    k: int = 6,
    dense: bool | None = None,
    settings: AskSettings | None = None,
) -> dict[str, Any]:
    """The ``pycsamt.ask`` result for *question* (see the module docstring)."""
    settings = settings or ws.answers.settings
    ws.require_published()  # QueryError when nothing is built yet
    if is_catalog_question(question):
        return catalog_answer(ws, question, settings)
    ctx = assemble(ws, question, k=k, dense=dense, settings=settings)
    result: dict[str, Any] = {
        "question": question,
        "answer": "",
        "confident": ctx.confident,
        "clarifying_question": None,
        "citations": ctx.citations,
        "path": "offline",
        "retrieval": ctx.retrieval,
        "project_context": ctx.project_context,
        "related_symbols": ctx.related_symbols,
        "api_cards": ctx.api_cards,
        "top_score": round(ctx.top_score, 4),
        "confidence_floor": CONFIDENCE_FLOOR,
        "workflow": ctx.workflow,
    }
    if ctx.dense_error:
        result["dense_error"] = ctx.dense_error
    if not ctx.confident:
        result["clarifying_question"] = clarifying_question(
            ctx, tuple(ws.profile.workflow_names)
        )
        result["answer"] = low_confidence_answer(ctx)
        return result
    key = settings.key()
    if key and settings.use_openai:
        try:
            text = openai_answer(ctx, settings)
        except AnswerError as exc:
            reason = scrub(str(exc), key)
            log.warning("OpenAI answer unavailable, answering offline: %s", reason)
            result["fallback_reason"] = reason
            result["answer"] = (
                f"> OpenAI answer unavailable ({reason}); offline answer below.\n\n"
                + offline_answer(ctx)
            )
            return result
        result["path"] = "openai"
        result["model"] = settings.model
        validation = validate_answer_code(ws, text)
        if validation is not None:
            result["validation"] = validation
            if (
                validation["errors"]
                or validation["warnings"]
                or not validation["syntax_ok"]
            ):
                text += "\n\n" + validation_note(validation)
        result["answer"] = text
        return result
    result["answer"] = offline_answer(ctx)
    return result
