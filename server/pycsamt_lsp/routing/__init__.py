"""Request routing: intent, workflow, survey line and scope of a request.

The assistant's front door (issue 15): ``route(request, profile, registry)``
decides, offline and deterministically, whether a request is a question, a
code request, a plot, a workflow run, a metrics question, a meta question or
too ambiguous (``clarify``, with the question to ask), which of the profile's
workflows it is about, which survey line it names, and whether it is a
developer question for the live source search. Depends only on the profile
object, the standard library and PyYAML (for the package's line registries).
"""

from pycsamt_lsp.routing.classifier import WorkflowClassifier
from pycsamt_lsp.routing.registry import (
    LineRegistry,
    RegistryFileError,
    SurveyLine,
    discover_registry_files,
    load_line_registry,
)
from pycsamt_lsp.routing.router import INTENTS, SCOPES, RouteDecision, Router, route
from pycsamt_lsp.routing.score import load_records, score_routing

__all__ = [
    "INTENTS",
    "SCOPES",
    "LineRegistry",
    "RegistryFileError",
    "RouteDecision",
    "Router",
    "SurveyLine",
    "WorkflowClassifier",
    "discover_registry_files",
    "load_line_registry",
    "load_records",
    "route",
    "score_routing",
]
