"""The offline intent router: request -> intent, workflow, survey line, scope.

Deterministic and data-driven: every cue phrase comes from the profile
(``[intents]``, ``[workflows]``, ``[workflow_descriptors]``, ``[routing]``), so
another package routes its own requests by writing its own profile. The rules
run in a fixed order, first match wins:

1. empty or content-free request             -> ``clarify``
2. a greeting                                -> ``meta``
3. an implementation question (developer)    -> ``question``, scope ``developer``
   (``developer_tests`` when it asks for tests)
4. a capability / catalogue question         -> ``meta`` (never with a line or workflow)
5. a script / snippet / notebook request     -> ``code``
6. a value of a line (strike, station count) -> ``metrics``
7. a figure                                  -> ``plot`` (``clarify`` with no subject)
8. an imperative (or a polite request)       -> ``workflow`` (``clarify`` with no subject)
9. a question                                -> ``question``
10. a bare phrase: ``workflow`` when it names a workflow or a line, else ``question``

The workflow comes from :class:`~pycsamt_lsp.routing.classifier.WorkflowClassifier`
for every intent but meta and clarify; the line from the
:class:`~pycsamt_lsp.routing.registry.LineRegistry`, named anywhere in the request.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from pycsamt_lsp.routing.classifier import WorkflowClassifier
from pycsamt_lsp.routing.registry import LineRegistry
from pycsamt_lsp.routing.text import Cue, CueIndex, compile_cues, normalise

__all__ = ["INTENTS", "SCOPES", "RouteDecision", "Router", "route"]

INTENTS = ("question", "code", "plot", "workflow", "metrics", "meta", "clarify")
SCOPES = ("science", "developer", "developer_tests")

# Generic English function words: never a subject of a request on their own.
_STOP_WORDS = (
    "a an the of for on in at to my our your their this that these those "
    "with and or from by into onto over under along across is are was be "
    "been me i we you it its some any all each every up out off about as so "
    "then than just also can could would will should do does did have has "
    "had need needs want let us please"
)
_STOP = frozenset(_STOP_WORDS.split())
_CLAUSE = re.compile(r"[.?!;:,\n()\[\]]+|\s[-–—]\s")
_IDENT = re.compile(
    r"\b_?[a-z][a-z0-9]*_[a-z0-9_]+\b"  # snake_case, _private
    r"|\b_[a-z][a-z0-9]+\b"
    r"|\b[A-Z][a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b"  # CamelCase
    r"|\b\w+\.py\b|\b[a-z]\w*\.[a-z_]\w*\.\w+"  # file, dotted path
)
_PATHLIKE = re.compile(r"(?:^|\s)[~.]?/?\w[\w.\-]*/[\w./\-]+")
_FILLER_WORDS = (
    "line survey profile for on the and then also ok okay so now just first next"
)
_FILLER = frozenset(_FILLER_WORDS.split())


@dataclass(frozen=True)
class RouteDecision:
    """Where a request goes, and why.

    ``line_workflows`` are the registry's default workflows of ``line`` (the
    plan when a request names a line but no workflow); ``workflows`` every
    workflow the request mentions, in its order (a multi-step plan; ``workflow``
    is the best-supported one); ``unknown_line`` is a
    word shaped like a registry line that the registry does not know.
    """

    intent: str
    workflow: str | None
    line: str | None
    confidence: float
    clarify_question: str | None = None
    scope: str = "science"
    line_workflows: tuple[str, ...] = ()
    workflows: tuple[str, ...] = ()
    unknown_line: str | None = None
    rule: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (tuples as lists)."""
        d = asdict(self)
        d["line_workflows"] = list(self.line_workflows)
        d["workflows"] = list(self.workflows)
        return d


