"""Routing wired into ``pycsamt.ask`` and ``pycsamt.eval`` (issue 15), through
the real entry points: the language server (pytest-lsp) and the CLI.

The fixture corpus is a small package ``geo`` with two workflows, a recipe
per workflow, an agent class, a unit test and a ``.pycsamt/projects.toml``
registry. Its profile borrows the routing cues of the default profile
(``[routing]`` and ``[intents]``), so the requests route the way pyCSAMT
requests do. No test needs a key; the model-assisted decision talks to the
fake OpenAI server on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fake_openai import FakeOpenAI
from lsp_helpers import wait_for
from pycsamt_lsp import cli
from pycsamt_lsp.answer.route import routed_answer
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.evals.routing_metrics import routing_metrics
from pycsamt_lsp.workspace.facade import Workspace

DEFAULT_PROFILE = (
    Path(__file__).resolve().parents[1] / "server/pycsamt_lsp/profiles/pycsamt.toml"
)


def _routing_sections() -> str:
    """The default profile's ``[routing]`` and ``[intents]`` tables, verbatim."""
    text = DEFAULT_PROFILE.read_text(encoding="utf-8")
    start = text.index("[routing]")
    end = text.index("[workflow_descriptors]")
    return text[start:end]


PROFILE = """
name = "routefix"
package = "geo"
roots = ["geo", "recipes"]
root_docs = []
suffixes = [".py", ".md"]
excludes = ["__pycache__", "/tests/"]
test_globs = ["test_*.py", "conftest.py"]
recipe_dir = "recipes"
devsearch_roots = ["geo"]
workflow_paths = [["geo/core", "static_shift"], ["geo/phase", "phase_analysis"]]
expansions = []

[priority]
high = ["geo/core"]

[workflows]
static_shift = ["static shift", "galvanic"]
phase_analysis = ["phase tensor", "strike"]

""" + _routing_sections()

FILES = {
    "geo/__init__.py": '"""Geo: a fixture package."""\n',
    "geo/core/__init__.py": "",
    "geo/core/shift.py": '''
        """Static shift correction of apparent resistivity soundings."""


        def correct_shift(sites, factor: float = 1.0, *, method: str = "ama"):
            """Correct the galvanic static shift of apparent resistivity curves."""
            return sites


        def plot_shift(sites, *, log: bool = True):
            """Plot the static shift factors along the line."""
            return None


        class ShiftAgent:
            """Runs the static shift workflow on one survey line."""

            def __init__(self, k: int = 3):
                self.k = k

            def run(self, sites, verbose: bool = False):
                """Run the correction on the line."""
                return correct_shift(sites)
    ''',
    "geo/phase.py": '''
        """Phase tensor analysis."""


        def strike_angle(z, freq=None):
            """Geoelectric strike from the phase tensor invariants."""
            return 0.0


        def _dispatch_phase(z):
            """Internal dispatcher of the phase tools."""
            return strike_angle(z)
    ''',
    "geo/tests/test_shift.py": """
        from geo.core.shift import correct_shift


        def test_correct_shift_keeps_the_sites():
            assert correct_shift([1]) == [1]
    """,
    "recipes/static_shift.md": (
        "# Correct static shift along a line\n\nWorkflow: static_shift\n\n"
        "Run `geo.core.shift.ShiftAgent` on the line, or call "
        "`geo.core.shift.correct_shift` and check it with "
        "`geo.core.shift.plot_shift`.\n"
    ),
    "recipes/phase.md": (
        "# Phase tensor strike\n\nWorkflow: phase_analysis\n\n"
        "Estimate the geoelectric strike with `geo.phase.strike_angle`.\n"
    ),
    ".pycsamt/projects.toml": """
        [project]
        name = "Fixture survey"
        default_output_root = "results"

        [lines.L18PLT]
        edi_dir = "data/L18PLT"
        sort_by = "lat"
        default_workflows = ["static_shift", "phase_analysis"]

        [static_shift_defaults]
        method = "ama"
    """,
}


def write_corpus(root: Path) -> Path:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    edi = root / "data" / "L18PLT"
    edi.mkdir(parents=True, exist_ok=True)
    for name in ("S01.edi", "S02.edi", "S03.edi"):
        (edi / name).write_text(">HEAD\n", encoding="utf-8")
    prof = root / "routefix.toml"
    prof.write_text(PROFILE, encoding="utf-8")
    return prof


