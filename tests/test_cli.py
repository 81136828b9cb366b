"""The CLI through its real entry points: ``python -m pycsamt_lsp`` and ``main``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pycsamt_lsp.cli import main
from pycsamt_lsp.commands.catalog import run_command
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

FILES = {
    "README.md": "# Fixture corpus\n\nA tiny pycsamt-shaped corpus for CLI tests.\n",
    "pycsamt/__init__.py": '"""The package."""\n',
    "pycsamt/emtools/ss.py": (
        '"""Static shift estimation (AMA)."""\n\n\n'
        "def estimate_ss_ama(z, n=3):\n"
        '    """Estimate static shift factors with the AMA filter."""\n'
        "    return z\n"
    ),
    "pycsamt/agents/static_shift.py": (
        '"""Static shift agent."""\n\n\n'
        "class StaticShiftAgent:\n"
        '    """Detect and correct galvanic static shift in MT data."""\n\n'
        "    def run(self, data):\n"
        '        """Run the correction."""\n'
        "        return data\n"
    ),
    "pycsamt/emtools/strike.py": (
        "def strike_from_phase_tensor(pt):\n"
        '    """Geoelectric strike direction from the phase tensor."""\n'
        "    return 0.0\n"
    ),
    "pycsamt/tests/test_ss.py": "def test_ss():\n    pass\n",
    "docs/source/index.rst": "Guide\n=====\n\nHow to correct static shift.\n",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "corpus"
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYCSAMT_LSP_CACHE", str(tmp_path / "cache"))


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def common(corpus: Path, idx: Path) -> list[str]:
    return ["--root", str(corpus), "--index-dir", str(idx)]


def test_build_then_stats_and_query(corpus, tmp_path, capsys):
    idx = tmp_path / "idx"
    code, out, err = cli(capsys, "build", *common(corpus, idx))
    assert code == 0, err
    assert "build:" in out and "chunks from" in out
    assert (idx / "manifest.json").is_file()

    code, out, _ = cli(capsys, "build", *common(corpus, idx), "--json")
    report = json.loads(out)
    assert report["action"] == "build" and report["n_chunks"] > 0

    code, out, _ = cli(capsys, "stats", *common(corpus, idx))
    assert code == 0
    assert "by kind:" in out and "by workflow:" in out
    assert "python_symbol" in out and "static_shift" in out

    code, out, _ = cli(capsys, "stats", *common(corpus, idx), "--json")
    st = json.loads(out)
    assert st["state"] == "ready"
    assert st["by_kind"]["python_symbol"] >= 3
    assert st["by_kind"]["module_doc"] >= 3
    assert st["by_workflow"]["static_shift"] >= 2
    assert (
        sum(st["by_kind"].values()) == st["n_chunks"] == sum(st["by_workflow"].values())
    )
    # the unit test file is not indexed
    code, out, _ = cli(capsys, "query", "test_ss", *common(corpus, idx), "--json")
    assert all("tests/" not in r["source_path"] for r in json.loads(out)["results"])


def test_query_readable_and_json_equal_the_command(corpus, tmp_path, capsys):
    idx = tmp_path / "idx"
    assert cli(capsys, "build", *common(corpus, idx))[0] == 0
    code, out, _ = cli(
        capsys, "query", "static shift correction", "-k", "3", *common(corpus, idx)
    )
    assert code == 0
    assert "query: 'static shift correction'" in out
    assert " 1. " in out and "pycsamt/" in out
    code, out, _ = cli(
        capsys,
        "query",
        "static shift correction",
        "-k",
        "3",
        *common(corpus, idx),
        "--json",
    )
    got = json.loads(out)
    ws = Workspace(corpus, load_profile("pycsamt"), index_dir=idx)
    ws.open()
    want = run_command(
        "pycsamt.query", ws, {"query": "static shift correction", "k": 3}
    )
    assert got == json.loads(json.dumps(want))
    assert len(got["results"]) == 3
    assert got["workflow"] == "static_shift"


def test_query_with_workflow(corpus, tmp_path, capsys):
    idx = tmp_path / "idx"
    code, out, err = cli(
        capsys,
        "query",
        "direction",
        "--workflow",
        "phase_analysis",
        *common(corpus, idx),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["workflow"] == "phase_analysis"


def test_query_builds_when_no_index_exists(corpus, tmp_path, capsys):
    idx = tmp_path / "fresh"
    code, out, _ = cli(
        capsys, "query", "estimate_ss_ama", *common(corpus, idx), "--json"
    )
    assert code == 0
    res = json.loads(out)
    assert res["results"][0]["symbol"] == "pycsamt.emtools.ss.estimate_ss_ama"
    assert (idx / "manifest.json").is_file()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["query", "x", "--root", "/no/such/folder"], "does not exist"),
        (["query", ""], "query"),
        (["query", "   "], "query"),
        (["query", "x", "-k", "0"], "'k'"),
        (["query", "x", "-k", "500"], "'k'"),
        (["query", "x", "--profile", "no-such-profile"], "unknown profile"),
        (["stats", "--profile", "no-such-profile"], "unknown profile"),
        (["query", "x", "--workflow", "nope"], "workflow"),
        (["query", "x", "-k", "abc"], "-k"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(corpus, tmp_path, capsys, argv, needle):
    if "--root" not in argv:
        argv = [*argv, *common(corpus, tmp_path / "idx")]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out = capsys.readouterr()
    assert code not in (0, None)
    lines = [ln for ln in out.err.splitlines() if ln.strip()]
    assert len(lines) == 1, out.err
    assert "error" in lines[0] and needle in lines[0]
    assert "Traceback" not in out.err


def test_profile_given_as_a_toml_path(corpus, tmp_path, capsys):
    prof = tmp_path / "mini.toml"
    prof.write_text('name = "mini"\npackage = "pycsamt"\nroots = ["pycsamt/emtools"]\n')
    code, out, _ = cli(
        capsys,
        "stats",
        "--profile",
        str(prof),
        *common(corpus, tmp_path / "i"),
        "--json",
    )
    assert code == 0
    st = json.loads(out)
    assert st["profile"] == "mini"
    assert st["n_files"] == 2


def run_module(*argv: str, env_cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(env_cache))
    return subprocess.run(
        [sys.executable, "-m", "pycsamt_lsp", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_python_dash_m_entry_point(corpus, tmp_path):
    idx = tmp_path / "idx"
    p = run_module("build", *common(corpus, idx), env_cache=tmp_path / "cache")
    assert p.returncode == 0, p.stderr
    p = run_module(
        "query",
        "StaticShiftAgent",
        *common(corpus, idx),
        "--json",
        env_cache=tmp_path / "cache",
    )
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["results"][0]["symbol"] == "pycsamt.agents.static_shift.StaticShiftAgent"
    p = run_module("stats", *common(corpus, idx), env_cache=tmp_path / "cache")
    assert p.returncode == 0 and "by workflow:" in p.stdout
    p = run_module("query", "", *common(corpus, idx), env_cache=tmp_path / "cache")
    assert p.returncode != 0
    assert len(p.stderr.strip().splitlines()) == 1
    p = run_module("--version", env_cache=tmp_path / "cache")
    assert p.returncode == 0 and "pycsamt-lsp" in p.stdout


def test_a_build_runs_without_the_cyclic_collector_unless_it_embeds() -> None:
    from pycsamt_lsp.cli import _without_cycle_collection

    assert _without_cycle_collection(["build", "--root", "x"])
    assert _without_cycle_collection(["query", "a b"])
    assert not _without_cycle_collection(["build", "--embed", "minilm"])
    assert not _without_cycle_collection(["build", "--embed=hash"])
    assert not _without_cycle_collection(["build", "--emb", "hash"])  # a prefix
    assert not _without_cycle_collection(["serve"])
    assert not _without_cycle_collection([])