class _Cues:
    """The profile's ``[intents]`` lists, compiled once per profile."""

    def __init__(self, profile: Any, *, descriptors: bool = True) -> None:
        raw = dict(getattr(profile, "intents", ()) or ())
        self.classifier = WorkflowClassifier.from_profile(
            profile, descriptors=descriptors
        )
        items: list[tuple[Cue, Any]] = [
            (c, k) for k, v in raw.items() for c in compile_cues(v)
        ]
        self.index = CueIndex(items + self.classifier.items())
        self.greetings = frozenset(
            " ".join(normalise(g).split()) for g in raw.get("greeting", ())
        )
        self.vague = frozenset(
            w for p in raw.get("vague", ()) for w in normalise(p).split()
        )
        # action cues match at a word start ("analys" -> "analyse"), so a word
        # is an action word when it begins with one (whole-word cues: equals)
        self.action_words = frozenset(
            w
            for p in raw.get("action", ())
            if p.endswith(" ")
            for w in normalise(p).split()
        )
        self.action_prefixes = tuple(
            w
            for p in raw.get("action", ())
            if not p.endswith(" ")
            for w in normalise(p).split()
        )
        self.template = getattr(profile, "clarify_question", "") or (
            "Which workflow should I run ({workflows}), and on which survey line ({lines})?"
        )
        self.workflow_names = [wf for wf, _ in self.classifier.table]

    def starts(self, name: str, norm: str) -> Cue | None:
        return self.index.at_start(norm, name)