@pytest.fixture(autouse=True)
def _no_real_openai(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


# -- the language server ----------------------------------------------------------------


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "pycsamt_lsp", "serve"]
    )
)
async def lsp(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def _start(lsp: LanguageClient, root: Path) -> None:
    prof = write_corpus(root)
    states: list[str] = []

    @lsp.feature("pycsamt/indexState")
    def _on_state(params):
        states.append(params["state"] if isinstance(params, dict) else params.state)

    @lsp.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _on_register(_params):
        return None

    await lsp.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"corpusRoot": str(root), "profile": str(prof)},
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="c")],
        )
    )
    await wait_for(lambda: states and states[-1] in ("ready", "error"))
    assert states[-1] == "ready"


async def _ask(lsp: LanguageClient, question: str) -> dict:
    return await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="pycsamt.ask", arguments=[{"question": question}]
        )
    )


async def test_every_intent_through_pycsamt_ask(lsp: LanguageClient, tmp_path: Path):
    root = tmp_path / "corpus"
    await _start(lsp, root)

    # workflow: the plan for the line, its steps from the recipe and the index,
    # the line's folder and defaults from the registry
    res = await _ask(lsp, "run the static shift correction on line L18PLT")
    route = res["route"]
    assert (route["intent"], route["workflow"], route["line"]) == (
        "workflow",
        "static_shift",
        "L18PLT",
    )
    assert route["scope"] == "science" and route["clarify_question"] is None
    plan = res["plan"]
    assert plan["line"]["n_edi_files"] == 3
    assert Path(plan["line"]["edi_dir"]) == (root / "data/L18PLT").resolve()
    (step,) = plan["steps"]
    assert step["agent"]["qualname"] == "geo.core.shift.ShiftAgent"
    assert [f["qualname"] for f in step["functions"]] == [
        "geo.core.shift.correct_shift",
        "geo.core.shift.plot_shift",
    ]
    assert step["defaults"]["sort_by"] == "lat"
    assert step["defaults"]["static_shift"] == {"method": "ama"}
    assert step["recipe"]["path"] == "recipes/static_shift.md"
    assert "ShiftAgent(k: int = 3)" in res["answer"] and "L18PLT" in res["answer"]
    assert res["citations"], "the plan keeps its cited context"

    # a line alone: the plan runs the registry's default workflows in order
    res = await _ask(lsp, "process line L18PLT")
    assert res["route"]["intent"] == "workflow"
    assert [s["workflow"] for s in res["plan"]["steps"]] == [
        "static_shift",
        "phase_analysis",
    ]
    assert (
        res["plan"]["steps"][1]["functions"][0]["qualname"] == "geo.phase.strike_angle"
    )

    # plot: the plotting functions of the workflow
    res = await _ask(lsp, "plot the static shift factors of line L18PLT")
    assert res["route"]["intent"] == "plot"
    assert [f["qualname"] for f in res["plan"]["steps"][0]["functions"]] == [
        "geo.core.shift.plot_shift"
    ]

    # code: a script from the API cards, validated before it is shown
    res = await _ask(
        lsp, "write a script for the static shift correction of line L18PLT"
    )
    assert res["route"]["intent"] == "code"
    script = res["script"]
    assert "from geo.core.shift import ShiftAgent, correct_shift, plot_shift" in script
    assert "shiftagent.run(edi_dir, verbose=False)" in script
    assert 'correct_shift(edi_dir, factor=1.0, method="ama")' in script
    assert str((root / "data/L18PLT").resolve()) in script
    compile(script, "<script>", "exec")
    v = res["validation"]
    assert v["ok"] is True and v["errors"] == []
    assert "geo.core.shift.ShiftAgent" in v["checked"]
    assert "```python" in res["answer"] and "Import check: ok" in res["answer"]

    # meta: capabilities from profile, index and registry
    res = await _ask(lsp, "what can you do?")
    assert res["route"]["intent"] == "meta" and res["path"] == "capabilities"
    cap = res["capabilities"]
    assert [w["workflow"] for w in cap["workflows"]] == [
        "static_shift",
        "phase_analysis",
    ]
    assert cap["workflows"][0]["agents"] == ["geo.core.shift.ShiftAgent"]
    assert cap["lines"] == ["L18PLT"]

    # clarify: the question, asked as a question
    res = await _ask(lsp, "process my data")
    assert res["route"]["intent"] == "clarify"
    q = res["clarifying_question"]
    assert q == res["route"]["clarify_question"] == res["answer"]
    assert q.endswith("?") and "static_shift" in q and "L18PLT" in q
    assert res["confident"] is False and res["citations"] == []

    # developer: the live source search, with path, line and file hash
    res = await _ask(lsp, "Where is `_dispatch_phase` implemented?")
    assert res["route"]["scope"] == "developer" and res["path"] == "devsearch"
    top = res["citations"][0]
    assert top["source_path"] == "geo/phase.py" and top["symbol"] == "_dispatch_phase"
    assert top["line_start"] == 9
    data = (root / "geo/phase.py").read_bytes()
    import hashlib

    assert top["sha256"] == hashlib.sha256(data).hexdigest()
    assert "geo/phase.py:9" in res["answer"]
    assert all(c["kind"] != "test" for c in res["citations"])

    # tests only when asked, labelled as expected-behaviour examples
    res = await _ask(lsp, "Show the unit tests for test_correct_shift_keeps_the_sites")
    assert res["route"]["scope"] == "developer_tests"
    tests = [c for c in res["citations"] if c["kind"] == "test"]
    assert tests and tests[0]["source_path"] == "geo/tests/test_shift.py"
    assert "expected-behaviour example" in res["answer"]

    # missing evidence: a stated limitation, no guessed API
    res = await _ask(lsp, "Where is `_no_such_helper_anywhere` implemented?")
    assert res["route"]["scope"] == "developer"
    assert (
        "Limitation:" in res["answer"] and "_no_such_helper_anywhere" in res["answer"]
    )

    # ordinary science question: the science answer and its ranking, routed
    res = await _ask(lsp, "How does correct_shift correct the galvanic static shift?")
    assert res["route"]["intent"] == "question" and res["route"]["scope"] == "science"
    assert res["path"] == "offline" and "plan" not in res
    assert res["citations"][0]["symbol"] == "geo.core.shift.correct_shift"


