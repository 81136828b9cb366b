"""The project's eval suites: a tuning split and a frozen test split (issue 14).

A retrieval figure means something only on questions nobody tuned on, so the
project's own suites live in two folders: ``suites/tuning/`` (recipes and
expansions may be tuned on it) and ``suites/test/`` (written before any
further tuning, frozen). These tests keep that separation honest: the suites
parse and say which split they are, their ground truth names symbols that
really exist in the pyCSAMT sdist (exact defining paths, as the harness
scores them), and no test question is a near-copy of a tuning question or of
a bundled eval question, so tuning on one cannot quietly tune on the other.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

import pytest

from nearcopy import close_pairs
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.evals.harness import load_suite
from pycsamt_lsp.workspace.facade import Workspace

REPO = Path(__file__).resolve().parents[1]
SUITES = REPO / "suites"
TEST_DIR = SUITES / "test"
TUNING_DIR = SUITES / "tuning"
FROZEN_TEST = TEST_DIR / "frozen_test.jsonl"
#: the second frozen test split (more questions for the same figures; issue 14)
FROZEN_TEST_2 = TEST_DIR / "frozen_test_2.jsonl"
#: the third frozen test split (written blind, on symbols no other suite names)
FROZEN_TEST_3 = TEST_DIR / "frozen_test_3.jsonl"
#: the fourth frozen test split (blind, session 6; symbols no other suite names)
FROZEN_TEST_4 = TEST_DIR / "frozen_test_4.jsonl"
#: the fifth frozen test split (blind, session 7; symbols no other suite names)
FROZEN_TEST_5 = TEST_DIR / "frozen_test_5.jsonl"
#: the sixth frozen test split (blind, session 8; symbols no other suite names)
FROZEN_TEST_6 = TEST_DIR / "frozen_test_6.jsonl"
#: the seventh frozen test split (blind, session 9; half A modules only)
FROZEN_TEST_7 = TEST_DIR / "frozen_test_7.jsonl"
#: the eighth frozen test split (blind, session 13; half A modules only)
FROZEN_TEST_8 = TEST_DIR / "frozen_test_8.jsonl"
FROZEN = (
    FROZEN_TEST,
    FROZEN_TEST_2,
    FROZEN_TEST_3,
    FROZEN_TEST_4,
    FROZEN_TEST_5,
    FROZEN_TEST_6,
    FROZEN_TEST_7,
    FROZEN_TEST_8,
)
FRESH_TUNING = TUNING_DIR / "fresh_tuning.jsonl"
#: session 9's tuning questions without the package's words (half B modules)
NO_VOCAB_TUNING = TUNING_DIR / "no_vocab_tuning.jsonl"
#: session 13's tuning howto and code questions (half B modules)
HOWTO_TUNING = TUNING_DIR / "howto_tuning.jsonl"
NEW_SUITES = (*FROZEN, FRESH_TUNING, NO_VOCAB_TUNING, HOWTO_TUNING)
#: every suite whose expected symbols and in_checkout flags are checked
#: against the corpora (dense_tuning's other checks: test_dense_tuning_split)
GROUND_TRUTH_SUITES = (*NEW_SUITES, TUNING_DIR / "dense_tuning.jsonl")
CATEGORIES = {"howto", "code", "vague_api", "conceptual", "troubleshooting", "no_vocab"}
#: difflib ratio at or above which two questions count as the same question
NEAR = 0.7
#: the maintainer checkout (optional: its records are checked when present)
CHECKOUT = Path(
    os.environ.get(
        "PYCSAMT_CHECKOUT",
        Path.home() / ".cache" / "pycsamt-lsp" / "checkout" / "pycsamt-checkout",
    )
)


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def near_pairs(
    left: list[str], right: list[str], threshold: float = NEAR
) -> list[tuple[float, str, str]]:
    """Every (ratio, a, b) with ``SequenceMatcher(b, a).ratio() >= threshold``
    (both normalised), pairs that cannot reach it pruned in bulk
    (:func:`nearcopy.close_pairs`)."""
    found = close_pairs(
        [_norm(a) for a in left], [_norm(b) for b in right], [threshold] * len(left)
    )
    return [(round(r, 3), left[i], right[j]) for i, j, r in found]


def near_pairs_within(
    qs: list[str], threshold: float = NEAR
) -> list[tuple[float, str, str]]:
    """:func:`near_pairs` of each question against the ones after it."""
    norm = [_norm(q) for q in qs]
    found = close_pairs(norm, norm, [threshold] * len(qs), upper=True)
    return [(round(r, 3), qs[i], qs[j]) for i, j, r in found]


def _queries(paths) -> list[str]:
    return [r["query"] for p in paths for r in load_suite(p)]


def _header(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(ln for ln in lines if ln.startswith("#"))


# ── structure ───────────────────────────────────────────────────────────────


def test_both_splits_exist_and_parse():
    assert sorted(p.name for p in TEST_DIR.glob("*.jsonl")) == [
        "frozen_test.jsonl",
        "frozen_test_2.jsonl",
        "frozen_test_3.jsonl",
        "frozen_test_4.jsonl",
        "frozen_test_5.jsonl",
        "frozen_test_6.jsonl",
        "frozen_test_7.jsonl",
        "frozen_test_8.jsonl",
    ]
    assert {"paraphrase.jsonl", "fresh_tuning.jsonl"} <= {
        p.name for p in TUNING_DIR.glob("*.jsonl")
    }
    test = load_suite(FROZEN_TEST)
    fresh = load_suite(FRESH_TUNING)
    assert len(test) >= 120
    assert len(load_suite(FROZEN_TEST_2)) >= 100
    assert len(load_suite(FROZEN_TEST_3)) >= 140
    assert len(load_suite(FROZEN_TEST_4)) >= 120
    assert len(load_suite(FROZEN_TEST_5)) >= 120
    assert len(load_suite(FROZEN_TEST_6)) >= 120
    assert len(load_suite(FROZEN_TEST_7)) >= 120
    assert len(load_suite(FROZEN_TEST_8)) >= 120
    assert 50 <= len(fresh) <= 80
    # the paraphrase suite kept its records when it moved to the tuning split
    assert len(load_suite(TUNING_DIR / "paraphrase.jsonl")) == 62


@pytest.mark.parametrize("path", NEW_SUITES, ids=lambda p: p.name)
def test_new_records_are_marked_and_have_ground_truth(path: Path):
    split = path.parent.name
    for rec in load_suite(path):
        assert rec["split"] == split, rec
        assert rec["category"] in CATEGORIES, rec
        assert rec["expected_symbols"], rec
        assert all(s.startswith("pycsamt.") for s in rec["expected_symbols"]), rec
        assert isinstance(rec["in_checkout"], bool), rec


def test_headers_record_date_and_the_freeze():
    for path in FROZEN:
        head = _header(path).lower()
        assert "2026-12-01" in head, path.name
        assert "before any" in head and "do not tune on it" in head, path.name
    assert "2026-12-01" in _header(FRESH_TUNING)
    assert "split: tuning" in _header(TUNING_DIR / "paraphrase.jsonl").lower()
    readme = (SUITES / "README.md").read_text(encoding="utf-8")
    assert "must not be tuned on" in readme


@pytest.mark.parametrize("path", FROZEN, ids=lambda p: p.name)
def test_test_split_covers_every_kind_of_question(path: Path):
    per = Counter(r["category"] for r in load_suite(path))
    assert set(per) == CATEGORIES
    assert min(per.values()) >= 10, per
    # questions without package vocabulary are the point, not an afterthought
    assert per["no_vocab"] + per["conceptual"] + per["troubleshooting"] >= 35, per


def module_half(module: str) -> str:
    """Half ``"A"`` or ``"B"`` of the sdist's modules (benchmarks/ranking_frozen_plan.md,
    session 9): A when the first byte of the dotted name's SHA-256 is even.
    Split 7 draws only on half A and the no_vocab tuning file only on half B,
    so tuning on one cannot reach the other's modules."""
    return "A" if hashlib.sha256(module.encode()).digest()[0] % 2 == 0 else "B"


