"""dense_eval's nDCG@10 and pooled groups (the frozen-split instrument, issue 14)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from dense_eval import POOLED, groups, ndcg_at_10, summary


def _hits(*symbols: str | None) -> list[dict[str, str | None]]:
    return [{"symbol": s} for s in symbols]


def test_ndcg_binary_gains_each_expected_symbol_once():
    assert ndcg_at_10(_hits("a.b.f", "a.b.g"), ["a.b.f", "a.b.g"]) == 1.0
    # the same symbol twice counts once; the second expected one at rank 3
    got = ndcg_at_10(_hits("a.b.f", "a.b.f", "a.b.g"), ["a.b.f", "a.b.g"])
    ideal = 1 + 1 / math.log2(3)
    assert math.isclose(got, (1 + 1 / math.log2(4)) / ideal)
    assert ndcg_at_10(_hits(None, "x.y"), ["a.b.f"]) == 0.0
    # matched as MRR@10 is: a re-export by its module prefix
    assert ndcg_at_10(_hits("pkg.sub.mod.Cls"), ["pkg.sub.Cls"]) == 1.0
    # only the top 10 count
    assert ndcg_at_10(_hits(*[None] * 10, "a.b.f"), ["a.b.f"]) == 0.0


def test_groups_pool_every_test_split_and_skip_records_without_symbols():
    rows = [
        (
            {"suite": "test/frozen_test", "rr": 0.5, "hit": 1.0, "ndcg": 0.5},
            {"suite": "test/frozen_test", "rr": 1.0, "hit": 1.0, "ndcg": 1.0},
        ),
        (
            {"suite": "test/frozen_test_4", "rr": 0.0, "hit": 0.0, "ndcg": 0.0},
            {"suite": "test/frozen_test_4", "rr": 0.5, "hit": 1.0, "ndcg": 0.6},
        ),
        (
            {"suite": "tuning/x", "rr": 1.0, "hit": 1.0, "ndcg": 1.0},
            {"suite": "tuning/x", "rr": 1.0, "hit": 1.0, "ndcg": 1.0},
        ),
        (
            {"suite": "test/frozen_test", "wf_in_top": True},
            {"suite": "test/frozen_test", "wf_in_top": True},
        ),
    ]
    g = groups(rows)
    assert (
        len(g[POOLED]) == 2 and len(g["ALL"]) == 3 and len(g["test/frozen_test"]) == 1
    )
    s = summary(g[POOLED])
    assert s["n"] == 2 and s["mrr@10"]["bm25"] == 0.25 and s["mrr@10"]["fused"] == 0.75
    assert s["mrr@10"]["diff"]["mean"] == 0.5 and s["hit@10"]["diff"]["better"] == 1