async def test_eval_reports_routing_accuracy(lsp: LanguageClient, tmp_path: Path):
    root = tmp_path / "corpus"
    await _start(lsp, root)
    suites = tmp_path / "suites"
    suites.mkdir()
    records = [
        {
            "query": "run the static shift correction on line L18PLT",
            "expected_intent": "workflow",
            "expected_workflow": "static_shift",
            "expected_line": "L18PLT",
        },
        {"query": "what can you do?", "expected_intent": "meta"},
        # a deliberate miss: the router says static_shift
        {
            "query": "correct the galvanic shift of L18PLT",
            "expected_workflow": "phase_analysis",
        },
    ]
    (suites / "routes.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8"
    )
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="pycsamt.eval", arguments=[{"suiteDir": str(suites)}]
        )
    )
    overall = res["overall"]["routing"]
    assert overall["metrics"] == {
        "intent_accuracy": 1.0,
        "workflow_accuracy": 0.5,
        "line_accuracy": 1.0,
    }
    assert overall["n"] == {
        "intent_accuracy": 2,
        "workflow_accuracy": 2,
        "line_accuracy": 1,
    }
    assert overall["misses"] == [
        {
            "query": "correct the galvanic shift of L18PLT",
            "metric": "workflow_accuracy",
            "expected": "phase_analysis",
            "got": "static_shift",
            "suite": "routes.jsonl",
        }
    ]
    assert (
        res["suites"]["routes.jsonl"]["routing"]["metrics"]["workflow_accuracy"] == 0.5
    )
    assert "symbol_recall" in res["overall"]["metrics"], "beside the retrieval metrics"


# -- the CLI --------------------------------------------------------------------------------


def test_cli_ask_json_carries_the_route(tmp_path: Path, capsys):
    root = tmp_path / "corpus"
    prof = write_corpus(root)
    common = [
        "--root",
        str(root),
        "--profile",
        str(prof),
        "--index-dir",
        str(tmp_path / "idx"),
    ]
    assert cli.main(["build", *common]) == 0
    capsys.readouterr()
    assert cli.main(["ask", "process line L18PLT", "--json", "--offline", *common]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: out["route"][k] for k in ("intent", "workflow", "line", "scope")} == {
        "intent": "workflow",
        "workflow": None,
        "line": "L18PLT",
        "scope": "science",
    }
    assert set(out["route"]) >= {"confidence", "clarify_question"}
    assert cli.main(["ask", "process my data", *common]) == 0
    text = capsys.readouterr().out
    assert re.search(r"route: clarify", text) and "? Which workflow" in text


