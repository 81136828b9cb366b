"""The offline request router (issue 15): intents, workflows, survey lines, scope.

Unit tests run on fixture registries written here (both formats the router
reads); the quality gate scores the TUNING split (suites/routing_tuning.jsonl)
and shows that the gate fails when the workflow descriptors are switched off.
The frozen test split is only checked for shape here, never scored against a
threshold: its figures are measured and reported (python -m pycsamt_lsp.routing).
"""

from __future__ import annotations

import difflib
import json
import logging
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pycsamt_lsp.answer.registry import RegistryCache
from pycsamt_lsp.corpus.profile import load_profile, profile_from_dict
from pycsamt_lsp.routing import (
    INTENTS,
    SCOPES,
    LineRegistry,
    Router,
    discover_registry_files,
    load_line_registry,
    load_records,
    route,
    score_routing,
)

REPO = Path(__file__).resolve().parents[1]
SUITES = REPO / "suites"
TUNING = SUITES / "routing_tuning.jsonl"
TEST = SUITES / "routing_test.jsonl"

# The package's own registry format (projects/*_project_registry.yml), with the
# line names of the maintainer checkout's WILLY_DATA survey the splits use.
WILLY_YAML = """\
project:
  name: WILLY_DATA
  type: AMT
  default_output_root: results/willy
lines:
  L18PLT: {edi_dir: data/L18PLT, station_pattern: "18-*", sort_by: lon,
           default_workflows: [load, qc, static_shift, phase_analysis]}
  L22PLT: {edi_dir: data/L22PLT, station_pattern: "22-*", sort_by: lon,
           default_workflows: [load, qc, static_shift, phase_analysis, pre_inversion]}
  L26PLT: {edi_dir: data/L26PLT, default_workflows: [qc]}
  L30PLT: {edi_dir: data/L30PLT, default_workflows: [qc]}
  L34PLT: {edi_dir: data/L34PLT, default_workflows: [qc]}
aliases:
  willy18: L18PLT
  willy22: L22PLT
"""

# The workspace format (.pycsamt/projects.toml, answer/context.py's ProjectRegistry).
WORKSPACE_TOML = """\
[project]
name = "Hill survey"
default_output_root = "out"

[lines.P07]
edi_dir = "edi/P07"
default_workflows = ["qc", "denoise"]

[lines.NORTH2]
edi_dir = "edi/north2"

[aliases]
"north line" = "NORTH2"
"""

TEMPLATE_YAML = """\
project: {name: MY_SURVEY}
lines:
  LINE_A: {edi_dir: /abs/LINE_A}
aliases:
  a: LINE_A
"""


@pytest.fixture(scope="module")
def profile():
    return load_profile("pycsamt")


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "projects").mkdir(parents=True)
    (root / "projects" / "willy_project_registry.yml").write_text(WILLY_YAML)
    (root / "projects" / "example_project_registry.yml").write_text(TEMPLATE_YAML)
    return root


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".pycsamt").mkdir(parents=True)
    (root / ".pycsamt" / "projects.toml").write_text(WORKSPACE_TOML)
    return root


@pytest.fixture()
def registry(checkout: Path) -> LineRegistry:
    reg = load_line_registry(checkout)
    assert reg.warnings == []
    return reg


# -- registries ---------------------------------------------------------------


def test_yaml_registry_reads_lines_defaults_and_aliases(registry: LineRegistry) -> None:
    assert registry.names() == ["L18PLT", "L22PLT", "L26PLT", "L30PLT", "L34PLT"]
    line = registry.get("line l22plt")
    assert line is not None
    assert line.default_workflows[-1] == "pre_inversion"
    assert line.output_root == "results/willy/L22PLT"
    assert line.station_pattern == "22-*"
    assert registry.canonical("WILLY18") == "L18PLT"


def test_a_line_resolves_to_its_folder_and_defaults(
    checkout: Path, workspace: Path
) -> None:
    (checkout / "data" / "L18PLT").mkdir(parents=True)
    for n in ("18-01", "18-02"):
        (checkout / "data" / "L18PLT" / f"{n}.edi").write_text(">HEAD\n")
    with (checkout / "projects" / "willy_project_registry.yml").open("a") as f:
        f.write("static_shift_defaults: {method: ama, half_window: 3}\n")
    reg = load_line_registry(workspace, checkout)
    res = reg.get("L18PLT").resolve()
    assert res["edi_dir"] == str((checkout / "data" / "L18PLT").resolve())
    assert (res["exists"], res["n_edi_files"]) == (True, 2)
    assert res["static_shift"] == {"method": "ama", "half_window": 3}
    assert res["output_root"] == "results/willy/L18PLT"
    ws = reg.get("P07").resolve()  # relative to the folder holding .pycsamt/
    assert ws["edi_dir"] == str((workspace / "edi" / "P07").resolve())
    assert ws["exists"] is False and ws["default_workflows"] == ["qc", "denoise"]
    assert reg.resolve("line p07") == ws
    with pytest.raises(KeyError, match="known: L18PLT"):
        reg.resolve("L99XYZ")