def _outside_half(recs: list[dict], half: str) -> list[str]:
    """The expected symbols of *recs* whose defining module is not in *half*."""
    return [
        s
        for r in recs
        for s in r["expected_symbols"]
        if module_half(s.rsplit(".", 1)[0]) != half
    ]


def test_no_vocab_tuning_is_half_b_and_all_no_vocab():
    recs = load_suite(NO_VOCAB_TUNING)
    assert len(recs) == 50
    assert {r["category"] for r in recs} == {"no_vocab"}
    wrong = _outside_half(recs, "B")
    assert not wrong, wrong


def test_howto_tuning_is_half_b_howto_and_code():
    recs = load_suite(HOWTO_TUNING)
    assert Counter(r["category"] for r in recs) == {"howto": 40, "code": 20}
    assert {r["split"] for r in recs} == {"tuning"}
    wrong = _outside_half(recs, "B")
    assert not wrong, wrong


def test_frozen_test_7_is_half_a_with_25_per_category():
    recs = load_suite(FROZEN_TEST_7)
    assert Counter(r["category"] for r in recs) == dict.fromkeys(CATEGORIES, 25)
    wrong = _outside_half(recs, "A")
    assert not wrong, wrong


def test_frozen_test_8_is_half_a_with_25_per_category():
    recs = load_suite(FROZEN_TEST_8)
    assert Counter(r["category"] for r in recs) == dict.fromkeys(CATEGORIES, 25)
    wrong = _outside_half(recs, "A")
    assert not wrong, wrong


