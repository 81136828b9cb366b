"""``pycsamt.ask`` with routing first (issue 15).

The flow: ``request -> route -> retrieval -> registry -> cited context ->
answer, code or plan -> validation``.

1. **Route** (:mod:`pycsamt_lsp.routing`): intent, workflow, survey line,
   scope and, when the request is too ambiguous, the one clarifying
   question. Offline and deterministic; with ``model_routing`` on and an
   OpenAI key, the model's structured decision is used when it validates
   against the profile and registry, the offline one otherwise.
2. **Answer what the intent needs** (:mod:`.plans`):

   - ``clarify``: the router's question (nothing is guessed);
   - ``meta``: capabilities from the profile, index and registry;
   - developer scope: the live source search (paths, lines, file hashes);
   - ``workflow`` / ``plot``: the plan, with cited context;
   - ``code``: a script from API cards, validated before it is shown;
   - ``question`` / ``metrics``: the science answer of
     :func:`pycsamt_lsp.answer.context.answer_question` (same corpus, same
     ranking).

   Plans and scripts pass the same confidence gate as answers: below it the
   result asks the gate's clarifying question instead.

Every result carries ``route``: ``{intent, workflow, workflows, line,
confidence, scope, clarify_question, rule, source}``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.answer.catalog import catalog_answer, is_catalog_question
from pycsamt_lsp.answer.context import answer_question, assemble
from pycsamt_lsp.answer.evidence import CONFIDENCE_FLOOR
from pycsamt_lsp.answer.offline import clarifying_question, low_confidence_answer
from pycsamt_lsp.answer.openai_client import scrub
from pycsamt_lsp.answer.plans import (
    capabilities,
    capabilities_markdown,
    code_script,
    developer_answer,
    plan_markdown,
    workflow_plan,
)
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.errors import PycsamtError
from pycsamt_lsp.routing import LineRegistry, RouteDecision
from pycsamt_lsp.routing.model import model_route

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["decide", "route_summary", "routed_answer"]

log = logging.getLogger(__name__)


def _openai_complete(settings: AskSettings):
    """``complete(system, user) -> str`` over the ``openai`` client, or None."""
    key = settings.key()
    if not key:
        return None
    try:
        import openai
    except ImportError:
        return None

    def complete(system: str, user: str) -> str:
        client = openai.OpenAI(
            api_key=key,
            base_url=settings.url(),
            timeout=settings.timeout,
            max_retries=0,
        )
        try:
            resp = client.chat.completions.create(
                model=settings.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                temperature=0,
                response_format={"type": "json_object"},
            )
            return (resp.choices[0].message.content or "") if resp.choices else ""
        except Exception as exc:  # noqa: BLE001 - the reason, without the key
            raise RuntimeError(scrub(f"{type(exc).__name__}: {exc}", key)) from None
        finally:
            client.close()

    return complete


def decide(
    ws: Workspace,
    question: str,
    registry: LineRegistry | None,
    settings: AskSettings,
) -> tuple[RouteDecision, str]:
    """``(decision, source)``; source ``"offline"``, ``"model"`` or ``"offline: why"``."""
    router = ws.answers.router(ws.profile)
    use_model = (
        getattr(settings, "model_routing", False)
        and settings.use_openai
        and settings.key()
    )
    if not use_model:
        return router.route(question, registry), "offline"
    return model_route(question, router, registry, _openai_complete(settings))


def route_summary(decision: RouteDecision, source: str) -> dict[str, Any]:
    """The ``route`` object of an ask result."""
    return {
        "intent": decision.intent,
        "workflow": decision.workflow,
        "workflows": list(decision.workflows),
        "line": decision.line,
        "confidence": decision.confidence,
        "scope": decision.scope,
        "clarify_question": decision.clarify_question,
        "unknown_line": decision.unknown_line,
        "line_workflows": list(decision.line_workflows),
        "rule": decision.rule,
        "source": source,
    }


def _base(question: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "question": question,
        "answer": "",
        "confident": True,
        "clarifying_question": None,
        "citations": [],
        "path": "offline",
        "retrieval": "none",
        "project_context": None,
        "related_symbols": [],
        "api_cards": [],
        "top_score": None,
    }
    out.update(extra)
    return out


def _gated(
    ws: Workspace, question: str, k: int, dense: bool | None, settings: AskSettings
) -> tuple[Any, dict[str, Any] | None]:
    """Assembled context, and the low-confidence result when below the gate."""
    ctx = assemble(ws, question, k=k, dense=dense, settings=settings)
    if ctx.confident:
        return ctx, None
    res = _base(
        question,
        confident=False,
        citations=ctx.citations,
        retrieval=ctx.retrieval,
        project_context=ctx.project_context,
        top_score=round(ctx.top_score, 4),
        confidence_floor=CONFIDENCE_FLOOR,
        workflow=ctx.workflow,
        clarifying_question=clarifying_question(ctx, tuple(ws.profile.workflow_names)),
        answer=low_confidence_answer(ctx),
    )
    return ctx, res


def _with_context(res: dict[str, Any], ctx: Any) -> dict[str, Any]:
    res.update(
        citations=ctx.citations,
        retrieval=ctx.retrieval,
        project_context=ctx.project_context,
        related_symbols=ctx.related_symbols,
        api_cards=ctx.api_cards,
        top_score=round(ctx.top_score, 4),
        confidence_floor=CONFIDENCE_FLOOR,
        workflow=ctx.workflow,
    )
    if ctx.dense_error:
        res["dense_error"] = ctx.dense_error
    return res


def _cite_list(citations: list[dict[str, Any]], top: int = 4) -> str:
    return "\n".join(
        f"[{c['n']}] {c.get('label')} — {c.get('source_path')}" for c in citations[:top]
    )


def routed_answer(
    ws: Workspace,
    question: str,
    *,
    k: int = 6,
    dense: bool | None = None,
    settings: AskSettings | None = None,
) -> dict[str, Any]:
    """The ``pycsamt.ask`` result for *question*: routed, then answered (module doc)."""
    settings = settings or ws.answers.settings
    ws.require_published()  # QueryError when nothing is built yet
    registry = ws.answers.registry(ws.root, settings)
    decision, source = decide(ws, question, registry, settings)
    route = route_summary(decision, source)
    try:
        res = _dispatch(ws, question, decision, registry, k, dense, settings)
    except PycsamtError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plan bug must not lose the answer
        log.warning("routed answer failed (%s), answering the question: %s", route, exc)
        res = answer_question(ws, question, k=k, dense=dense, settings=settings)
        res["route_error"] = f"{type(exc).__name__}: {exc}"[:300]
    res["route"] = route
    return res


def _dispatch(
    ws: Workspace,
    question: str,
    decision: RouteDecision,
    registry: LineRegistry | None,
    k: int,
    dense: bool | None,
    settings: AskSettings,
) -> dict[str, Any]:
    """The answer the routed intent needs (see the module doc)."""
    intent = decision.intent
    if intent == "clarify":
        ask = decision.clarify_question or ""
        res = _base(
            question, confident=False, clarifying_question=ask, answer=ask, path="route"
        )
    elif decision.scope in ("developer", "developer_tests"):
        dev = developer_answer(ws, question, decision.scope)
        res = _base(
            question,
            answer=dev["answer"],
            citations=dev["citations"],
            path="devsearch",
            retrieval="devsearch",
            developer_search=dev["search"],
            confident=bool(dev["citations"]),
        )
    elif intent == "meta":
        if is_catalog_question(question):
            res = catalog_answer(ws, question, settings)
        else:
            cap = capabilities(ws, registry)
            res = _base(
                question,
                answer=capabilities_markdown(cap),
                capabilities=cap,
                path="capabilities",
            )
    elif intent in ("workflow", "plot"):
        ctx, low = _gated(ws, question, k, dense, settings)
        if low is not None:
            res = low
        else:
            plan = workflow_plan(ws, decision, registry, plot=intent == "plot")
            res = _with_context(_base(question, plan=plan, path="plan"), ctx)
            res["answer"] = plan_markdown(plan, decision)
            if ctx.citations:
                res["answer"] += "\n\nSources:\n" + _cite_list(ctx.citations)
    elif intent == "code" and not (settings.key() and settings.use_openai):
        ctx, low = _gated(ws, question, k, dense, settings)
        if low is not None:
            res = low
        else:
            res = _with_context(_base(question, path="script"), ctx)
            res["answer"] = _code_text(ws, question, ctx, decision, registry, res)
    else:  # question, metrics, and code written by the model (validated there)
        res = answer_question(ws, question, k=k, dense=dense, settings=settings)
    return res


def _code_text(
    ws: Workspace,
    question: str,
    ctx: Any,
    decision: RouteDecision,
    registry: LineRegistry | None,
    res: dict[str, Any],
) -> str:
    built = code_script(ws, question, ctx.api_cards, decision, registry)
    if not built["script"]:
        return (
            "> Limitation: no class or function of the package was retrieved for this "
            "request, so no script is written (no API is guessed).\n\nClosest sources:\n"
            + _cite_list(ctx.citations)
        )
    v = built["validation"]
    res["validation"] = v
    res["script"] = built["script"]
    out = [
        "Script built from the API cards of "
        + ", ".join(f"`{c['qualname']}`" for c in built["cards"])
        + (f" for line {decision.line}" if decision.line else "")
        + ":",
        "",
        "```python",
        built["script"].rstrip(),
        "```",
        "",
    ]
    if built["dropped"]:
        out.append(
            "> Removed after the import check: "
            + ", ".join(f"`{d}`" for d in built["dropped"])
        )
    if v["ok"] and not v["warnings"]:
        out.append(f"> Import check: ok ({len(v['checked'])} name(s) verified).")
    else:
        out.append("> **Import check of the script:**")
        out += [f"> - error: {e}" for e in v["errors"]]
        out += [f"> - warning: {w}" for w in v["warnings"]]
        if not v["syntax_ok"]:
            out.append("> - the script is not valid Python")
    sigs = [c for c in built["cards"] if c.get("signature")]
    if sigs:
        out += ["", "Signatures:"]
        out += [f"- `{c['signature']}` ({c['path']}:{c['line']})" for c in sigs]
    if ctx.citations:
        out += ["", "Sources:", _cite_list(ctx.citations)]
    return "\n".join(out)