def test_the_package_template_registry_is_not_loaded(checkout: Path) -> None:
    (checkout / "projects" / "plotting.yml").write_text("dpi: 150\n")  # not a registry
    files = [p.name for p in discover_registry_files(checkout)]
    assert files == ["willy_project_registry.yml"]
    reg = load_line_registry(checkout)
    # the template's alias "a" would otherwise make every "a" a survey line
    assert reg.find_line("run a quality check on a line")[0] is None


def test_workspace_toml_and_checkout_yaml_merge(
    workspace: Path, checkout: Path
) -> None:
    reg = load_line_registry(workspace, checkout)
    assert reg.warnings == []
    assert set(reg.names()) == {
        "P07",
        "NORTH2",
        "L18PLT",
        "L22PLT",
        "L26PLT",
        "L30PLT",
        "L34PLT",
    }
    assert reg.get("p07").default_workflows == ("qc", "denoise")
    assert reg.find_line("denoise the north line please")[0] == "NORTH2"


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("bad_project_registry.yml", "lines: [unclosed\n", "not valid YAML"),
        (
            "nolines_project_registry.yml",
            "project: {name: X}\n",
            "needs a 'lines' table",
        ),
        (
            "noedi_project_registry.yaml",
            "lines:\n  L1: {sort_by: lon}\n",
            "edi_dir must be a path",
        ),
    ],
)
def test_a_broken_yaml_registry_gives_one_warning(
    tmp_path: Path, checkout: Path, caplog, name: str, text: str, fragment: str
) -> None:
    (checkout / "projects" / name).write_text(text)
    with caplog.at_level(logging.WARNING, logger="pycsamt_lsp.routing.registry"):
        reg = load_line_registry(checkout)
    assert len(reg.warnings) == 1
    assert name in reg.warnings[0] and fragment in reg.warnings[0]
    assert [r.getMessage() for r in caplog.records] == reg.warnings
    # the good file still loads and routing still resolves its lines
    assert "L18PLT" in reg.names()


def test_a_broken_registry_warns_once_across_requests(checkout: Path, caplog) -> None:
    bad = checkout / "projects" / "bad_project_registry.yml"
    bad.write_text("lines: [unclosed\n")
    with caplog.at_level(logging.WARNING, logger="pycsamt_lsp.routing.registry"):
        cache = RegistryCache()  # the workspace's (answer/registry)
        regs = [cache.load(discover_registry_files(checkout)) for _ in range(5)]
    assert len(caplog.records) == 1
    assert all(r is regs[0] for r in regs) and "L18PLT" in regs[0].names()
    # fixed on disk: read again, no new warning, the new line is known
    bad.write_text("lines:\n  L40PLT: {edi_dir: data/L40PLT}\n")
    caplog.clear()
    reg = cache.load(discover_registry_files(checkout))
    assert (
        reg is not None
        and reg is not regs[0]
        and "L40PLT" in reg.names()
        and not caplog.records
    )


def test_a_broken_workspace_toml_gives_one_warning_and_routing_goes_on(
    workspace: Path, profile
) -> None:
    (workspace / ".pycsamt" / "projects.toml").write_text("[lines.P07\nedi_dir = 1\n")
    reg = load_line_registry(workspace)
    assert len(reg.warnings) == 1 and "not valid TOML" in reg.warnings[0]
    d = route("run quality control on P07", profile, reg)
    assert (d.intent, d.workflow, d.line) == ("workflow", "qc", None)


# -- survey lines named anywhere ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("L26PLT first: remove the spikes", "L26PLT"),
        ("remove the spikes on l26plt", "L26PLT"),
        ("remove the spikes (line L26PLT) and then plot", "L26PLT"),
        ("spikes everywhere in data/AMT/WILLY_DATA/L26PLT/edi", "L26PLT"),
        ("L26-PLT has spikes", "L26PLT"),
        ("the L 26 PLT soundings have spikes", "L26PLT"),
        ("willy22 has spikes", "L22PLT"),
        ("compare L34PLT with L18PLT", "L34PLT"),
    ],
)
def test_a_line_is_found_anywhere_in_the_request(
    registry, text: str, line: str
) -> None:
    assert registry.find_line(text) == (line, None)