def test_cli_eval_prints_routing_on_the_bundled_shape(tmp_path: Path, capsys):
    root = tmp_path / "corpus"
    prof = write_corpus(root)
    common = [
        "--root",
        str(root),
        "--profile",
        str(prof),
        "--index-dir",
        str(tmp_path / "idx"),
    ]
    assert cli.main(["build", *common]) == 0
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "a.jsonl").write_text(
        json.dumps(
            {
                "query": "plot the phase tensor strike of L18PLT",
                "expected_intent": "plot",
                "expected_line": "L18PLT",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert cli.main(["eval", "--suite-dir", str(suites), *common]) == 0
    text = capsys.readouterr().out
    assert "routing accuracy" in text
    assert re.search(r"overall\s+1\.000 \(n=1\)\s+-\s+1\.000 \(n=1\)", text)


# -- the engine: model-assisted routing with fallback (fake server only) -----------------


def _ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "corpus"
    prof = write_corpus(root)
    ws = Workspace(root, load_profile(prof), index_dir=tmp_path / "idx")
    ws.build()
    return ws


def test_model_routing_uses_a_valid_decision_and_falls_back(tmp_path: Path):
    ws = _ws(tmp_path)
    q = "have a look at L18PLT"
    offline = routed_answer(ws, q, settings=AskSettings())["route"]
    assert offline["source"] == "offline"
    with FakeOpenAI() as fake:
        fake.reply = json.dumps(
            {
                "intent": "plot",
                "workflow": "phase_analysis",
                "line": "l18plt",
                "scope": "science",
                "confidence": 0.9,
                "clarify_question": None,
            }
        )
        s = AskSettings(
            api_key="test-key", base_url=fake.url, timeout=5, model_routing=True
        )
        got = routed_answer(ws, q, settings=s)["route"]
        assert (got["intent"], got["workflow"], got["line"], got["source"]) == (
            "plot",
            "phase_analysis",
            "L18PLT",
            "model",
        )
        body = fake.requests_to("chat")[0]["body"]
        assert "phase_analysis" in body["messages"][0]["content"]
        # an invented workflow: the offline decision, and why
        fake.reply = json.dumps({"intent": "workflow", "workflow": "teleport"})
        got = routed_answer(ws, q, settings=s)["route"]
        assert got["source"].startswith("offline: ") and "teleport" in got["source"]
        assert got["intent"] == offline["intent"]
        # a failing server: the offline decision
        fake.mode["chat"] = "error500"
        got = routed_answer(ws, q, settings=s)["route"]
        assert got["source"].startswith("offline: ")
        assert got["intent"] == offline["intent"]


def test_routing_metrics_count_only_given_fields():
    recs = [
        {"query": "a", "expected_intent": "meta", "expected_workflow": None},
        {"query": "b", "expected_workflow": "qc"},
        {"query": "c"},
    ]
    table = {"a": {"intent": "meta", "workflow": "qc"}, "b": {"workflow": "denoise"}}
    rep = routing_metrics(recs, lambda q: table[q])
    assert rep["metrics"] == {
        "intent_accuracy": 1.0,
        "workflow_accuracy": 0.0,
        "line_accuracy": None,
    }
    assert rep["n"] == {
        "intent_accuracy": 1,
        "workflow_accuracy": 1,
        "line_accuracy": 0,
    }


def test_bundled_suites_route_perfectly_with_the_checkout_registry(
    real_corpus: Path, tmp_path: Path
):
    """The eval's routing figures on the package's bundled suites: 1.0 for
    intent, workflow and line, the lines resolved by the checkout's own
    ``projects/*_project_registry.yml`` (the same hook ``pycsamt.eval`` runs)."""
    from pycsamt_lsp.evals.routing_metrics import add_workspace_routing

    checkout = Path("~/.cache/pycsamt-lsp/checkout/pycsamt-checkout").expanduser()
    if not (checkout / "projects").is_dir():
        pytest.skip("the maintainer checkout is not available")
    suites = sorted((real_corpus / "pycsamt/assistant/evals/suites").glob("*.jsonl"))
    assert suites
    ws = Workspace(checkout, load_profile("pycsamt"), index_dir=tmp_path / "idx")
    report: dict = {"suites": {p.name: {} for p in suites}, "overall": {}}
    add_workspace_routing(report, ws, suites)
    overall = report["overall"]["routing"]
    assert overall["misses"] == []
    assert overall["metrics"] == {
        "intent_accuracy": 1.0,
        "workflow_accuracy": 1.0,
        "line_accuracy": 1.0,
    }
    assert overall["n"]["line_accuracy"] >= 5 and overall["n"]["intent_accuracy"] >= 25
    assert "L22PLT" in overall["registry_lines"]
