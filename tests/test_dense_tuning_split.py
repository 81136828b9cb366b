"""``suites/tuning/dense_tuning.jsonl``: the larger tuning split for dense fusion.

Why it exists: session 4 chose the dense fusion stages on fresh_tuning's 60
questions and the gain did not carry over to the frozen splits; a split of
150+ questions makes a tuning difference less likely to be noise. It is a
TUNING split, so it must never be a near-copy of a frozen test question (or
the frozen figures would be tuned on through it), and its ground truth must
be exact defining paths, as the harness scores them. These checks mirror
``tests/test_suite_splits.py`` for this one file; its ground truth (defining
paths in the sdist, ``in_checkout``) is checked there, with the other
suites' (``GROUND_TRUTH_SUITES``). A collision with a frozen
question is reported by this file's query only: the frozen text is not
printed, so a failing run does not show the test split to whoever tunes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pycsamt_lsp.evals.harness import load_suite
from test_suite_splits import (
    CATEGORIES,
    CHECKOUT,
    NEAR,
    TUNING_DIR,
    _norm,
    near_pairs,
    near_pairs_within,
)

REPO = Path(__file__).resolve().parents[1]
DENSE_TUNING = TUNING_DIR / "dense_tuning.jsonl"
TEST_DIR = REPO / "suites" / "test"


def _records() -> list[dict]:
    return load_suite(DENSE_TUNING)


def _queries_of(paths) -> list[str]:
    return [r["query"] for p in paths for r in load_suite(p)]


def test_the_split_is_large_marked_and_covers_every_kind():
    recs = _records()
    assert len(recs) >= 150
    per = Counter(r["category"] for r in recs)
    assert set(per) == CATEGORIES, per
    assert min(per.values()) >= 20, per
    for rec in recs:
        assert rec["split"] == "tuning", rec
        assert rec["expected_symbols"], rec
        assert all(s.startswith("pycsamt.") for s in rec["expected_symbols"]), rec
        assert isinstance(rec["in_checkout"], bool), rec
    head = "\n".join(
        ln
        for ln in DENSE_TUNING.read_text(encoding="utf-8").splitlines()
        if ln.startswith("#")
    ).lower()
    assert "2026-12-01" in head and "split: tuning" in head


def test_queries_are_unique_and_not_near_copies_of_each_other():
    qs = [r["query"] for r in _records()]
    assert len({_norm(q) for q in qs}) == len(qs)
    hits = near_pairs_within(qs)
    assert not hits, hits


def test_no_query_is_a_near_copy_of_another_tuning_suite():
    others = [p for p in sorted(TUNING_DIR.glob("*.jsonl")) if p != DENSE_TUNING]
    hits = near_pairs([r["query"] for r in _records()], _queries_of(others))
    assert not hits, hits


def test_no_query_is_a_near_copy_of_a_frozen_question():
    """Only this file's side of a collision is reported (module docstring)."""
    frozen = _queries_of(sorted(TEST_DIR.glob("*.jsonl")))
    assert frozen, "no frozen split found"
    qs = [r["query"] for r in _records()]
    # both orders: difflib's ratio depends on which side is the second sequence
    mine = {a for _, a, _ in near_pairs(qs, frozen)}
    mine |= {b for _, _, b in near_pairs(frozen, qs)}
    assert not mine, (
        f"near-copies (ratio >= {NEAR}) of frozen questions: {sorted(mine)}"
    )


def test_no_expected_symbol_is_one_a_frozen_split_asks_for():
    """Frozen splits 1 and 2 (there when this split was written): a tuning
    question whose answer a frozen question also expects would tune the
    frozen figure through that symbol's chunks. Only this file's side is
    reported. (Later frozen splits were written blind to this one; their
    overlap is reported by the evaluation, not failed here.)"""
    frozen = {
        s
        for name in ("frozen_test.jsonl", "frozen_test_2.jsonl")
        for r in load_suite(TEST_DIR / name)
        for s in r["expected_symbols"]
    }
    shared = [r["query"] for r in _records() if set(r["expected_symbols"]) & frozen]
    assert not shared, shared


@pytest.mark.corpus
def test_no_query_is_a_near_copy_of_a_bundled_suite(real_corpus):
    bundled = sorted((real_corpus / "pycsamt/assistant/evals/suites").glob("*.jsonl"))
    assert bundled
    if (CHECKOUT / "pycsamt/assistant/evals/suites").is_dir():
        bundled += sorted((CHECKOUT / "pycsamt/assistant/evals/suites").glob("*.jsonl"))
    hits = near_pairs([r["query"] for r in _records()], _queries_of(bundled))
    assert not hits, hits