def test_an_unknown_line_is_named_not_guessed(registry, profile) -> None:
    assert registry.find_line("denoise L77PLT") == (None, "L77PLT")
    d = route("denoise L77PLT", profile, registry)
    assert d.line is None and d.unknown_line == "L77PLT"
    assert "L77PLT is not a survey line" in d.clarify_question
    assert "L18PLT" in d.clarify_question
    # a word that only looks vaguely like a line is not reported
    assert registry.find_line("run inv2d on the survey") == (None, None)


def test_a_line_without_a_workflow_plans_the_line_defaults(registry, profile) -> None:
    d = route("take care of willy22 from start to finish", profile, registry)
    assert (d.intent, d.workflow, d.line) == ("workflow", None, "L22PLT")
    assert d.line_workflows == (
        "load",
        "qc",
        "static_shift",
        "phase_analysis",
        "pre_inversion",
    )


def test_routing_without_any_registry(profile) -> None:
    d = route("remove the spikes on L26PLT", profile, None)
    assert (d.intent, d.workflow, d.line) == ("workflow", "denoise", None)


# -- intents ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["run the workflow", "process my data", "just do it", "make the plot", "", "   "],
)
def test_ambiguous_requests_get_the_one_clarifying_question(
    registry, profile, text
) -> None:
    d = route(text, profile, registry)
    assert d.intent == "clarify" and d.workflow is None and d.line is None
    assert d.clarify_question.startswith("Which workflow should I run (")
    assert "static_shift" in d.clarify_question and "L30PLT" in d.clarify_question
    assert "code_gen" not in d.clarify_question


def test_the_clarifying_question_says_when_no_line_is_registered(profile) -> None:
    d = route("process my data", profile, LineRegistry())
    assert "none registered" in d.clarify_question


@pytest.mark.parametrize(
    ("text", "scope"),
    [
        ("Where is `_dispatch_code` implemented?", "developer"),
        ("which module defines RouteDecision?", "developer"),
        ("show me the source code of the phase tensor agent", "developer"),
        (
            "Show the unit tests for test_exact_edit_bypasses_extraction_and_retrieval",
            "developer_tests",
        ),
        ("are there tests for build_qc_table?", "developer_tests"),
    ],
)
def test_developer_questions_go_to_the_source_search(
    registry, profile, text, scope
) -> None:
    d = route(text, profile, registry)
    assert (d.intent, d.scope) == ("question", scope)


@pytest.mark.parametrize(
    "text",
    [
        "what does the static shift correction assume about the near surface?",
        "why is the phase tensor free of galvanic distortion?",
        "write a script that finds the source of the noise",
    ],
)
def test_science_questions_keep_the_science_scope(registry, profile, text) -> None:
    assert route(text, profile, registry).scope == "science"


@pytest.mark.parametrize(
    ("text", "intent", "workflow", "line"),
    [
        ("hey", "meta", None, None),
        ("which workflows do you offer?", "meta", None, None),
        ("what does estimate_ss_ama return?", "question", "static_shift", None),
        ("estimate_ss_ama signature", "question", "static_shift", None),
        ("give me python code that despikes L30PLT", "code", "denoise", "L30PLT"),
        ("draw the induction arrows of willy18", "plot", "tipper", "L18PLT"),
        ("what is the strike of L34PLT?", "metrics", "phase_analysis", "L34PLT"),
        ("how many stations does willy22 have?", "metrics", None, "L22PLT"),
        (
            "the sounding curves of L30PLT sit at different heights",
            "workflow",
            None,
            "L30PLT",
        ),
        (
            "could you screen L34PLT for unusable frequencies?",
            "workflow",
            "qc",
            "L34PLT",
        ),
        (
            "how deep can I see? compute it for L26PLT",
            "workflow",
            "sensitivity",
            "L26PLT",
        ),
        ("load the EDI files from /data/willy/L99", "workflow", None, None),
        ("give me an overview of L30PLT", "metrics", None, "L30PLT"),
        ("thanks so much", "meta", None, None),
        ("hi, run qc on L22PLT", "workflow", "qc", "L22PLT"),
        # an action with neither a workflow nor a line has nothing to plan
        ("analyse the whole survey", "clarify", None, None),
        ("apply the saved checkpoint", "clarify", None, None),
    ],
)
def test_intent_rules(registry, profile, text, intent, workflow, line) -> None:
    d = route(text, profile, registry)
    assert (d.intent, d.workflow, d.line) == (intent, workflow, line), d.rule
    assert d.intent in INTENTS and d.scope in SCOPES and 0.0 < d.confidence <= 1.0


