"""``pycsamt.ask``: cited context, the confidence gate, catalog routing and answers.

Everything runs on a small corpus the tests write; the OpenAI path talks to
the fake OpenAI-compatible server on 127.0.0.1 (``fake_openai.py``). No test
needs a key or the internet.
"""

from __future__ import annotations

import importlib
import json
import logging
import shutil
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fake_openai import FakeOpenAI
from lsp_helpers import wait_for
from pycsamt_lsp import cli
from pycsamt_lsp.answer import ask as ask_mod
from pycsamt_lsp.answer.catalog import is_catalog_question
from pycsamt_lsp.answer.codeblocks import extract_code_blocks
from pycsamt_lsp.answer.context import (
    answer_question,
    assemble,
    configure,
    settings_for,
)
from pycsamt_lsp.answer.evidence import CONFIDENCE_FLOOR, AssembledContext
from pycsamt_lsp.answer.offline import clarifying_question
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.commands.catalog import build_registry, run_command
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.errors import ArgumentError
from pycsamt_lsp.workspace.facade import Workspace

REGISTRY = build_registry()

PROFILE = """
name = "askfix"
package = "geo"
roots = ["geo", "docs", "recipes"]
root_docs = ["README.md"]
suffixes = [".py", ".rst", ".md"]
excludes = ["__pycache__", "/tests/"]
test_globs = ["test_*.py", "conftest.py"]
recipe_dir = "recipes"  # not assistant_recipes: the bundled recipes stay out
devsearch_roots = ["geo"]
papers_dir = "docs/papers"
workflow_paths = []
expansions = [["offset", ["static", "shift"]]]

[priority]
high = ["geo/core"]
docs = ["docs"]

[workflows]
static_shift = ["static shift", "galvanic"]
phase_analysis = ["phase tensor", "strike"]
denoise = ["denoise", "noise"]
"""

FILES = {
    "geo/__init__.py": '"""Geo: a fixture package for EM soundings."""\nfrom .core.shift import correct_shift\n__all__ = ["correct_shift"]\n',
    "geo/core/__init__.py": "",
    "geo/core/shift.py": '''
        """Static shift correction of apparent resistivity soundings."""


        def correct_shift(data, factor: float = 1.0, *, method: str = "ama"):
            """Correct the galvanic static shift of apparent resistivity curves.

            The static shift is a frequency-independent multiplicative offset
            caused by near-surface bodies. The adaptive moving average (AMA)
            estimates one factor per station.

            Parameters
            ----------
            data : array
                Apparent resistivity.
            factor : float
                Multiplicative factor.
            """
            return data


        class ShiftAgent:
            """Runs the static shift workflow on one survey line."""

            def __init__(self, line: str, k: int = 3):
                self.line = line

            def run(self, verbose: bool = False):
                """Run the correction on the line."""
                return correct_shift(self.line)
    ''',
    "geo/phase.py": '''
        """Phase tensor analysis."""


        def strike_angle(z, freq=None):
            """Geoelectric strike from the phase tensor invariants."""
            return 0.0


        def skew_angle(z):
            """Phase tensor skew: a dimensionality indicator."""
            return 0.0
    ''',
    "geo/noise.py": '''
        """Denoising of impedance spectra."""


        def hampel_filter(values, window: int = 5):
            """Remove spikes with a Hampel filter over a sliding window."""
            return values


        def rpca_denoise(matrix, rank: int = 2):
            """Robust PCA denoising of a station-by-frequency matrix."""
            return matrix
    ''',
    "geo/io.py": '''
        """Reading EDI files."""


        def read_edi(path):
            """Read one EDI file into a site object."""
            return None
    ''',
    "geo/forward.py": '''
        """One-dimensional forward modelling."""


        def forward_1d(thicknesses, resistivities, freqs):
            """Compute the 1-D magnetotelluric response of a layered earth."""
            return None
    ''',
    "docs/guide.rst": "Guide\n=====\n\nHow to correct a static shift with the agent.\n\nPhase\n-----\n\nThe phase tensor gives the strike and the skew.\n",
    "docs/denoise.md": "# Denoising\n\nSpikes in impedance spectra are removed with a Hampel filter or robust PCA.\n",
    "recipes/phase.md": "# Phase tensor strike\n\nWorkflow: phase_analysis\n\nEstimate the geoelectric strike with `geo.phase.strike_angle` and check the skew.\n",
    "recipes/static_shift.md": "# Correct static shift along a profile\n\nWorkflow: static_shift\n\nUse `geo.core.shift.correct_shift` with the AMA method to level apparent resistivity curves that are offset vertically between stations.\n",
}

