"""Optional model-assisted routing with the offline router as the fallback.

With a language model configured, the caller may ask it for a structured
decision. This module builds the prompt from the profile (its intents,
workflows and the registry's lines), validates the model's JSON strictly and
returns the offline decision on any error: a transport failure, a timeout,
malformed JSON, or a value outside the profile (an invented workflow, a line
the registry does not have). The offline figure is the one measured.

The model is any ``complete(system, user) -> str`` callable, so this module
imports no client library (the caller adapts OpenAI or a test double).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pycsamt_lsp.routing.registry import LineRegistry
from pycsamt_lsp.routing.router import INTENTS, SCOPES, RouteDecision, Router

__all__ = ["Complete", "model_route", "routing_prompt"]

log = logging.getLogger(__name__)

Complete = Callable[[str, str], str]


def routing_prompt(router: Router, registry: LineRegistry | None) -> str:
    """The system prompt: the allowed values, all taken from profile and registry."""
    wfs = ", ".join(router.cues.workflow_names)
    lines = ", ".join(registry.names()) if registry and registry.lines else "(none)"
    return (
        "You route requests to a scientific-software assistant. Answer with ONE JSON "
        'object: {"intent": one of [' + ", ".join(INTENTS) + "], "
        '"workflow": one of [' + wfs + "] or null, "
        '"line": one of [' + lines + "] or null, "
        '"scope": one of [' + ", ".join(SCOPES) + "], "
        '"confidence": 0..1, "clarify_question": a question or null}. '
        "workflow = run processing on data; code = a script; plot = a figure; metrics = "
        "a computed value of a survey line; meta = about the assistant; clarify = too "
        "ambiguous to act on (then ask one question); developer scope = where or how "
        "the package is implemented (developer_tests only when tests are asked for)."
    )


def _validated(
    raw: str, router: Router, registry: LineRegistry | None
) -> dict[str, Any]:
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    intent = data.get("intent")
    if intent not in INTENTS:
        raise ValueError(f"unknown intent {intent!r}")
    wf = data.get("workflow")
    if wf is not None and wf not in router.cues.workflow_names:
        raise ValueError(f"unknown workflow {wf!r}")
    line = data.get("line")
    if line is not None:
        canon = registry.canonical(str(line)) if registry is not None else None
        if canon is None:
            raise ValueError(f"unknown survey line {line!r}")
        line = canon
    scope = data.get("scope") or "science"
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")
    conf = float(data.get("confidence", 0.7))
    ask = data.get("clarify_question")
    if ask is not None and not isinstance(ask, str):
        raise ValueError("clarify_question must be a string or null")
    return {
        "intent": intent,
        "workflow": wf,
        "line": line,
        "scope": scope,
        "confidence": min(max(conf, 0.0), 1.0),
        "clarify_question": ask,
    }


def model_route(
    request: str,
    router: Router,
    registry: LineRegistry | None,
    complete: Complete | None,
) -> tuple[RouteDecision, str]:
    """``(decision, source)``: the model's decision when valid, else the offline one.

    ``source`` is ``"model"`` or ``"offline"`` (and why, e.g.
    ``"offline: unknown workflow 'x'"``). The offline decision is always
    computed first: it supplies the line defaults and is the fallback.
    """
    offline = router.route(request, registry)
    if complete is None:
        return offline, "offline"
    try:
        raw = complete(routing_prompt(router, registry), request)
        got = _validated(raw, router, registry)
    except Exception as exc:  # noqa: BLE001 - any model failure falls back
        reason = f"{type(exc).__name__}: {exc}"[:200]
        log.info("model routing fell back to offline: %s", reason)
        return offline, f"offline: {reason}"
    if got["intent"] == "clarify" and not got["clarify_question"]:
        got["clarify_question"] = router.clarify_text(registry)
    line_wfs: tuple[str, ...] = ()
    if got["line"] and registry is not None:
        sl = registry.get(got["line"])
        line_wfs = sl.default_workflows if sl else ()
    return (
        replace(offline, **got, line_workflows=line_wfs, rule="model"),
        "model",
    )
