"""Model-assisted routing: a valid structured decision is used, anything else falls back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.routing import Router, load_line_registry
from pycsamt_lsp.routing.model import model_route, routing_prompt

YAML = """\
lines:
  L18PLT: {edi_dir: data/L18PLT, default_workflows: [qc, static_shift]}
  L22PLT: {edi_dir: data/L22PLT}
"""


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(load_profile("pycsamt"))


@pytest.fixture()
def registry(tmp_path: Path):
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects" / "willy_project_registry.yml").write_text(YAML)
    return load_line_registry(tmp_path)


def answer(**fields):
    def complete(system: str, user: str) -> str:
        answer.seen = (system, user)
        return json.dumps(fields)

    return complete


def test_the_prompt_offers_only_profile_and_registry_values(router, registry) -> None:
    p = routing_prompt(router, registry)
    assert "static_shift" in p and "pre_inversion" in p and "L18PLT, L22PLT" in p
    assert "developer_tests" in p


def test_a_valid_model_decision_is_used(router, registry) -> None:
    d, src = model_route(
        "the curves jump around on line 18, sort it out",
        router,
        registry,
        answer(
            intent="workflow", workflow="static_shift", line="l18plt", confidence=0.9
        ),
    )
    assert src == "model" and answer.seen[1].startswith("the curves jump")
    assert (d.intent, d.workflow, d.line, d.rule) == (
        "workflow",
        "static_shift",
        "L18PLT",
        "model",
    )
    assert d.line_workflows == ("qc", "static_shift")


def test_a_model_clarify_without_a_question_gets_the_profile_question(
    router, registry
) -> None:
    d, src = model_route("hmm", router, registry, answer(intent="clarify"))
    assert src == "model" and d.clarify_question.startswith(
        "Which workflow should I run"
    )


@pytest.mark.parametrize(
    ("complete", "why"),
    [
        (answer(intent="workflow", workflow="magic_inversion"), "unknown workflow"),
        (answer(intent="workflow", line="L99XYZ"), "unknown survey line"),
        (answer(intent="dance"), "unknown intent"),
        (answer(intent="question", scope="everything"), "unknown scope"),
        (lambda s, u: "Sure! The intent is workflow.", "JSONDecodeError"),
        (lambda s, u: "[1, 2]", "not a JSON object"),
    ],
)
def test_an_invalid_model_answer_falls_back_to_offline(
    router, registry, complete, why
) -> None:
    d, src = model_route("remove the spikes on L22PLT", router, registry, complete)
    assert src.startswith("offline: ") and why in src
    assert d == router.route("remove the spikes on L22PLT", registry)


def test_a_failing_model_falls_back_to_offline(router, registry) -> None:
    def boom(system: str, user: str) -> str:
        raise TimeoutError("no answer in 5 s")

    d, src = model_route("remove the spikes on L22PLT", router, registry, boom)
    assert src == "offline: TimeoutError: no answer in 5 s"
    assert (d.intent, d.workflow, d.line) == ("workflow", "denoise", "L22PLT")


def test_no_model_means_offline(router, registry) -> None:
    d, src = model_route("process my data", router, registry, None)
    assert (src, d.intent) == ("offline", "clarify")
