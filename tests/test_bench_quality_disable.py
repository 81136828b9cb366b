"""bench_quality's ``--disable`` passes: the frozen plan's R1 / R2 instrument
(benchmarks/ranking_frozen_plan.md, issue 14).

Driven through ``main()`` on a tiny corpus of our own, so the pass really goes
through the child process and the ``pycsamt.query`` command; only the
reference (pyCSAMT 2.6.4's assistant, its own venv) is replaced by an engine
that finds nothing, since it is not what is tested here.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_quality
from bench_quality import main, variant_ci

FILES = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: pycsamt\nVersion: 0.0\n",
    "pycsamt/__init__.py": '"""Stand-in package."""\n',
    "pycsamt/core/__init__.py": "",
    "pycsamt/core/shift.py": '''
        """Static shift tools for apparent resistivity curves."""


        def correct_static_shift(data, factor: float = 1.0):
            """Correct the galvanic static shift of apparent resistivity.

            Parameters
            ----------
            data : array
                Apparent resistivity at each station.
            """
            return data


        def remove_points(data, mask):
            """Drop the station points flagged by the mask."""
            return data
        ''',
    "pycsamt/core/phase.py": '''
        """Phase tensor analysis."""


        def strike_angle(z, freq=None):
            """Geoelectric strike angle from the phase tensor at every frequency."""
            return 0.0


        def skew_points(z):
            """Phase tensor skew of each point."""
            return 0.0
        ''',
}
QUESTIONS = [
    # skew_points is 2nd by default and falls below prose with code_first off
    {"query": "strike from phase tensor", "expected_symbols": ["skew_points"]},
    {"query": "correct the static shift", "expected_symbols": ["correct_static_shift"]},
]
R1 = "+fold,+name_cover,+head_wide"


def _corpus(tmp: Path) -> Path:
    root = tmp / "corpus"
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def no_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference side as an engine with no results (no venv needed)."""

    def ref_batch_query(root: Path, queries: list[str], k: int) -> dict[str, Any]:
        return {"results": [{"query": q, "seconds": 0.0, "hits": []} for q in queries]}

    monkeypatch.setattr(bench_quality, "ensure_ref_venv", lambda: None)
    monkeypatch.setattr(bench_quality, "ref_build", lambda root: {"returncode": 0})
    monkeypatch.setattr(bench_quality, "ref_batch_query", ref_batch_query)


def test_a_misspelt_stage_is_refused_before_anything_runs(capsys, monkeypatch):
    def must_not_run() -> None:
        raise AssertionError("ran past argument parsing")

    monkeypatch.setattr(bench_quality, "ensure_ref_venv", must_not_run)
    with pytest.raises(SystemExit) as info:
        main(["--disable", R1, "--disable", "+fold,feild_head"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--disable +fold,feild_head" in err and "'field_head'" in err
    with pytest.raises(SystemExit):
        main(["--disable", ","])  # names nothing: not a silent default pass


@pytest.mark.e2e  # CLI build and driver processes
def test_disable_passes_through_main(tmp_path: Path, no_reference, capsys):
    root = _corpus(tmp_path)
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    out = tmp_path / "out.json"
    argv = ["--corpus", f"tiny={root}", "--questions", str(qfile), "--no-routing"]
    argv += ["--disable", R1, "--disable", "code_first", "--out", str(out)]
    assert main(argv) == 0
    res = json.loads(out.read_text())["corpora"]["tiny"]
    assert list(res["disable_variants"]) == [R1, "code_first"]
    default = res["disable_default"]["by_suite"]["ALL"]
    # the default pass is ours as ranked for the main table
    assert default["mrr@10"] == res["ours"]["ALL"]["mrr@10"] == 0.75
    assert default["ndcg@10"] == pytest.approx((1 / 1.5849625007211563 + 1) / 2)
    off = res["disable_variants"]["code_first"]
    assert off["disable"] == ["code_first"]
    # the switch reached the engine: skew_points drops from rank 2 to rank 4
    assert off["by_suite"]["ALL"]["mrr@10"] == pytest.approx((0.25 + 1) / 2)
    ci = off["ci"]["ALL"]["mrr@10"]
    assert ci["n"] == 2 and ci["mean"] == pytest.approx(-0.125) and ci["worse"] == 1
    assert set(off["ci"]["ALL"]) == {"mrr@10", "hit@10", "ndcg@10"}  # no wf here
    r1 = res["disable_variants"][R1]
    assert r1["disable"] == ["+fold", "+name_cover", "+head_wide"]
    assert r1["ci"]["ALL"]["hit@10"]["n"] == 2
    table = capsys.readouterr().out
    assert "code_first" in table and "-0.125" in table and R1 in table


def test_variant_ci_pools_the_frozen_splits_and_pairs_each_metric():
    def rec(suite: str, rr: float, wf: bool | None = None) -> dict[str, Any]:
        r: dict[str, Any] = {"suite": suite, "rr": rr, "hit": float(rr > 0)}
        r["ndcg"] = rr
        if wf is not None:
            r["wf_in_top"] = wf
        return r

    base = [rec("test/a", 0.5, True), rec("test/b", 0.0), rec("tuning/x", 1.0, False)]
    alt = [rec("test/a", 1.0, True), rec("test/b", 0.5), rec("tuning/x", 1.0, True)]
    ci = variant_ci(base, alt)
    assert set(ci) == {"test/a", "test/b", "tuning/x", "test/POOLED", "ALL"}
    assert ci["test/POOLED"]["mrr@10"]["n"] == 2
    assert ci["test/POOLED"]["mrr@10"]["mean"] == 0.5
    assert ci["ALL"]["wf@10"]["n"] == 2 and ci["ALL"]["wf@10"]["mean"] == 0.5
    assert "wf@10" not in ci["test/b"]
