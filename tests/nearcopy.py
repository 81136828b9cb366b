"""Near-copy search for the leakage gates: difflib ratios, pairs pruned in bulk.

The gates (``test_suite_splits``, ``test_recipe_leakage``,
``test_dense_tuning_split``) flag every pair of texts whose
``difflib.SequenceMatcher`` ratio reaches a threshold. One matcher per pair
cost those four tests ~170 of the suite's ~550 s on a 2-core machine (~1,000
frozen questions against each other and the tuning suites, every recipe
line against every eval query): difflib's own cheap bound
(``quick_ratio``, shared characters as multisets) lets most pairs of English
questions through. A tight bound: difflib's matching blocks are a common
subsequence of the two texts, so its ratio is at most ``2 * LCS / (len(a) +
len(b))``, the normalised Indel similarity, which RapidFuzz computes for
all pairs at once in C (``process.cdist``, bit-parallel LCS). Only the pairs
whose bound reaches the threshold get the exact difflib ratio, computed as
before: the same pairs, ratios and order as the loop (``test_nearcopy``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Indel

__all__ = ["close_pairs"]

#: a bound this far below the threshold still keeps its pair (the bound is
#: exact in rationals; this absorbs the last bits of its float)
_SLACK = 1e-6
#: rows of the bound matrix made at a time (memory: rows x len(rights))
_ROWS = 256


def close_pairs(
    lefts: Sequence[str],
    rights: Sequence[str],
    limits: Sequence[float],
    *,
    upper: bool = False,
) -> Iterator[tuple[int, int, float]]:
    """``(i, j, ratio)`` for every pair with
    ``SequenceMatcher(None, rights[j], lefts[i], autojunk=False).ratio()``
    at or above ``limits[i]``, in the order of *i*, then *j*; with *upper*
    (a list against itself), only the pairs with ``j > i``."""
    if not lefts or not rights:
        return
    cutoff = max(min(limits) - _SLACK, 0.0)
    for start in range(0, len(lefts), _ROWS):
        block = lefts[start : start + _ROWS]
        bound = process.cdist(
            block,
            rights,
            scorer=Indel.normalized_similarity,
            score_cutoff=cutoff,
            dtype=np.float64,
        )
        for k, a in enumerate(block):
            i = start + k
            row = bound[k]
            if upper:
                row[: i + 1] = -1.0
            limit = limits[i]
            cand = np.flatnonzero(row >= limit - _SLACK).tolist()
            if not cand:
                continue
            sm = difflib.SequenceMatcher(None, "", a, autojunk=False)
            for j in cand:
                sm.set_seq1(rights[j])
                r = sm.ratio()
                if r >= limit:
                    yield i, j, r