STRONG = "How do I correct the galvanic static shift of apparent resistivity with correct_shift?"
WEAK = "correct the static shift"  # on-topic but below the floor
AMBIGUOUS = "static shift or phase tensor strike?"

REGISTRY_TOML = """
[project]
name = "Fixture survey"
default_output_root = "results"

[lines.L18PLT]
edi_dir = "data/L18PLT"
sort_by = "lon"
default_workflows = ["qc", "static_shift"]

[lines.L22PLT]
edi_dir = "data/L22PLT"

[aliases]
"line eighteen" = "L18PLT"

[static_shift_defaults]
method = "ama"
"""


def write_ask_corpus(root: Path) -> Path:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    prof = root / "askfix.toml"
    prof.write_text(PROFILE, encoding="utf-8")
    return prof


def make_ws(root: Path) -> Workspace:
    prof = write_ask_corpus(root)
    ws = Workspace(root, load_profile(prof), index_dir=root / ".idx")
    ws.build()
    ws.persist()
    return ws


@pytest.fixture(autouse=True)
def _no_real_openai(monkeypatch):
    """No test may reach a real API: the environment's key and URL are removed."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    return make_ws(tmp_path_factory.mktemp("askcorpus"))


@pytest.fixture()
def fresh_ws(tmp_path) -> Workspace:
    return make_ws(tmp_path / "corpus")


# -- citations ---------------------------------------------------------------------


def test_citation_fields(ws):
    res = answer_question(ws, STRONG, k=5, settings=AskSettings())
    assert res["confident"] is True
    assert res["path"] == "offline" and res["retrieval"] == "bm25"
    cites = res["citations"]
    assert [c["n"] for c in cites] == list(range(1, len(cites) + 1))
    assert 1 <= len(cites) <= 5
    for c in cites:
        for key in (
            "n",
            "source_path",
            "line_start",
            "line_end",
            "page",
            "label",
            "score",
            "snippet",
            "uri",
        ):
            assert key in c, key
        assert isinstance(c["score"], float)
        assert 0 < len(c["snippet"]) <= 280
        assert c["page"] is None
        assert c["uri"].startswith("file://")
        path = Path(unquote(urlparse(c["uri"]).path))
        assert path.is_file()
        assert path.as_posix().endswith(c["source_path"])
        assert isinstance(c["line_start"], int) and c["line_end"] >= c["line_start"]
    top = cites[0]
    assert top["label"] == "geo.core.shift.correct_shift"
    assert top["source_path"] == "geo/core/shift.py"
    assert top["line_start"] == 4
    assert top["snippet"].startswith("Correct the galvanic static shift")
    # the answer cites by number and every number it uses exists
    assert "[1]" in res["answer"]
    import re

    used = {int(n) for n in re.findall(r"\[(\d+)\]", res["answer"])}
    assert used <= {c["n"] for c in cites}


def test_snippet_is_capped_at_280(tmp_path):
    root = tmp_path / "c"
    write_ask_corpus(root)
    long_doc = "Static shift word " * 80
    (root / "geo/long.py").write_text(
        f'def long_static_shift_helper():\n    """{long_doc}"""\n    return 1\n',
        encoding="utf-8",
    )
    ws = Workspace(root, load_profile(root / "askfix.toml"), index_dir=root / ".idx")
    ws.build()
    res = answer_question(
        ws, "long_static_shift_helper static shift word", settings=AskSettings()
    )
    lens = [len(c["snippet"]) for c in res["citations"]]
    assert max(lens) == 280
    assert any(c["snippet"].endswith("…") for c in res["citations"])


def test_result_shape_and_cards(ws):
    res = run_command("pycsamt.ask", ws, {"question": STRONG})
    for key in (
        "question",
        "answer",
        "confident",
        "clarifying_question",
        "citations",
        "path",
        "retrieval",
        "project_context",
        "related_symbols",
        "api_cards",
    ):
        assert key in res
    json.dumps(res)  # JSON-serialisable
    cards = {c["symbol"]: c for c in res["api_cards"]}
    card = cards["geo.core.shift.correct_shift"]
    assert "factor" in (card.get("signature") or "")
    assert [p["name"] for p in card["params"]][:2] == ["data", "factor"]
    # what the lead symbol calls, or the other retrieved code symbols
    assert res["related_symbols"]
    assert "geo.core.shift.correct_shift" not in res["related_symbols"]


def test_related_symbols_follow_calls(ws):
    ctx = assemble(
        ws, "ShiftAgent run the correction on the line", k=4, settings=AskSettings()
    )
    lead_code = [
        e.chunk.symbol
        for e in ctx.evidence
        if e.chunk.kind in ("python_symbol", "python_method")
    ]
    assert lead_code and lead_code[0].startswith("geo.core.shift.ShiftAgent")
    assert "geo.core.shift.correct_shift" in ctx.related_symbols


# -- the confidence gate -------------------------------------------------------------


def test_gate_arithmetic():
    assert CONFIDENCE_FLOOR == 25.0
    assert AssembledContext("q", top_score=25.0).confident
    assert not AssembledContext("q", top_score=24.999).confident
    assert AssembledContext(
        "q", top_score=0.0, project_context={"line": "L18PLT"}
    ).confident


def test_gate_above_floor_answers(ws):
    res = answer_question(ws, STRONG, settings=AskSettings())
    assert res["top_score"] >= 25.0
    assert res["confident"] is True
    assert res["clarifying_question"] is None
    assert res["answer"].startswith(
        "**`geo.core.shift.correct_shift`** — Correct the galvanic static shift"
    )
    assert "```\ncorrect_shift(data, factor: float = 1.0" in res["answer"]


def test_gate_below_floor_asks(ws):
    res = answer_question(ws, WEAK, settings=AskSettings())
    assert 0 < res["top_score"] < 25.0
    assert res["confident"] is False
    assert res["clarifying_question"]
    assert res["answer"].startswith("No answer yet")
    assert res["citations"], "the closest matches are still cited"
    assert res["path"] == "offline"


def test_gate_below_floor_never_calls_openai(ws):
    with FakeOpenAI() as fake:
        s = AskSettings(api_key="test-key", base_url=fake.url, timeout=5)
        res = answer_question(ws, WEAK, settings=s)
        assert res["confident"] is False
        assert fake.requests_to("chat") == []


def _write_registry(folder: Path, text: str = REGISTRY_TOML) -> Path:
    reg = folder / ".pycsamt" / "projects.toml"
    reg.parent.mkdir(parents=True, exist_ok=True)
    reg.write_text(text, encoding="utf-8")
    edi = folder / "data" / "L18PLT"
    edi.mkdir(parents=True, exist_ok=True)
    for name in ("S01.edi", "S02.edi"):
        (edi / name).write_text(">HEAD\n", encoding="utf-8")
    return reg


def test_gate_resolved_line_is_confident(fresh_ws):
    _write_registry(fresh_ws.root)
    q = "process line l18plt please"
    res = answer_question(fresh_ws, q, settings=AskSettings())
    assert res["top_score"] < 25.0
    assert res["confident"] is True
    assert res["clarifying_question"] is None
    pc = res["project_context"]
    assert pc["line"] == "L18PLT"
    assert pc["exists"] is True and pc["n_edi_files"] == 2
    assert Path(pc["edi_dir"]) == (fresh_ws.root / "data/L18PLT").resolve()
    assert pc["default_workflows"] == ["qc", "static_shift"]
    assert pc["static_shift"] == {"method": "ama"}
    assert res["answer"].startswith(
        "**Survey line L18PLT** (Fixture survey): 2 EDI file(s)"
    )


def test_registry_alias_and_workspace_root(ws, tmp_path):
    _write_registry(tmp_path)
    s = AskSettings(workspace_root=str(tmp_path))
    res = answer_question(ws, "static shift on line eighteen", settings=s)
    assert res["project_context"]["line"] == "L18PLT"
    # without the line the same folder gives no project context
    res = answer_question(ws, WEAK, settings=s)
    assert res["project_context"] is None


def test_registry_missing_or_malformed_warns(ws, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="pycsamt_lsp")
    s = AskSettings(workspace_root=str(tmp_path / "nowhere"))
    res = answer_question(ws, "process line L18PLT", settings=s)
    assert res["project_context"] is None
    assert "no project registry" in caplog.text
    caplog.clear()
    _write_registry(tmp_path, "[lines.L18PLT\nedi_dir = 3\n")
    s = AskSettings(workspace_root=str(tmp_path))
    res = answer_question(ws, "process line L18PLT", settings=s)
    assert res["project_context"] is None
    assert "not valid TOML" in caplog.text
    caplog.clear()
    _write_registry(tmp_path, "[lines.L18PLT]\nedi_dir = 3\n")
    res = answer_question(ws, "process line L18PLT", settings=s)
    assert res["project_context"] is None
    assert "edi_dir must be a path string" in caplog.text


# -- clarifying question ------------------------------------------------------------------


def test_clarifying_question_names_retrieved_workflows(ws):
    res = answer_question(ws, AMBIGUOUS, settings=AskSettings())
    assert res["confident"] is False
    q = res["clarifying_question"]
    wfs = {c["workflow"] for c in res["citations"][:6] if c["workflow"]}
    assert {"static_shift", "phase_analysis"} <= wfs
    assert "static shift" in q and "phase analysis" in q
    assert q.startswith("Do you mean the")
    assert "workflow?" in q
    # symbols that were retrieved are offered as examples
    assert "`" in q


def test_clarifying_question_mentions_lines_and_empty_case(ws, tmp_path):
    _write_registry(tmp_path)
    res = answer_question(ws, WEAK, settings=AskSettings(workspace_root=str(tmp_path)))
    assert "L18PLT" in res["clarifying_question"]
    assert "L22PLT" in res["clarifying_question"]
    empty = answer_question(ws, "the thing", settings=AskSettings())
    assert empty["citations"] == []
    assert empty["top_score"] == 0
    cq = empty["clarifying_question"]
    assert cq.startswith("I found nothing in the index")
    assert "static shift" in cq and "phase analysis" in cq
    # unit: a context with one workflow
    one = clarifying_question(AssembledContext("x"), ("static_shift",))
    assert "static shift" in one


# -- catalog routing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q",
    [
        "What workflows does the package cover?",
        "what is in the index?",
        "Which workflows are available?",
        "how many chunks are indexed?",
        "list the recipes",
    ],
)
def test_catalog_questions_are_routed(q):
    assert is_catalog_question(q)


@pytest.mark.parametrize(
    "q",
    [
        "what workflow should I use for static shift?",
        "how do I correct the static shift",
        "what is the phase tensor?",
    ],
)
def test_topic_questions_are_not_routed(q):
    assert not is_catalog_question(q)


def test_catalog_answer_from_the_manifest(ws):
    res = answer_question(
        ws, "What workflows does the package cover?", settings=AskSettings()
    )
    assert res["path"] == "catalog"
    assert res["confident"] is True and res["clarifying_question"] is None
    assert (
        "index catalog" in res["answer"]
        and "not from a retrieval subset" in res["answer"]
    )
    stats = ws.stats()
    cat = res["catalog"]
    assert cat["n_chunks"] == stats["n_chunks"]
    assert cat["by_kind"] == stats["by_kind"]
    assert cat["by_workflow"] == stats["by_workflow"]
    for wf in ("static_shift", "phase_analysis", "denoise"):
        assert f"(`{wf}`): {stats['by_workflow'][wf]} chunks" in res["answer"]
    # recipes are listed and cited
    paths = [c["source_path"] for c in res["citations"]]
    assert "recipes/static_shift.md" in paths
    assert all(c["uri"].startswith("file://") for c in res["citations"])
    other = answer_question(ws, "what is in the index?", settings=AskSettings())
    assert other["path"] == "catalog"
    assert other["catalog"] == cat


# -- offline determinism ------------------------------------------------------------------------


def test_offline_answer_is_deterministic(ws, tmp_path):
    a = answer_question(ws, STRONG, settings=AskSettings())
    b = answer_question(ws, STRONG, settings=AskSettings())
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    # a new workspace over a copy of the corpus gives the same answer text
    copy = tmp_path / "copy"
    shutil.copytree(ws.root, copy, ignore=shutil.ignore_patterns(".idx"))
    ws2 = Workspace(copy, load_profile(copy / "askfix.toml"), index_dir=copy / ".idx")
    ws2.build()
    c = answer_question(ws2, STRONG, settings=AskSettings())
    assert c["answer"] == a["answer"]
    assert [x["label"] for x in c["citations"]] == [x["label"] for x in a["citations"]]


def test_offline_answer_when_no_key(ws):
    res = run_command("pycsamt.ask", ws, {"question": STRONG, "k": 4})
    assert res["path"] == "offline"
    assert "fallback_reason" not in res
    assert len(res["citations"]) <= 4
    assert "Also relevant:" in res["answer"]


# -- OpenAI through the fake server -------------------------------------------------------------


def test_openai_answer_against_fake_server(ws):
    with FakeOpenAI() as fake:
        fake.reply = 'Call `correct_shift` with `method="ama"` [1].'
        s = AskSettings(api_key="test-key-123456", base_url=fake.url, timeout=5)
        res = answer_question(ws, STRONG, settings=s)
        assert res["path"] == "openai"
        assert res["answer"] == fake.reply
        assert res["model"] == "gpt-4o-mini"
        assert "validation" not in res  # no code in the reply
        (req,) = fake.requests_to("chat")
    body = req["body"]
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system"
    assert "ONLY the numbered excerpts" in system["content"]
    assert "Cite every excerpt" in system["content"]
    assert "say so plainly" in system["content"]
    assert user["content"].startswith(f"Question: {STRONG}")
    assert (
        "[1] geo.core.shift.correct_shift (python_symbol; geo/core/shift.py:4-"
        in user["content"]
    )
    assert "API cards (real signatures):" in user["content"]
    assert req["headers"].get("authorization") == "Bearer test-key-123456"
    assert "test-key-123456" not in json.dumps(res)


def test_openai_model_and_env_settings(ws, monkeypatch):
    with FakeOpenAI() as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "env-key-abcdef")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        configure(ws, model="gpt-fake-mini", timeout=5.0)
        try:
            res = run_command("pycsamt.ask", ws, {"question": STRONG})
        finally:
            configure(ws, model="gpt-4o-mini", timeout=30.0)
        assert res["path"] == "openai" and res["model"] == "gpt-fake-mini"
        assert (
            fake.requests_to("chat")[0]["headers"]["authorization"]
            == "Bearer env-key-abcdef"
        )
    assert settings_for(ws).model == "gpt-4o-mini"
    assert "env-key" not in repr(settings_for(ws))


def test_openai_timeout_falls_back_offline(ws, caplog):
    caplog.set_level(logging.DEBUG)
    offline = answer_question(ws, STRONG, settings=AskSettings())
    with FakeOpenAI() as fake:
        fake.mode["chat"] = "timeout"
        fake.delay = 3.0
        s = AskSettings(api_key="sk-secret-timeout-key", base_url=fake.url, timeout=0.5)
        res = answer_question(ws, STRONG, settings=s)
    assert res["path"] == "offline"
    assert "timed out after 0.5 s" in res["fallback_reason"]
    assert res["answer"].startswith(
        "> OpenAI answer unavailable (the OpenAI request timed out"
    )
    assert res["answer"].endswith(offline["answer"])
    assert res["citations"] == offline["citations"]
    assert "sk-secret-timeout-key" not in json.dumps(res)
    assert "sk-secret-timeout-key" not in caplog.text


def test_openai_500_falls_back_offline(ws, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeOpenAI() as fake:
        fake.mode["chat"] = "error500"
        s = AskSettings(api_key="sk-secret-500-key", base_url=fake.url, timeout=5)
        res = answer_question(ws, STRONG, settings=s)
        assert len(fake.requests_to("chat")) == 1  # no retries
    assert res["path"] == "offline"
    assert "HTTP 500" in res["fallback_reason"]
    assert "the fake server failed" in res["fallback_reason"]
    assert "offline answer below" in res["answer"]
    assert "sk-secret-500-key" not in json.dumps(res)
    assert "sk-secret-500-key" not in caplog.text


def test_openai_unreachable_falls_back(ws):
    s = AskSettings(api_key="test-key", base_url="http://127.0.0.1:9/v1", timeout=2)
    res = answer_question(ws, STRONG, settings=s)
    assert res["path"] == "offline"
    assert res["fallback_reason"]


def test_offline_setting_skips_openai(ws):
    with FakeOpenAI() as fake:
        s = AskSettings(api_key="test-key", base_url=fake.url, use_openai=False)
        res = answer_question(ws, STRONG, settings=s)
        assert res["path"] == "offline" and not fake.requests_to("chat")


# -- validator findings on generated code ----------------------------------------------------------


def test_generated_code_is_validated(ws):
    bad = (
        "Use the agent [1]:\n\n```python\nfrom geo import static_shift\n"
        "from geo.core.shift import correct_shift\nstatic_shift.run()\n```\n"
    )
    with FakeOpenAI() as fake:
        fake.reply = bad
        res = answer_question(
            ws,
            STRONG,
            settings=AskSettings(api_key="k-test", base_url=fake.url, timeout=5),
        )
    assert res["path"] == "openai"
    v = res["validation"]
    assert v["ok"] is False
    assert "'geo' has no attribute or submodule 'static_shift'" in v["errors"]
    assert "geo.core.shift.correct_shift" in v["checked"]
    assert len(v["blocks"]) == 1
    assert "Import check of the generated code" in res["answer"]
    assert res["answer"].startswith(bad.rstrip())


def test_valid_generated_code_passes(ws):
    good = "```python\nfrom geo.core.shift import correct_shift\ncorrect_shift([1.0], factor=2.0)\n```"
    with FakeOpenAI() as fake:
        fake.reply = good
        res = answer_question(
            ws,
            STRONG,
            settings=AskSettings(api_key="k-test", base_url=fake.url, timeout=5),
        )
    assert res["validation"]["ok"] is True
    assert res["validation"]["errors"] == []
    assert res["answer"] == good


def test_extract_code_blocks():
    md = "x\n```python\nimport a\n```\n```\nplain text\n```\n```py\nb()\n```\n```bash\nls\n```"
    assert extract_code_blocks(md) == ["import a\n", "b()\n"]


# -- command and CLI ------------------------------------------------------------------------------------


def test_command_is_registered_with_formatter(ws):
    cmd = REGISTRY["pycsamt.ask"]
    fmt = cmd.format  # named lazily by the catalogue: resolves to format_ask
    assert cmd.heavy and (fmt.module, fmt.name) == (
        "pycsamt_lsp.answer.ask",
        "format_ask",
    )
    assert getattr(importlib.import_module(fmt.module), fmt.name) is ask_mod.format_ask
    text = cmd.format(run_command("pycsamt.ask", ws, {"question": STRONG}))
    assert (
        "path: offline" in text
        and "sources:" in text
        and "[1] geo.core.shift.correct_shift" in text
    )
    weak = cmd.format(run_command("pycsamt.ask", ws, {"question": WEAK}))
    assert "confident: no" in weak and "? " in weak


@pytest.mark.parametrize(
    "raw, msg",
    [
        ({"question": "  "}, "must not be empty"),
        ({"question": "x", "k": 0}, "from 1 to 50"),
        ({"question": "x", "k": "3"}, "must be an integer"),
        ({"k": 3}, "missing required field 'question'"),
        ({"question": "x", "dense": "yes"}, "'dense'"),
    ],
)
def test_bad_arguments(ws, raw, msg):
    with pytest.raises(ArgumentError, match=msg):
        run_command("pycsamt.ask", ws, raw)


def _cli_with_ask(monkeypatch):
    """Make sure `ask` is a subcommand (the lead may already have wired it)."""
    try:
        cli._parser().parse_args(["ask", "q"])
        return
    except SystemExit:
        pass
    monkeypatch.setattr(cli, "_EXTRA_PARSERS", [*cli._EXTRA_PARSERS, ask_mod.add_cli])
    monkeypatch.setitem(cli._EXTRA_RUNNERS, "ask", ask_mod.run_ask_cli)


def test_cli_ask_json_and_text(ws, monkeypatch, capsys):
    _cli_with_ask(monkeypatch)
    common = [
        "--root",
        str(ws.root),
        "--profile",
        str(ws.root / "askfix.toml"),
        "--index-dir",
        str(ws.index_dir),
    ]
    assert cli.main(["ask", STRONG, "-k", "3", "--json", "--offline", *common]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["path"] == "offline" and out["confident"] is True
    assert len(out["citations"]) == 3
    assert cli.main(["ask", WEAK, *common]) == 0
    text = capsys.readouterr().out
    assert "confident: no" in text and "sources:" in text
    assert cli.main(["ask", " ", *common]) == 2
    assert "must not be empty" in capsys.readouterr().err


# -- end to end through the language server ------------------------------------------------------------


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "pycsamt_lsp", "serve"]
    )
)
async def lsp(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def test_ask_through_execute_command(lsp: LanguageClient, tmp_path: Path):
    root = tmp_path / "corpus"
    prof = write_ask_corpus(root)
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
    res = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="pycsamt.ask", arguments=[{"question": STRONG, "k": 3}]
        )
    )
    assert res["path"] == "offline" and res["confident"] is True
    assert "[1]" in res["answer"]
    assert [c["n"] for c in res["citations"]] == [1, 2, 3]
    assert res["citations"][0]["uri"].startswith("file://")
    with pytest.raises(Exception, match="must not be empty"):
        await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="pycsamt.ask", arguments=[{"question": " "}]
            )
        )
