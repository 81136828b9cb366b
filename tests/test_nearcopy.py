"""The leakage gates' pruned near-copy search finds what the plain loop finds.

``nearcopy.close_pairs`` prunes pairs by difflib's ``quick_ratio`` bound
computed for many pairs at once; here it is held against one
``SequenceMatcher`` per pair (the loop the gates ran before) on real suite
questions with planted rewordings, at several thresholds, per-text limits,
and a list against itself.
"""

from __future__ import annotations

import difflib
import random
from pathlib import Path

import pytest

from nearcopy import close_pairs
from pycsamt_lsp.evals.harness import load_suite

SUITES = Path(__file__).resolve().parents[1] / "suites"


def _plain(lefts, rights, limits, upper=False):
    out = []
    for i, a in enumerate(lefts):
        for j, b in enumerate(rights):
            if upper and j <= i:
                continue
            r = difflib.SequenceMatcher(None, b, a, autojunk=False).ratio()
            if r >= limits[i]:
                out.append((i, j, r))
    return out


def _texts(n: int, seed: int) -> list[str]:
    qs = sorted(
        {
            r["query"].lower()
            for p in sorted(SUITES.rglob("*.jsonl"))
            for r in load_suite(p)
        }
    )
    rng = random.Random(seed)
    picked = rng.sample(qs, min(n, len(qs)))
    # rewordings that land near and around the thresholds, and odd texts
    planted = [q.replace("how do i", "how can i") + "?" for q in picked[:10]]
    planted += [q[: len(q) // 2] for q in picked[10:15]]
    planted += ["", "é𝄞 naïve", "x"]
    out = picked + planted
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.9])
def test_the_same_pairs_ratios_and_order_as_one_matcher_per_pair(threshold):
    lefts, rights = _texts(60, 1), _texts(80, 2)
    limits = [threshold if len(a.split()) > 3 else 0.9 for a in lefts]
    got = list(close_pairs(lefts, rights, limits))
    assert got == _plain(lefts, rights, limits)
    assert got  # the planted rewordings are found


def test_a_list_against_itself_pairs_each_with_the_ones_after_it():
    qs = _texts(70, 3)
    limits = [0.7] * len(qs)
    got = list(close_pairs(qs, qs, limits, upper=True))
    assert got == _plain(qs, qs, limits, upper=True)
    assert all(j > i for i, j, _ in got)


def test_empty_sides_give_nothing():
    assert list(close_pairs([], ["a"], [])) == []
    assert list(close_pairs(["a"], [], [0.7])) == []