def test_queries_are_unique_within_the_new_splits():
    for path in NEW_SUITES:
        qs = [_norm(q) for q in _queries([path])]
        assert len(qs) == len(set(qs)), path.name


# ── no leakage between the splits ───────────────────────────────────────────


def test_no_test_query_is_a_near_copy_of_a_tuning_query():
    tuning = _queries(sorted(TUNING_DIR.glob("*.jsonl")))
    hits = near_pairs(_queries(FROZEN), tuning)
    assert not hits, hits


def test_no_two_test_queries_are_near_copies():
    """Within a frozen split and across the two frozen splits."""
    hits = near_pairs_within(_queries(FROZEN))
    assert not hits, hits


@pytest.mark.corpus
def test_new_queries_are_not_near_copies_of_bundled_suites(real_corpus):
    bundled = sorted((real_corpus / "pycsamt/assistant/evals/suites").glob("*.jsonl"))
    assert bundled
    if (CHECKOUT / "pycsamt/assistant/evals/suites").is_dir():
        bundled += sorted((CHECKOUT / "pycsamt/assistant/evals/suites").glob("*.jsonl"))
    hits = near_pairs(_queries(NEW_SUITES), _queries(bundled))
    assert not hits, hits


def test_near_copy_detector_flags_a_planted_copy():
    """The leakage checks above can fail: a reworded test query is caught."""
    test = _queries([FROZEN_TEST])
    planted = test[7].replace("how do I", "how can I").upper() + "?"
    assert near_pairs([planted], test)
    assert not near_pairs(["plot a borehole log"], test)


# ── ground truth exists in the real package ─────────────────────────────────


def _model(root: Path, tmp: Path):
    ws = Workspace(root, load_profile(), index_dir=tmp)
    return ws.ensure_model()


@pytest.fixture(scope="module")
def sdist_model(real_corpus, tmp_path_factory):
    return _model(real_corpus, tmp_path_factory.mktemp("idx"))


@pytest.mark.corpus
@pytest.mark.parametrize("path", GROUND_TRUTH_SUITES, ids=lambda p: p.name)
def test_expected_symbols_exist_in_the_sdist(sdist_model, path: Path):
    """Each expected symbol resolves to itself: it exists and is the defining
    path (a re-export path would never match a retrieved chunk's symbol)."""
    wrong = []
    for rec in load_suite(path):
        for sym in rec["expected_symbols"]:
            res = sdist_model.resolve(sym)
            if not (res.exists and res.target == sym):
                wrong.append((sym, res.status, res.target, res.reason))
    assert not wrong, wrong


@pytest.mark.corpus
def test_in_checkout_flag_matches_the_checkout(tmp_path):
    if not (CHECKOUT / "pycsamt").is_dir():
        pytest.skip(f"maintainer checkout not found at {CHECKOUT}")
    model = _model(CHECKOUT, tmp_path)
    mismatched = []
    for path in GROUND_TRUTH_SUITES:
        for rec in load_suite(path):
            ok = all(model.resolve(s).exists for s in rec["expected_symbols"])
            if ok != rec["in_checkout"]:
                mismatched.append((path.name, rec["query"], ok))
    assert not mismatched, mismatched
