"""The warm start's lazy lookups answer exactly what the dicts they replace did.

``index.terms.TermIds`` (the vocabulary looked up in ``index.npz``'s blob)
and ``search.slotmap.SlotMap`` (slot arrays made on first read) exist only
to spare a fresh process work (issue 18); these tests hold every answer to
the plain ``dict`` built the old way, and a loaded index's scores and
updates to those of the index it was saved from.
"""

from __future__ import annotations

import numpy as np
import pytest

from pycsamt_lsp.index import terms as terms_mod
from pycsamt_lsp.index.bm25 import BM25Index
from pycsamt_lsp.index.terms import TermIds
from pycsamt_lsp.search.slotmap import SlotMap

WORDS = [
    "static",
    "shift",
    "staticshiftagent",
    "ss",
    "ama",
    "résistivité",  # non-ASCII: byte offsets differ from character offsets
    "日本",
    "a",
    "shifted",
    "hift",
    "x" * 300,
]


def _ids(words: list[str]) -> tuple[TermIds, dict[str, int]]:
    blob = "\n".join(words).encode("utf-8")
    return TermIds(blob, len(words)), {w: i for i, w in enumerate(words)}


def test_every_term_and_every_miss_as_the_dict() -> None:
    lazy, plain = _ids(WORDS)
    probes = [*WORDS, "stat", "shif", "tatic", "static shift", "", "\n", "\ud800", "zz"]
    for w in probes:
        assert lazy.get(w) == plain.get(w), w
        assert lazy.get(w, -1) == plain.get(w, -1), w
        assert (w in lazy) == (w in plain), w
    assert len(lazy) == len(plain)
    assert 3 not in lazy
    with pytest.raises(KeyError):
        lazy["nope"]
    assert lazy["résistivité"] == 5
    assert list(lazy) == list(plain)
    assert dict(lazy.items()) == plain
    assert lazy.materialized() == plain


def test_the_dict_is_made_after_many_lookups_with_the_same_answers() -> None:
    words = [f"term{i}" for i in range(200)]
    lazy, plain = _ids(words)
    for w in words[: terms_mod.EAGER_AFTER]:
        assert lazy.get(w) == plain[w]
    assert lazy._dict is None  # what the laziness is
    assert lazy.get("term150") == 150
    assert lazy._dict == plain
    assert lazy.get("term999") is None


def test_an_empty_vocabulary() -> None:
    lazy = TermIds(b"", 0)
    assert len(lazy) == 0 and lazy.get("") is None and "" not in lazy
    assert list(lazy) == []


def _index() -> BM25Index:
    docs = [
        {"static": 2, "shift": 1, "ss": 1},
        {"résistivité": 1, "apparent": 3},
        {"shift": 2, "phase": 1, "tensor": 1},
        {"static": 1, "apparent": 1, "日本": 1},
    ]
    return BM25Index.build(docs)


def test_a_loaded_index_scores_and_updates_as_the_one_saved() -> None:
    built = _index()
    loaded = BM25Index.from_arrays(built.arrays())
    assert isinstance(loaded.vocab, TermIds)
    for q in (["static", "shift"], ["apparent", "résistivité"], ["nope"], ["日本"]):
        assert np.array_equal(built.scores(q), loaded.scores(q))
    assert {k: loaded.vocab[k] for k in built.vocab} == dict(built.vocab)
    # persisting a loaded index writes the same arrays
    for k, v in built.arrays().items():
        assert np.array_equal(v, loaded.arrays()[k]), k
    # an update with a new term and one without
    add = [{"static": 1, "inversion": 2}, {"shift": 1}]
    a, a_slots = built.updated([1], add)
    b, b_slots = loaded.updated([1], add)
    assert a_slots == b_slots
    assert dict(a.vocab) == dict(b.vocab)
    for q in (["static"], ["inversion", "shift"], ["apparent"]):
        assert np.array_equal(a.scores(q), b.scores(q))
    same, _ = loaded.updated([], [{"static": 1}])
    assert isinstance(loaded.vocab, TermIds)
    # no new term: the update shares the loaded vocabulary's one dict
    assert same.vocab is loaded.vocab.materialized()


def test_slot_map_reads_as_a_dict_of_arrays() -> None:
    lists = {"b": [3, 1], "a": [0], "c": [2, 5, 7]}
    lazy = SlotMap({k: list(v) for k, v in lists.items()})
    plain = {k: np.array(v, np.int64) for k, v in lists.items()}
    assert list(lazy) == list(plain) and len(lazy) == 3
    assert "a" in lazy and "z" not in lazy
    assert lazy.get("z") is None and lazy.get("z", plain["a"]) is plain["a"]
    got = lazy.get("c")
    assert got is not None and got.dtype == np.int64
    assert np.array_equal(got, plain["c"])
    assert lazy["c"] is got  # made once
    whole = lazy.materialized()
    assert list(whole) == list(plain)
    assert all(np.array_equal(whole[k], plain[k]) for k in plain)
    assert {k: v.tolist() for k, v in dict(lazy).items()} == lists


def test_once_materialized_only_the_dicts_are_kept() -> None:
    lazy, plain = _ids(WORDS)
    assert lazy.get("shift") == 1  # a blob lookup first
    assert lazy.materialized() == plain
    assert lazy._blob == b"" and lazy._newlines is None  # a server keeps the dict
    assert all(lazy.get(w) == i for w, i in plain.items())
    assert lazy.get("stat") is None and len(lazy) == len(plain)

    lists = {"b": [3, 1], "a": [0]}
    slots = SlotMap({k: list(v) for k, v in lists.items()})
    first = slots["b"]
    whole = slots.materialized()
    assert whole["b"] is first  # the array already made is kept
    assert slots._lists == {}
    assert list(slots) == ["b", "a"] and len(slots) == 2 and "a" in slots
    assert slots.get("z") is None and slots["a"].tolist() == [0]