class Router:
    """Routes requests with one profile's cues (compiled once) and a registry."""

    def __init__(self, profile: Any, *, descriptors: bool = True) -> None:
        self.profile = profile
        self.cues = _Cues(profile, descriptors=descriptors)

    # -- pieces ----------------------------------------------------------------

    def _clauses(self, text: str, registry: LineRegistry | None) -> list[str]:
        """Normalised clauses with leading fillers and line names removed."""
        out = []
        for part in _CLAUSE.split(text):
            # an identifier is not a verb: "estimate_ss_ama parameters" asks
            # about estimate_ss_ama, it does not ask to estimate anything
            words = [w for w in part.split() if not _IDENT.fullmatch(w.strip("`'\"*"))]
            words = normalise(" ".join(words)).split()
            while words and (
                words[0] in _FILLER
                or (registry is not None and registry.canonical(words[0]) is not None)
            ):
                words.pop(0)
            if words:
                out.append(" " + " ".join(words) + " ")
        return out

    def _strip_polite(self, clause: str) -> tuple[str, bool]:
        polite = False
        while True:
            cue = self.cues.starts("polite", clause)
            if cue is None:
                return clause, polite
            polite = True
            clause = " " + clause[len(cue.parts[0]) :].lstrip()
            if clause.strip() == "":
                return clause, polite

    def _has_content(self, norm: str, registry: LineRegistry | None) -> bool:
        """True when *norm* has a word that is no stop word, vague word, verb or line."""
        k = self.cues
        for w in norm.split():
            if w in _STOP or w in k.vague or w in k.action_words:
                continue
            if k.action_prefixes and w.startswith(k.action_prefixes):
                continue
            if registry is not None and registry.canonical(w) is not None:
                continue
            return True
        return False

    def _developer(self, text: str, norm: str, hits: dict) -> str | None:
        if self.cues.starts("developer_blockers", norm):
            return None
        strong = "developer_strong" in hits
        weak = "developer_weak" in hits
        if not (strong or (weak and (" code " in norm or _IDENT.search(text)))):
            return None
        return "developer_tests" if "developer_tests" in hits else "developer"

    def clarify_text(self, registry: LineRegistry | None) -> str:
        """The clarifying question, listing the profile's workflows and known lines."""
        lines = (
            ", ".join(registry.names())
            if registry and registry.lines
            else "none registered"
        )
        wfs = ", ".join(w for w in self.cues.workflow_names if w != "code_gen")
        try:
            return self.cues.template.format(workflows=wfs, lines=lines)
        except (KeyError, IndexError, ValueError):
            return self.cues.template

    # -- the decision ----------------------------------------------------------

    def route(
        self, request: str, registry: LineRegistry | None = None
    ) -> RouteDecision:
        """Route one request (see the module doc for the rules)."""
        text = (request or "").strip()
        norm = normalise(text)
        k = self.cues
        line, unknown = (
            registry.find_line(text) if registry is not None else (None, None)
        )
        line_wfs: tuple[str, ...] = ()
        if line and registry is not None:
            sl = registry.lines.get(line)
            line_wfs = sl.default_workflows if sl else ()
        mentioned: tuple[str, ...] = ()

        def done(
            intent: str,
            conf: float,
            rule: str,
            *,
            wf: str | None = None,
            scope: str = "science",
            ask: str | None = None,
        ) -> RouteDecision:
            if intent == "clarify" and ask is None:
                ask = self.clarify_text(registry)
            if (
                ask is None
                and unknown
                and not line
                and intent in ("workflow", "plot", "metrics", "code")
            ):
                known = ", ".join(registry.names()) if registry else ""
                ask = f"{unknown} is not a survey line in the registry (known: {known}). Which line did you mean?"
            return RouteDecision(
                intent=intent,
                workflow=wf if intent not in ("meta", "clarify") else None,
                line=line,
                confidence=round(conf, 3),
                clarify_question=ask,
                scope=scope,
                line_workflows=line_wfs if intent != "clarify" else (),
                workflows=mentioned if intent not in ("meta", "clarify") else (),
                unknown_line=unknown,
                rule=rule,
            )

        if not norm.strip():
            return done("clarify", 0.5, "empty")
        words = norm.split()
        if " ".join(words) in k.greetings:
            return done("meta", 0.95, "greeting")
        for n in (3, 2, 1):  # "thanks a lot", "hi there": a greeting and nothing else
            if (
                len(words) > n
                and " ".join(words[:n]) in k.greetings
                and line is None
                and not self._has_content(" " + " ".join(words[n:]) + " ", registry)
            ):
                return done("meta", 0.9, "greeting")

        hits = k.index.scan(norm)
        scope = self._developer(text, norm, hits)
        wf, margin = k.classifier.classify(norm, normalised=True, hits=hits)
        mentioned = k.classifier.mentioned(norm, hits) if wf else ()
        if scope:
            return done("question", 0.9, "developer", wf=wf, scope=scope)

        is_meta = "meta" in hits or ("catalogue" in hits and "listing" in hits)
        if is_meta and not line and wf is None:
            return done("meta", 0.9, "meta")
        if "code" in hits:
            return done("code", 0.85, "code", wf=wf)

        clauses = self._clauses(text, registry)
        actionable = polite_req = False
        questionlike = False
        for i, cl in enumerate(clauses):
            rest, polite = self._strip_polite(cl)
            is_q = k.starts("question", rest) is not None
            if i == 0 and is_q and not polite:
                questionlike = True
            if polite and not is_q and rest.strip():
                polite_req = actionable = True
            elif k.starts("action", rest):
                actionable = True
        if text.endswith("?") and not polite_req and not actionable:
            questionlike = True
        has_path = bool(_PATHLIKE.search(text))
        subject = wf is not None or line is not None or has_path or bool(unknown)
        is_plot = "plot" in hits

        if (
            "metrics" in hits
            and (line or unknown or "metric_scope" in hits)
            and not is_plot
            and not actionable
        ):
            return done("metrics", 0.8, "metrics", wf=wf)
        if is_plot and (not questionlike or polite_req or actionable):
            if subject or self._has_content(norm, registry):
                return done("plot", 0.75, "plot", wf=wf)
            return done("clarify", 0.7, "plot without a subject")
        if actionable:
            # a workflow plan needs a workflow or a line (whose defaults it runs)
            if subject:
                conf = 0.8 + min(margin, 2.0) * 0.05
                return done("workflow", conf, "action", wf=wf)
            return done("clarify", 0.7, "action without a workflow or line")
        if questionlike or "api_doc" in hits:
            return done("question", 0.8, "question", wf=wf)
        if subject:
            return done("workflow", 0.6, "phrase with a workflow or line", wf=wf)
        if not self._has_content(norm, registry):
            return done("clarify", 0.6, "no subject")
        return done("question", 0.4, "fallback", wf=wf)


def route(
    request: str, profile: Any, registry: LineRegistry | None = None
) -> RouteDecision:
    """Route *request* with *profile*'s cues and *registry*'s survey lines.

    A one-off call: it compiles the profile's cues (a few milliseconds) each
    time. A caller that routes every request keeps a :class:`Router` instead
    (the workspace's :class:`~pycsamt_lsp.answer.service.AnswerService` does),
    so no compiled router outlives its owner or is shared between workspaces.
    """
    return Router(profile).route(request, registry)
