"""The name field of code chunks, scored with BM25 (stage ``field_bm25``).

The seed scores one bag of words per chunk, so the symbol's own name weighs
no more than a word deep in its docstring or code. This field holds only
what names the chunk: the leaf name of a function or class, and the class
with the method name for a method, split like every identifier
(``plot_phase_tensor_map`` -> ``plot_phase_tensor_map``, ``plot``, ``phase``,
``tensor``, ``map``). It is built from the chunk table's symbol column, so no
chunk text is read and a warm start costs what it did.

Scores are BM25 (the index's ``k1`` and ``b``) with the field's own
statistics. The field keeps term frequencies, not weights: a saved file
changes the statistics (document count, mean length, a few document
frequencies) and so every weight, but :meth:`NameField.updated` only has to
touch the postings of the changed file's terms. A term's weights are
computed when a query first uses it, from integers kept exactly, so they are
the same bits whether the field was built at once or updated save by save.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from pycsamt_lsp.index.bm25 import K1, B
from pycsamt_lsp.index.tokenize import term_counts

__all__ = ["CODE_KINDS", "NameField", "PackedPostings", "merge_groups", "name_text"]

CODE_KINDS = frozenset({"python_symbol", "python_method"})
_EMPTY_SLOTS = np.zeros(0, np.int64)
#: scores_counts: added to every posting's weight, so a sum's multiple of it
#: counts the terms (a power of two: the multiples are exact)
_TAG = 1024.0


def name_text(symbol: str | None, kind: str) -> str:
    """What names a code chunk: the leaf, plus its class for a method."""
    if not symbol or kind not in CODE_KINDS:
        return ""
    parts = symbol.split(".")
    if kind == "python_method" and len(parts) >= 2:
        return " ".join(parts[-2:])
    return parts[-1]


@lru_cache(maxsize=65_536)
def _name_terms(text: str) -> tuple[tuple[str, int], ...]:
    """``term_counts(text)`` as pairs, remembered across builds and updates
    (names repeat: ``__init__``, ``plot``, ``get``)."""
    return tuple(term_counts(text).items())


def merge_groups(
    groups: dict[str, Any],
    gone: Iterable[str],
    dead: np.ndarray | None,
    keys: Sequence[str],
    cols: tuple[np.ndarray, ...],
) -> None:
    """Update *groups* (``key -> tuple of parallel arrays``, the first one
    slots) in place.

    Rows whose slot is *dead* leave the groups of the keys in *gone*; the new
    rows ``keys[i] -> cols[*][i]`` (ascending slots, above every old one) are
    appended to their key's group; a group left empty is removed. All keys
    at once, with one sort: per-key numpy calls would cost more than the
    work on the few rows each key has.
    """
    touched = list(dict.fromkeys([*gone, *keys]))
    if not touched:
        return
    local = {k: i for i, k in enumerate(touched)}
    old = [(i, groups[k]) for i, k in enumerate(touched) if k in groups]
    sizes = [len(g[0]) for _, g in old]
    parts = [[g[c] for _, g in old] + [cols[c]] for c in range(len(cols))]
    owner = np.concatenate(
        (
            np.repeat(np.array([i for i, _ in old], np.int64), sizes),
            np.fromiter(map(local.__getitem__, keys), np.int64, len(keys)),
        )
    )
    merged = [np.concatenate(p) for p in parts]
    if dead is not None and old:
        keep = np.ones(len(owner), bool)
        keep[: sum(sizes)] = ~dead[merged[0][: sum(sizes)]]
        owner = owner[keep]
        merged = [m[keep] for m in merged]
    order = np.argsort(owner, kind="stable")
    merged = [m[order] for m in merged]
    ptr = np.zeros(len(touched) + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=len(touched)), out=ptr[1:])
    bounds = ptr.tolist()
    for i, k in enumerate(touched):
        a, b = bounds[i], bounds[i + 1]
        if a == b:
            groups.pop(k, None)
        else:
            groups[k] = tuple(m[a:b] for m in merged)


class PackedPostings(Mapping[str, tuple[np.ndarray, np.ndarray]]):
    """``term -> (slots, tfs)`` over two flat arrays, a term's pair sliced on
    first use.

    Why: a loaded field (:meth:`NameField.from_arrays`) would otherwise slice
    ~5,000 terms' postings up front (~5-10 ms of a fresh query process,
    which looks up a handful; warm start, issue 18). The pairs are the same
    arrays' views a built field holds, so scores are the same bits.
    """

    __slots__ = ("_bounds", "_f", "_full", "_index", "_memo", "_rows")

    def __init__(
        self, terms: Sequence[str], ptr: np.ndarray, rows: np.ndarray, f: np.ndarray
    ) -> None:
        self._index = dict(zip(terms, range(len(terms)), strict=True))
        self._bounds: list[int] = ptr.tolist()
        self._rows, self._f = rows, f
        self._memo: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._full: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def __getitem__(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        hit = self._memo.get(term)
        if hit is None:
            i = self._index[term]
            a, b = self._bounds[i], self._bounds[i + 1]
            hit = self._memo[term] = (self._rows[a:b], self._f[a:b])
        return hit

    def get(self, term: str, default: Any = None) -> Any:
        """The term's pair or *default* (the hot lookup: no exception)."""
        hit = self._memo.get(term)
        if hit is not None:
            return hit
        return self[term] if term in self._index else default

    def __contains__(self, term: object) -> bool:
        return term in self._index

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def materialized(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Every term's pair in a new plain dict (what an update copies and
        edits). The pairs are sliced once (~8-16 ms for ~5,500 terms, which
        the server spends after its first answer, ``Published.prepare``, not
        in the first save); later calls copy that dict."""
        full = self._full
        if full is None:
            full = self._full = {t: self[t] for t in self._index}
        return dict(full)


@dataclass(frozen=True, eq=False)
class NameField:
    """Term -> (live slots, term frequencies) over the name field of every slot.

    ``lens`` is each slot's field length (0: no field, or a removed slot);
    ``n_docs`` and ``total`` (the sum of ``lens``) are exact integers, so an
    updated field has exactly the statistics of one built from scratch.
    """

    n_slots: int
    postings: Mapping[str, tuple[np.ndarray, np.ndarray]]
    lens: np.ndarray  # float64 (integer values), len n_slots
    n_docs: int
    total: float
    k1: float = K1
    b: float = B
    #: term -> BM25 weights aligned with its postings, filled on first use
    _weights: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        symbols: Sequence[str | None],
        kinds: Sequence[str],
        alive: np.ndarray | None = None,
        *,
        k1: float = K1,
        b: float = B,
    ) -> NameField:
        """The field of every live slot (others have an empty field).

        Vectorised: one pass collects ``(slot, term, tf)`` triples (names
        repeat, so each distinct name is split once), then numpy groups them
        by term.
        """
        n = len(symbols)
        vocab: dict[str, int] = {}
        split: dict[str, list[tuple[int, int]]] = {}
        rows: list[int] = []
        terms: list[int] = []
        tfs: list[int] = []
        live = range(n) if alive is None else np.flatnonzero(alive).tolist()
        for slot in live:
            text = name_text(symbols[slot], kinds[slot])
            if not text:
                continue
            pairs = split.get(text)
            if pairs is None:
                pairs = [
                    (vocab.setdefault(t, len(vocab)), c) for t, c in _name_terms(text)
                ]
                split[text] = pairs
            for tid, c in pairs:
                rows.append(slot)
                terms.append(tid)
                tfs.append(c)
        if not rows:
            return cls(n, {}, np.zeros(n), 0, 0.0, k1, b)
        row = np.array(rows, np.int64)
        term = np.array(terms, np.int64)
        f = np.array(tfs, np.float64)
        lens = np.bincount(row, weights=f, minlength=n)
        order = np.argsort(term, kind="stable")
        row, f = row[order], f[order]
        ptr = np.zeros(len(vocab) + 1, np.int64)
        np.cumsum(np.bincount(term, minlength=len(vocab)), out=ptr[1:])
        postings = {
            t: (row[ptr[i] : ptr[i + 1]], f[ptr[i] : ptr[i + 1]])
            for t, i in vocab.items()
        }
        return cls(
            n,
            postings,
            lens,
            int(np.count_nonzero(lens)),
            float(lens.sum()),
            k1,
            b,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The field as flat arrays (:meth:`from_arrays` makes it again, the
        same postings, lengths and statistics to the bit)."""
        terms = list(self.postings)
        pairs = [self.postings[t] for t in terms]
        ptr = np.zeros(len(terms) + 1, np.int64)
        np.cumsum([len(r) for r, _ in pairs], out=ptr[1:])
        return {
            "terms": np.frombuffer("\n".join(terms).encode("utf-8"), np.uint8),
            "ptr": ptr,
            "rows": np.concatenate([r for r, _ in pairs] or [_EMPTY_SLOTS]),
            "tfs": np.concatenate([f for _, f in pairs] or [np.zeros(0)]),
            "lens": np.asarray(self.lens, np.float64),
            "stats": np.array([self.n_slots, self.n_docs], np.int64),
            "params": np.array([self.total, self.k1, self.b], np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> NameField:
        """The field :meth:`to_arrays` wrote; ``ValueError`` when they disagree."""
        raw = bytes(arrays["terms"]).decode("utf-8")
        terms = raw.split("\n") if raw else []
        ptr, rows, tfs, lens = (arrays[k] for k in ("ptr", "rows", "tfs", "lens"))
        n_slots, n_docs = (int(x) for x in arrays["stats"])
        total, k1, b = (float(x) for x in arrays["params"])
        if (
            len(ptr) != len(terms) + 1
            or int(ptr[-1]) != len(rows)
            or len(rows) != len(tfs)
            or len(lens) != n_slots
            or rows.dtype != np.int64
            or tfs.dtype != np.float64
            or (len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n_slots))
        ):
            raise ValueError("name field arrays disagree")
        return cls(
            n_slots, PackedPostings(terms, ptr, rows, tfs), lens, n_docs, total, k1, b
        )

    def updated(
        self,
        symbols: Sequence[str | None],
        kinds: Sequence[str],
        drop: Iterable[int],
        start: int,
    ) -> NameField:
        """This field without slots *drop* and with slots ``start..`` of the
        table columns *symbols* / *kinds* (the slots an update appended).

        Costs the changed slots' terms, not the corpus: unchanged postings
        are shared with this field; only the statistics change for all.
        """
        n = len(symbols)
        lens = np.zeros(n)
        lens[: self.n_slots] = self.lens
        n_docs, total = self.n_docs, self.total
        gone: set[str] = set()
        dead = np.zeros(self.n_slots, bool)
        for slot in drop:
            if not (0 <= slot < self.n_slots and lens[slot] > 0.0):
                continue
            gone.update(
                t for t, _ in _name_terms(name_text(symbols[slot], kinds[slot]))
            )
            dead[slot] = True
            total -= lens[slot]
            n_docs -= 1
            lens[slot] = 0.0
        keys: list[str] = []
        rows: list[int] = []
        tfs: list[int] = []
        for slot in range(start, n):
            text = name_text(symbols[slot], kinds[slot])
            if not text:
                continue
            length = 0
            for t, c in _name_terms(text):
                keys.append(t)
                rows.append(slot)
                tfs.append(c)
                length += c
            lens[slot] = float(length)
            total += float(length)
            # a document as build counts one: a name with terms (a leaf of
            # stopwords or one letter, ``x``, ``get``, has none, and a drop
            # never counted it off: n_docs drifted from a fresh build's)
            n_docs += length > 0
        postings = (
            self.postings.materialized()
            if isinstance(self.postings, PackedPostings)
            else dict(self.postings)
        )
        merge_groups(
            postings,
            gone,
            dead,
            keys,
            (np.array(rows, np.int64), np.array(tfs, np.float64)),
        )
        return NameField(n, postings, lens, n_docs, total, self.k1, self.b)

    def _weight(self, slots: np.ndarray, f: np.ndarray) -> np.ndarray:
        """BM25 weights of one term's postings (one term: one idf)."""
        df = np.full(1, float(len(slots)))
        idf = np.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))
        k1, b = self.k1, self.b
        avgdl = self.total / self.n_docs
        return (
            idf * f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * self.lens[slots] / avgdl))
        )

    def scores(self, tokens: Iterable[str], slots: np.ndarray) -> np.ndarray:
        """The field's BM25 for the unique *tokens*, at the given *slots*."""
        out: np.ndarray | None = None
        for term in dict.fromkeys(tokens):
            hit = self.postings.get(term)
            if hit is None:
                continue
            w = self._weights.get(term)
            if w is None:
                w = self._weights[term] = self._weight(*hit)  # one dict store
            if out is None:
                out = np.zeros(self.n_slots)
            out[hit[0]] += w
        return np.zeros(len(slots)) if out is None else out[slots]

    def scores_counts(
        self, tokens: Iterable[str], slots: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores` and, at the same *slots*, how many of the unique
        *tokens* each slot's field holds (stage ``name_cover``).

        One scatter per term, as :meth:`scores`: each posting adds its
        weight plus :data:`_TAG`, so the count is the sum's whole multiple
        of the tag (a name holds a few terms, each weighing at most
        ``idf (k1 + 1)``, far below the tag). The scores equal
        :meth:`scores`' up to rounding in the last bits.
        """
        out: np.ndarray | None = None
        for term in dict.fromkeys(tokens):
            hit = self.postings.get(term)
            if hit is None:
                continue
            key = "\0" + term  # no term holds a NUL
            w = self._weights.get(key)
            if w is None:
                base = self._weights.get(term)
                if base is None:
                    base = self._weights[term] = self._weight(*hit)
                w = self._weights[key] = base + _TAG
            if out is None:
                out = np.zeros(self.n_slots)
            out[hit[0]] += w
        if out is None:  # two arrays: a caller may scale either in place
            return np.zeros(len(slots)), np.zeros(len(slots))
        got = out[slots]
        m = np.floor(got / _TAG)
        return got - m * _TAG, m
