"""The paired bootstrap that says whether dense fusion measurably helps (issue 14)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_quality import dense_ci, paired_ci


def test_no_difference_is_not_measurable():
    ci = paired_ci([0.0] * 40)
    assert ci["mean"] == ci["lo"] == ci["hi"] == 0.0
    assert ci["better"] == ci["worse"] == 0


def test_a_consistent_gain_excludes_zero_and_a_mixed_one_does_not():
    gain = paired_ci([0.5] * 10 + [0.0] * 30)
    assert gain["lo"] > 0 and gain["mean"] == 0.125 and gain["better"] == 10
    mixed = paired_ci([0.5] * 10 + [-0.5] * 9 + [0.0] * 21)
    assert mixed["lo"] < 0 < mixed["hi"] and mixed["worse"] == 9
    assert paired_ci([0.5] * 10 + [0.0] * 30) == gain  # deterministic


def test_dense_ci_pairs_records_per_suite():
    b = [
        {"suite": "s", "rr": 0.5, "hit": True},
        {"suite": "s", "rr": 0.0, "hit": False},
        {"suite": "t", "wf_in_top": True},  # no symbols: not scored
    ]
    f = [
        {"suite": "s", "rr": 1.0, "hit": True},
        {"suite": "s", "rr": 0.25, "hit": True},
        {"suite": "t", "wf_in_top": True},
    ]
    ci = dense_ci(b, f)
    assert set(ci) == {"s", "ALL"}
    assert ci["s"]["mrr@10"]["n"] == 2 and ci["s"]["mrr@10"]["mean"] == 0.375
    assert ci["ALL"]["hit@10"]["mean"] == 0.5
