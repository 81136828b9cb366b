"""Numpy BM25 against a naive pure-Python Okapi BM25 written here (DESIGN 5)."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from pycsamt_lsp.index.bm25 import K1, B, BM25Index

VOCAB = [f"w{i}" for i in range(60)] + ["static", "shift", "phase", "tensor"]


def naive_bm25(docs: list[Counter], query: list[str], k1=1.5, b=0.75) -> list[float]:
    """Okapi BM25, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), unique query terms."""
    n = len(docs)
    if n == 0:
        return []
    lens = [sum(d.values()) for d in docs]
    avgdl = sum(lens) / n
    out = []
    terms = list(dict.fromkeys(query))
    for d, dl in zip(docs, lens, strict=True):
        s = 0.0
        for t in terms:
            df = sum(1 for x in docs if x.get(t, 0) > 0)
            if df == 0:
                continue
            tf = d.get(t, 0)
            if tf == 0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        out.append(s)
    return out


def random_docs(rng: random.Random, n: int) -> list[Counter]:
    docs = []
    for _ in range(n):
        length = rng.randint(1, 40)
        # a skewed distribution so some terms are common and some rare
        words = [
            VOCAB[min(int(rng.expovariate(0.08)), len(VOCAB) - 1)]
            for _ in range(length)
        ]
        docs.append(Counter(words))
    return docs


def random_query(rng: random.Random) -> list[str]:
    q = [rng.choice(VOCAB) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.5:
        q.append(q[0])  # a repeated term counts once
    if rng.random() < 0.3:
        q.append("unknownterm")
    return q


def test_constants():
    assert (K1, B) == (1.5, 0.75)


@pytest.mark.parametrize("seed", range(8))
def test_parity_with_naive_bm25_on_random_docs(seed):
    rng = random.Random(seed)
    docs = random_docs(rng, rng.randint(1, 120))
    index = BM25Index.build(docs)
    for _ in range(25):
        q = random_query(rng)
        got = index.scores(q)
        assert got.shape == (len(docs),)
        np.testing.assert_allclose(got, naive_bm25(docs, q), rtol=1e-9, atol=1e-12)


def test_repeated_query_terms_count_once():
    docs = [Counter({"static": 2, "x1": 1}), Counter({"shift": 1}), Counter({"x2": 3})]
    index = BM25Index.build(docs)
    np.testing.assert_allclose(
        index.scores(["static", "static", "static"]), index.scores(["static"])
    )


def test_unknown_terms_and_empty_queries_score_zero():
    index = BM25Index.build([Counter({"a1": 1}), Counter({"b1": 2})])
    assert not index.scores(["zzz"]).any()
    assert not index.scores([]).any()
    empty = BM25Index.build([])
    assert empty.scores(["a1"]).shape == (0,)
    assert empty.n_docs == 0


def test_idf_is_never_negative_for_ubiquitous_terms():
    docs = [Counter({"common": 1, f"u{i}": 1}) for i in range(10)]
    s = BM25Index.build(docs).scores(["common"])
    assert (s > 0).all()
    np.testing.assert_allclose(s, naive_bm25(docs, ["common"]))


@pytest.mark.parametrize("seed", range(6))
def test_incremental_updates_equal_a_rebuild(seed):
    """Remove/add slots in many rounds (past the compaction threshold)."""
    rng = random.Random(100 + seed)
    docs = random_docs(rng, 80)
    index = BM25Index.build(docs)
    live: dict[int, Counter] = dict(enumerate(docs))
    compactions = 0
    for _round in range(30):
        remove = rng.sample(sorted(live), k=min(len(live), rng.randint(0, 4)))
        add = random_docs(rng, rng.randint(0, 4))
        before_main = index.main_n_slots
        index, new_slots = index.updated(remove, add)
        compactions += index.main_n_slots != before_main
        for s in remove:
            del live[s]
        assert len(new_slots) == len(add)
        live.update(zip(new_slots, add, strict=True))
        assert index.n_docs == len(live)
        slots = sorted(live)
        ref_docs = [live[s] for s in slots]
        fresh = BM25Index.build(ref_docs)
        assert index.avgdl == pytest.approx(fresh.avgdl)
        for _ in range(5):
            q = random_query(rng)
            got = index.scores(q)
            np.testing.assert_allclose(
                got[slots], fresh.scores(q), rtol=1e-9, atol=1e-12
            )
            np.testing.assert_allclose(
                got[slots], naive_bm25(ref_docs, q), rtol=1e-9, atol=1e-12
            )
            dead = np.setdiff1d(np.arange(index.n_slots), slots)
            assert not got[dead].any()
    assert compactions >= 1  # the delta segment was folded at least once


def test_update_keeps_the_old_index_untouched():
    docs = [Counter({"a1": 1}), Counter({"a1": 2, "b1": 1})]
    old = BM25Index.build(docs)
    before = old.scores(["a1", "b1"]).copy()
    new, slots = old.updated([0], [Counter({"b1": 5, "c1": 1})])
    assert slots == [2]
    np.testing.assert_array_equal(old.scores(["a1", "b1"]), before)
    assert old.n_docs == 2 and new.n_docs == 2
    assert new.scores(["c1"])[2] > 0
    assert "c1" not in old.vocab


def test_removing_every_holder_of_a_term_zeroes_it():
    docs = [Counter({"rare": 1, "x1": 1}), Counter({"x1": 1})]
    index, _ = BM25Index.build(docs).updated([0], [])
    assert not index.scores(["rare"]).any()
    assert index.term_ids(["rare"]).size == 0


def test_compacted_and_persisted_forms_score_the_same():
    rng = random.Random(7)
    docs = random_docs(rng, 50)
    index = BM25Index.build(docs)
    index, _ = index.updated([1, 2, 3], random_docs(rng, 3))
    q = ["w1", "w2", "static", "w10"]
    ref = index.scores(q)
    np.testing.assert_allclose(index.compacted().scores(q), ref)
    restored = BM25Index.from_arrays(index.arrays())
    np.testing.assert_allclose(restored.scores(q), ref)
    slots = np.flatnonzero(index.alive)
    np.testing.assert_allclose(index.renumbered(slots).scores(q), ref[slots])


def test_from_arrays_rejects_inconsistent_input():
    a = BM25Index.build([Counter({"a1": 1})]).arrays()
    a["df"] = np.zeros(5, np.int64)
    with pytest.raises(ValueError):
        BM25Index.from_arrays(a)


@pytest.mark.parametrize("seed", range(3))
def test_update_statistics_equal_a_rebuild_exactly(seed):
    """df per term and each document's length after updates (repeated slots
    and term counts mixed, removals with a duplicate) are exactly a rebuild's;
    an update that brings no new term shares the vocabulary (no copy)."""
    rng = random.Random(300 + seed)
    docs = random_docs(rng, 60)
    index = BM25Index.build(docs)
    live: dict[int, Counter] = dict(enumerate(docs))
    for _round in range(12):
        remove = rng.sample(sorted(live), k=min(len(live), rng.randint(1, 5)))
        keep = [s for s in sorted(live) if s not in remove]
        again = rng.sample(keep, k=min(len(keep), 2))  # unchanged chunks re-added
        fresh = random_docs(rng, rng.randint(0, 3))
        add: list = [*again, *fresh]
        index, new_slots = index.updated([*remove, remove[0]], add)
        for s in remove:
            del live[s]
        for s, d in zip(new_slots, [*(live[s] for s in again), *fresh], strict=True):
            live[s] = d
        slots = sorted(live)
        ref = BM25Index.build([live[s] for s in slots])
        for term, tid in ref.vocab.items():
            assert index.df[index.vocab[term]] == ref.df[tid]
        np.testing.assert_array_equal(index.doc_len[slots], ref.doc_len)
    before = index.vocab
    same, _ = index.updated([], [dict(live[sorted(live)[0]])])
    assert same.vocab is before


def test_updates_from_one_index_twice_leave_each_other_alone():
    """Row arrays grow into spare room only from the newest index of a
    buffer: a second update of the same index (a branch) copies, so the
    first update's index still scores as before, and every branch scores as
    a rebuild of its own documents."""
    rng = random.Random(11)
    base_docs = random_docs(rng, 30)
    base = BM25Index.build(base_docs)

    def step(idx, live, remove, add):
        new, slots = idx.updated(remove, add)
        live = {s: d for s, d in live.items() if s not in remove}
        live.update(zip(slots, add, strict=True))
        return new, live

    live0 = dict(enumerate(base_docs))
    one, live1 = step(base, live0, [0], random_docs(rng, 2))
    two, live2 = step(one, live1, [1], random_docs(rng, 2))  # in one's room
    q = [*random_query(rng), "common"]
    kept = (one.scores(q).copy(), one.doc_terms.copy(), two.scores(q).copy())
    branch, live3 = step(one, live1, [2], random_docs(rng, 3))  # one is not newest
    again, live4 = step(base, live0, [3], random_docs(rng, 1))
    np.testing.assert_array_equal(one.scores(q), kept[0])
    np.testing.assert_array_equal(one.doc_terms, kept[1])
    np.testing.assert_array_equal(two.scores(q), kept[2])
    for idx, live in ((one, live1), (two, live2), (branch, live3), (again, live4)):
        slots = sorted(live)
        fresh = BM25Index.build([live[s] for s in slots])
        np.testing.assert_allclose(
            idx.scores(q)[slots], fresh.scores(q), rtol=1e-9, atol=1e-12
        )