def test_a_multi_step_request_lists_its_workflows_in_order(registry, profile) -> None:
    d = route(
        "on L26PLT: flag bad frequencies, remove spikes, then draw the induction arrows",
        profile,
        registry,
    )
    assert d.workflows == ("qc", "denoise", "tipper")
    assert d.workflow in d.workflows and d.line == "L26PLT"


def test_a_decision_is_json_ready(registry, profile) -> None:
    d = route("run quality control on L18PLT", profile, registry).to_dict()
    assert json.loads(json.dumps(d))["line_workflows"] == [
        "load",
        "qc",
        "static_shift",
        "phase_analysis",
    ]
    assert set(d) >= {
        "intent",
        "workflow",
        "line",
        "confidence",
        "clarify_question",
        "scope",
    }


# -- another package defines its own intents and workflows -----------------------


def test_another_profile_routes_with_its_own_workflows(tmp_path: Path) -> None:
    prof = profile_from_dict(
        {
            "name": "seis",
            "package": "seis",
            "workflows": {"picking": ["first break"], "migration": ["kirchhoff"]},
            "workflow_descriptors": {
                "picking": ["onset", "arrival time"],
                "migration": ["image the reflectors"],
            },
            "intents": {
                "action": ["run ", "find "],
                "code": ["script"],
                "question": ["what"],
            },
            "routing": {"clarify_question": "Picking or migration ({workflows})?"},
        }
    )
    r = Router(prof)
    assert r.route("find the onsets of shot 12").workflow == "picking"
    assert r.route("image the reflectors").workflow == "migration"
    d = r.route("run it")
    assert (
        d.intent == "clarify"
        and d.clarify_question == "Picking or migration (picking, migration)?"
    )
    # the pycsamt workflows mean nothing here
    assert r.route("remove the static shift").workflow is None


# -- the splits and the quality gate ---------------------------------------------


def _check_split(
    path: Path, profile, registry: LineRegistry, minimum: int
) -> list[dict]:
    recs = load_records(path)
    assert len(recs) >= minimum
    workflows = set(profile.workflow_names)
    for r in recs:
        assert r["expected_intent"] in INTENTS, r
        assert r["expected_workflow"] is None or r["expected_workflow"] in workflows, r
        assert r["expected_line"] is None or r["expected_line"] in registry.lines, r
        assert r["expected_scope"] in SCOPES, r
    assert {r["expected_intent"] for r in recs} == set(INTENTS)
    return recs


def test_the_splits_are_well_formed_and_apart(profile, registry) -> None:
    test = _check_split(TEST, profile, registry, 150)
    tune = _check_split(TUNING, profile, registry, 100)
    assert "BEFORE any" in TEST.read_text().splitlines()[0]
    assert {r["expected_scope"] for r in test} == set(SCOPES)
    tq = [r["query"].lower() for r in tune]
    for r in test:
        q = r["query"].lower()
        close = [t for t in tq if difflib.SequenceMatcher(None, q, t).ratio() >= 0.75]
        assert not close, (r["query"], close)


def _gate(profile, registry, **router_kw) -> dict:
    router = Router(profile, **router_kw)
    return score_routing(load_records(TUNING), lambda q: router.route(q, registry))


def test_quality_gate_on_the_tuning_split(profile, registry) -> None:
    res = _gate(profile, registry)
    assert res["intent_accuracy"] >= 0.95, res["misses"]
    assert res["workflow_accuracy"] >= 0.90, res["misses"]
    assert res["line_accuracy"] >= 0.99, res["misses"]
    assert res["scope_accuracy"] >= 0.95, res["misses"]


def test_the_gate_fails_without_the_workflow_descriptors(profile, registry) -> None:
    res = _gate(profile, registry, descriptors=False)
    assert res["workflow_accuracy"] < 0.90
    # and with an empty descriptors section in the profile itself
    res2 = _gate(replace(profile, workflow_descriptors=()), registry)
    assert res2["workflow_accuracy"] == res["workflow_accuracy"]


def test_the_gate_fails_without_the_intent_cues(profile, registry) -> None:
    res = _gate(replace(profile, intents=()), registry)
    assert res["intent_accuracy"] < 0.95


def test_the_gate_fails_without_a_registry(profile) -> None:
    res = score_routing(load_records(TUNING), lambda q: route(q, profile, None))
    assert res["line_accuracy"] < 0.99


def test_routing_imports_no_workspace_or_lsp_module() -> None:
    code = (
        "import sys, pycsamt_lsp.routing as r; "
        "print(sorted(m for m in sys.modules if m.startswith('pycsamt_lsp')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    mods = eval(out)  # our own printed list
    assert all(
        m == "pycsamt_lsp"
        or m.startswith(("pycsamt_lsp.routing", "pycsamt_lsp.errors"))
        for m in mods
    ), mods
