"""Okapi BM25 in numpy, with segment-style incremental updates.

Layout (Lucene-like, so one saved file costs milliseconds, not a rebuild):

* every document lives in a *slot*; its term ids and term frequencies are
  kept row-wise (CSR: ``doc_ptr``, ``doc_terms``, ``doc_tfs``) so removing it
  can decrement document frequencies exactly;
* a *main* segment holds term-major postings (CSC: ``post_ptr``,
  ``post_doc``, ``post_tf``) for the slots it was built from;
* slots added later sit in a small *delta* segment, rebuilt per update;
  removed slots are masked (``alive``) and their statistics subtracted;
* ``compacted()`` folds delta and tombstones into a fresh main segment.

Collection statistics (N, avgdl, df) are always exact, so scores equal a full
rebuild of the same documents (tests check this). Instances are immutable:
``updated()`` returns a new index sharing unchanged arrays, so readers of the
old snapshot are never disturbed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import chain
from typing import Any, cast

import numpy as np

from pycsamt_lsp.index.mapped import release
from pycsamt_lsp.index.terms import TermIds

__all__ = ["K1", "B", "BM25Index", "DocTerms", "idf", "term_score"]

K1 = 1.5
B = 0.75
#: Fold the delta segment into main once it holds this share of the slots.
_COMPACT_SHARE = 0.10
#: Query-term weights kept per index (postings; 8 bytes each): ~4 MB.
_CACHED_POSTINGS = 1 << 19
_NO_DOCS = np.zeros(0, np.int32)

DocTerms = tuple[np.ndarray, np.ndarray]  # (term ids int32, tf float32)


def idf(n_docs: Any, df: Any) -> Any:
    """Okapi idf with the +1 floor (never negative): ``log(1 + (N - df + .5) / (df + .5))``.

    Arrays in, array out (the index); plain numbers in, a float out
    (developer search, which scores a handful of files).
    """
    if isinstance(df, np.ndarray):
        d = df.astype(np.float64)
        return np.log(1.0 + (n_docs - d + 0.5) / (d + 0.5))
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def term_score(
    weight: Any, tf: Any, dl: Any, avgdl: float, *, k1: float = K1, b: float = B
) -> Any:
    """One term's BM25 contribution: ``weight * tf (k1+1) / (tf + k1 (1 - b + b dl/avgdl))``.

    *weight* is the term's idf (times any per-term weight); works on numbers
    and on numpy arrays alike, with one order of operations for both.
    """
    return weight * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * dl / avgdl))


def _csc(
    doc_ptr: np.ndarray,
    doc_terms: np.ndarray,
    doc_tfs: np.ndarray,
    slots: np.ndarray,
    n_terms: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Term-major postings of the given *slots* (row-wise input; slots
    sorted and distinct, as every caller passes them)."""
    if len(slots) == 0:
        return (
            np.zeros(n_terms + 1, np.int64),
            np.zeros(0, np.int32),
            np.zeros(0, np.float32),
        )
    n_rows = len(doc_ptr) - 1
    if len(slots) == n_rows and slots[0] == 0 and slots[-1] == n_rows - 1:
        # every row (a build, a compaction without removals): the row-wise
        # arrays are the input as they are; gathering them through an index
        # array cost two 8-byte-per-term temporaries at a build's peak
        lens = np.diff(doc_ptr)
        terms, tfs = doc_terms, doc_tfs
    else:
        starts, ends = doc_ptr[slots], doc_ptr[slots + 1]
        lens = ends - starts
        idx = np.repeat(
            starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens
        ) + np.arange(lens.sum())
        terms = doc_terms[idx]
        tfs = doc_tfs[idx]
    docs = np.repeat(slots.astype(np.int32), lens)
    # the same stable order from 16-bit keys when the ids fit: numpy sorts
    # those by radix (~10 ms for the sdist's 553k postings, against 45 ms
    # of timsort on the int32 ids, on a build's serial end)
    keys = terms.astype(np.uint16) if n_terms <= 1 << 16 else terms
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(terms, minlength=n_terms)
    ptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, docs[order], tfs[order]


#: one append into a row buffer at a time (:func:`_appended`)
_FILL_LOCK = threading.Lock()


class _RowBuffer(np.ndarray):
    """The memory of a grow-only row array (:func:`_appended`); ``filled``
    is the length of the longest view of it handed out."""

    filled: int = 0


def _appended(old: np.ndarray, add: np.ndarray) -> np.ndarray:
    """``np.concatenate((old, add))`` without copying *old* again and again.

    The row-wise term arrays (~2 MB each on the sdist) were copied whole by
    every update; a save adds a few thousand entries. The result is a plain
    array over a buffer with spare room: the next append writes into that
    room when *old* is the longest view handed out of it (no newer index
    was made from it), else it copies. Views already handed out never
    change, so indexes stay immutable for their readers.
    """
    m = len(add)
    buf = old.base
    if (
        isinstance(buf, _RowBuffer)
        and buf.dtype == old.dtype
        and old.ndim == 1
        and old.strides == buf.strides
        and old.__array_interface__["data"][0] == buf.__array_interface__["data"][0]
    ):
        with _FILL_LOCK:
            n = len(old)
            if buf.filled == n and n + m <= len(buf):
                buf[n : n + m] = add
                buf.filled = n + m
                return np.ndarray((n + m,), old.dtype, buffer=buf)
    n = len(old)
    buf = _RowBuffer(shape=(n + m + max(m, (n + m) // 8),), dtype=old.dtype)
    buf[:n] = old
    release(old)  # a loaded index's mapped pages that copy read (issue 18)
    buf[n : n + m] = add
    buf.filled = n + m  # ~12% room left
    return np.ndarray((n + m,), old.dtype, buffer=buf)


def _doc_len(doc_ptr: np.ndarray, doc_tfs: np.ndarray) -> np.ndarray:
    """Each row's length (sum of its term frequencies), float64, summed one
    way for every construction path so equal rows give equal lengths."""
    cum = np.zeros(len(doc_tfs) + 1, np.float64)
    np.cumsum(doc_tfs, out=cum[1:])
    return cum[doc_ptr[1:]] - cum[doc_ptr[:-1]]


@dataclass(eq=False)
class WeightCache:
    """Term id -> its postings' BM25 weights per segment, for at most
    *limit* postings (then it starts over). The index keeps one for its
    queries' words (:attr:`BM25Index._weights`); a caller whose words would
    crowd those out (``search/fold.FoldWeights``) passes its own to
    :meth:`BM25Index.scores`."""

    limit: int
    rows: dict[int, tuple[np.ndarray, ...]] = field(default_factory=dict)
    size: int = 0

    def keep(self, tid: int, row: tuple[np.ndarray, ...]) -> None:
        """Keep *row* unless it alone exceeds the limit; clear first when it
        would not fit beside what is kept."""
        size = len(row[0]) + len(row[2])
        if size <= self.limit:
            if self.size + size > self.limit:
                self.rows.clear()
                self.size = 0
            self.rows[tid] = row
            self.size += size


@dataclass(frozen=True, eq=False)
class BM25Index:
    """An immutable BM25 index over slots; see the module docstring."""

    vocab: Mapping[str, int]
    doc_ptr: np.ndarray  # int64, len n_slots + 1
    doc_terms: np.ndarray  # int32
    doc_tfs: np.ndarray  # float32
    doc_len: np.ndarray  # float64, len n_slots
    alive: np.ndarray  # bool, len n_slots
    df: np.ndarray  # int64, len n_terms
    main_ptr: np.ndarray
    main_doc: np.ndarray
    main_tf: np.ndarray
    main_n_slots: int
    delta_ptr: np.ndarray
    delta_doc: np.ndarray
    delta_tf: np.ndarray
    k1: float = K1
    b: float = B

    # -- construction --------------------------------------------------------

    @classmethod
    def build(
        cls, docs: Sequence[Mapping[str, int]], *, k1: float = K1, b: float = B
    ) -> BM25Index:
        """Index term-count mappings, one per slot, from scratch."""
        vocab: dict[str, int] = {}
        doc_ptr, doc_terms, doc_tfs, _ = cls._encode_all(docs, vocab)
        return cls.from_rows(vocab, doc_ptr, doc_terms, doc_tfs, k1=k1, b=b)

    @classmethod
    def from_rows(
        cls,
        vocab: Mapping[str, int],
        doc_ptr: np.ndarray,
        doc_terms: np.ndarray,
        doc_tfs: np.ndarray,
        *,
        k1: float = K1,
        b: float = B,
    ) -> BM25Index:
        """An index over row-wise term ids and frequencies already encoded
        against *vocab* (``doc_ptr`` int64, ``doc_terms`` int32, ``doc_tfs``
        float32): what :meth:`build` makes of term-count mappings, and what a
        streamed build assembles from the workers' per-file rows without
        ever holding a mapping per chunk."""
        n_slots = len(doc_ptr) - 1
        doc_len = _doc_len(doc_ptr, doc_tfs)
        alive = np.ones(n_slots, bool)
        df = np.bincount(doc_terms, minlength=len(vocab)).astype(np.int64)
        ptr, pdoc, ptf = _csc(
            doc_ptr, doc_terms, doc_tfs, np.arange(n_slots), len(vocab)
        )
        empty = _csc(doc_ptr, doc_terms, doc_tfs, np.zeros(0, np.int64), len(vocab))
        return cls(
            vocab,
            doc_ptr,
            doc_terms,
            doc_tfs,
            doc_len,
            alive,
            df,
            ptr,
            pdoc,
            ptf,
            n_slots,
            *empty,
            k1=k1,
            b=b,
        )

    @staticmethod
    def _encode_all(
        docs: Sequence[Mapping[str, int]], vocab: dict[str, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(doc_ptr, terms, tfs, doc_len)`` of *docs*, growing *vocab*.

        In bulk rather than per document (the per-term Python work of a
        build): new terms get ids in first-occurrence order, exactly as a
        per-document ``setdefault`` would give them.
        """
        n = len(docs)
        lens = np.fromiter(map(len, docs), np.int64, n)
        ptr = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=ptr[1:])
        keys = list(chain.from_iterable(docs))
        base = len(vocab)
        new = [t for t in dict.fromkeys(keys) if t not in vocab]
        vocab.update(zip(new, range(base, base + len(new)), strict=True))
        terms = np.fromiter(map(vocab.__getitem__, keys), np.int32, len(keys))
        tfs = np.fromiter(
            chain.from_iterable(d.values() for d in docs), np.float32, len(keys)
        )
        return ptr, terms, tfs, _doc_len(ptr, tfs)

    @staticmethod
    def _encode(counts: Mapping[str, int], vocab: dict[str, int]) -> DocTerms:
        ids = np.fromiter(
            (vocab.setdefault(t, len(vocab)) for t in counts), np.int32, len(counts)
        )
        tfs = np.fromiter(counts.values(), np.float32, len(counts))
        return ids, tfs

    @staticmethod
    def _pack(rows: Sequence[DocTerms]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lens = np.fromiter((len(r[0]) for r in rows), np.int64, len(rows))
        ptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lens, out=ptr[1:])
        terms = np.concatenate([r[0] for r in rows]) if rows else np.zeros(0, np.int32)
        tfs = np.concatenate([r[1] for r in rows]) if rows else np.zeros(0, np.float32)
        return (
            ptr,
            terms.astype(np.int32, copy=False),
            tfs.astype(np.float32, copy=False),
        )

    # -- statistics ----------------------------------------------------------

    @property
    def n_slots(self) -> int:
        """Slots in the arrays, removed documents included (array lengths)."""
        return len(self.alive)

    @cached_property  # immutable arrays: once per index, not per query
    def n_docs(self) -> int:
        """Live documents: what idf counts (removed slots are not documents)."""
        return int(self.alive.sum())

    @cached_property
    def avgdl(self) -> float:
        """Mean length of the live documents (BM25's length normalisation); 0.0
        for an empty index.
        """
        n = self.n_docs
        return float(self.doc_len[self.alive].sum()) / n if n else 0.0

    @cached_property
    def _norm(self) -> np.ndarray:
        """``k1 (1 - b + b dl / avgdl)`` per slot: the document's part of
        :func:`term_score`'s denominator, the same numbers it computes, once
        per index instead of once per posting per query."""
        avgdl = self.avgdl or 1.0
        return self.k1 * (1.0 - self.b + self.b * self.doc_len / avgdl)

    def idf(self, term_ids: np.ndarray) -> np.ndarray:
        """Okapi idf with the +1 floor (never negative)."""
        return idf(self.n_docs, self.df[term_ids])

    def term_ids(self, tokens: Iterable[str]) -> np.ndarray:
        """Unique known term ids of *tokens*, in first-seen order."""
        seen: dict[int, None] = {}
        for t in tokens:
            tid = self.vocab.get(t)
            if tid is not None and self.df[tid] > 0:
                seen.setdefault(tid, None)
        return np.fromiter(seen, np.int64, len(seen))

    # -- scoring -------------------------------------------------------------

    @cached_property
    def _weights(self) -> WeightCache:
        """Term id -> its postings and their BM25 weights, per segment
        (``main docs, main weights, delta docs, delta weights``), filled
        when a query first uses the term. The index never changes, so a
        term's weights are the same numbers every time: computing them once
        spares every later query the gather and the arithmetic per posting.
        At most :data:`_CACHED_POSTINGS` postings are kept (then it starts
        over), a few MB."""
        return WeightCache(_CACHED_POSTINGS)

    def term_weights(self, tid: int, idf: float) -> tuple[np.ndarray, ...]:
        """:attr:`_weights` of one term, computed (never from or into the cache,
        so a caller with its own cache, ``search/fold.FoldWeights``, gets the
        same bits): its postings' slots (views of the
        segments) and ``term_score`` with the per-document denominator part
        precomputed, element by element the operations the vector over all
        query terms did."""
        out: list[np.ndarray] = []
        norm, k1 = self._norm, self.k1
        for ptr, pdoc, ptf in (
            (self.main_ptr, self.main_doc, self.main_tf),
            (self.delta_ptr, self.delta_doc, self.delta_tf),
        ):
            # an empty segment (no delta between updates) has no postings
            s, e = (int(ptr[tid]), int(ptr[tid + 1])) if len(pdoc) else (0, 0)
            d = pdoc[s:e] if e > s else _NO_DOCS
            f = ptf[s:e].astype(np.float64)
            out += (d, idf * (f * (k1 + 1.0)) / (f + norm[d]))
        return tuple(out)

    def scores(
        self, tokens: Iterable[str], weights: WeightCache | None = None
    ) -> np.ndarray:
        """BM25 of every slot for the unique query *tokens* (0 for dead slots).

        *weights*: the cache of term weights to use and fill (default the
        index's own; the numbers are the same either way).

        One ``bincount`` over the terms' cached posting weights, main segment
        first then delta, each in query-term order: the summation order of
        the per-query computation it replaced, so the same bits.
        """
        # term_ids, with the cache standing in for the df > 0 test of the
        # terms it holds (a numpy scalar read per token costs more)
        cache = (self._weights if weights is None else weights).rows
        keep = (self._weights if weights is None else weights).keep
        vocab = self.vocab
        got: dict[int, tuple[np.ndarray, ...] | None] = {}
        for t in tokens:
            tid = vocab.get(t)
            if tid is not None and tid not in got:
                got[tid] = cache.get(tid)
        if None in got.values():
            df = self.df
            got = {t: r for t, r in got.items() if r is not None or df[t] > 0}
        if not got:
            return np.zeros(self.n_slots, np.float64)
        terms = list(got)
        rows = list(got.values())
        if None in rows:
            missing = [i for i, r in enumerate(rows) if r is None]
            idf = self.idf(np.array([terms[i] for i in missing], np.int64)).tolist()
            for i, w in zip(missing, idf, strict=True):
                rows[i] = row = self.term_weights(terms[i], np.float64(w))
                keep(terms[i], row)
        full = cast("list[tuple[np.ndarray, ...]]", rows)  # every row filled
        parts = [r[0] for r in full if len(r[0])] + [r[2] for r in full if len(r[2])]
        out: np.ndarray
        if not parts:
            out = np.zeros(self.n_slots, np.float64)
        else:
            ws = [r[1] for r in full if len(r[0])] + [r[3] for r in full if len(r[2])]
            d = np.concatenate(parts) if len(parts) > 1 else parts[0]
            w = np.concatenate(ws) if len(ws) > 1 else ws[0]
            out = np.bincount(d, weights=w, minlength=self.n_slots)  # 0 + x: same
        if self.n_docs < self.n_slots:
            out[~self.alive] = 0.0
        return out

    # -- updates -------------------------------------------------------------

    def updated(
        self, remove: Iterable[int], add: Sequence[Mapping[str, int] | int]
    ) -> tuple[BM25Index, list[int]]:
        """A new index without slots *remove* and with *add* in new slots.

        An item of *add* is a term-count mapping, or the number of an
        existing slot whose terms the new slot repeats (an unchanged chunk of
        an edited file: no need to tokenize it again). Returns ``(index,
        new_slot_numbers)``. The vocabulary only grows; unused terms keep
        ``df == 0`` and are ignored by scoring.
        """
        # the vocabulary is copied only when a new term comes (readers of
        # this index keep theirs); new ids in first-occurrence order, as a
        # per-row setdefault would give them
        vocab = self.vocab
        if isinstance(vocab, TermIds):  # a loaded index: its dict (made once)
            vocab = vocab.materialized()
        counted = [d for d in add if not isinstance(d, int)]
        unseen = dict.fromkeys(t for d in counted for t in d if t not in vocab)
        if unseen:
            vocab = dict(vocab)
            base = len(vocab)
            vocab.update(zip(unseen, range(base, base + len(unseen)), strict=True))
        ids = vocab.__getitem__  # every term has an id now
        rows = [
            (
                self._row(d)
                if isinstance(d, int)
                else (
                    np.fromiter(map(ids, d), np.int32, len(d)),
                    np.fromiter(d.values(), np.float32, len(d)),
                )
            )
            for d in add
        ]
        n_terms = len(vocab)
        alive = self.alive.copy()
        gone = sorted(s for s in set(remove) if 0 <= s < len(alive) and bool(alive[s]))
        df = np.zeros(n_terms, np.int64)
        df[: len(self.df)] = self.df
        if gone:  # one bincount over the removed rows' terms (a row lists a term once)
            alive[gone] = False
            ptr = self.doc_ptr
            df -= np.bincount(
                np.concatenate([self.doc_terms[ptr[s] : ptr[s + 1]] for s in gone]),
                minlength=n_terms,
            )
        first = self.n_slots
        new_slots = list(range(first, first + len(rows)))
        if rows:
            ptr_add, terms_add, tfs_add = self._pack(rows)
            doc_ptr = np.concatenate((self.doc_ptr, ptr_add[1:] + self.doc_ptr[-1]))
            doc_terms = _appended(self.doc_terms, terms_add)
            doc_tfs = _appended(self.doc_tfs, tfs_add)
            doc_len = np.concatenate((self.doc_len, _doc_len(ptr_add, tfs_add)))
            alive = np.concatenate((alive, np.ones(len(rows), bool)))
            df += np.bincount(terms_add, minlength=n_terms)
        else:
            doc_ptr, doc_terms, doc_tfs, doc_len = (
                self.doc_ptr,
                self.doc_terms,
                self.doc_tfs,
                self.doc_len,
            )
        n_terms = len(vocab)
        main_ptr = self.main_ptr
        if len(main_ptr) < n_terms + 1:  # new terms have no main postings
            main_ptr = np.concatenate(
                (main_ptr, np.full(n_terms + 1 - len(main_ptr), main_ptr[-1]))
            )
        delta_slots = np.flatnonzero(alive[self.main_n_slots :]) + self.main_n_slots
        delta = _csc(doc_ptr, doc_terms, doc_tfs, delta_slots, n_terms)
        new = replace(
            self,
            vocab=vocab,
            doc_ptr=doc_ptr,
            doc_terms=doc_terms,
            doc_tfs=doc_tfs,
            doc_len=doc_len,
            alive=alive,
            df=df,
            main_ptr=main_ptr,
            delta_ptr=delta[0],
            delta_doc=delta[1],
            delta_tf=delta[2],
        )
        if len(delta_slots) > _COMPACT_SHARE * max(new.n_docs, 1):
            new = new.compacted()
        return new, new_slots

    def compacted(self) -> BM25Index:
        """Fold the delta segment into main; slot numbers are kept."""
        n_terms = len(self.vocab)
        slots = np.flatnonzero(self.alive)
        main = _csc(self.doc_ptr, self.doc_terms, self.doc_tfs, slots, n_terms)
        empty = _csc(
            self.doc_ptr, self.doc_terms, self.doc_tfs, np.zeros(0, np.int64), n_terms
        )
        return replace(
            self,
            main_ptr=main[0],
            main_doc=main[1],
            main_tf=main[2],
            main_n_slots=self.n_slots,
            delta_ptr=empty[0],
            delta_doc=empty[1],
            delta_tf=empty[2],
        )

    # -- persistence ---------------------------------------------------------

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything needed to restore this index (compacted) without re-tokenizing."""
        full = self if len(self.delta_doc) == 0 else self.compacted()
        v = full.vocab
        v = v.materialized() if isinstance(v, TermIds) else v
        terms = sorted(v, key=v.__getitem__)
        blob = "\n".join(terms).encode("utf-8")
        return {
            "vocab": np.frombuffer(blob, np.uint8),
            "doc_ptr": full.doc_ptr,
            "doc_terms": full.doc_terms,
            "doc_tfs": full.doc_tfs,
            "doc_len": full.doc_len,
            "alive": full.alive,
            "df": full.df,
            "main_ptr": full.main_ptr,
            "main_doc": full.main_doc,
            "main_tf": full.main_tf,
            "params": np.array([full.k1, full.b, full.main_n_slots], np.float64),
        }

    @classmethod
    def from_arrays(cls, a: Mapping[str, np.ndarray]) -> BM25Index:
        """Inverse of :meth:`arrays`; raises ``ValueError`` on inconsistent input."""
        # looked up in the blob, the dict made when many terms are (warm start)
        raw = bytes(a["vocab"])
        raw.decode("utf-8")  # a damaged blob is refused here, as before
        vocab = TermIds(raw, raw.count(b"\n") + 1 if raw else 0)
        k1, b, main_n = (float(x) for x in a["params"])
        n_slots = len(a["alive"])
        if (
            len(a["doc_ptr"]) != n_slots + 1
            or len(a["df"]) != len(vocab)
            or len(a["main_ptr"]) != len(vocab) + 1
        ):
            raise ValueError("index arrays are inconsistent")
        empty_ptr = np.zeros(len(vocab) + 1, np.int64)
        return cls(
            vocab,
            a["doc_ptr"],
            a["doc_terms"],
            a["doc_tfs"],
            a["doc_len"],
            a["alive"].astype(bool),
            a["df"],
            a["main_ptr"],
            a["main_doc"],
            a["main_tf"],
            int(main_n),
            empty_ptr,
            np.zeros(0, np.int32),
            np.zeros(0, np.float32),
            k1=k1,
            b=b,
        )

    def _row(self, slot: int) -> DocTerms:
        """The stored terms of one slot (views, no copy)."""
        s, e = self.doc_ptr[slot], self.doc_ptr[slot + 1]
        return self.doc_terms[s:e], self.doc_tfs[s:e]

    def renumbered(self, slots: np.ndarray) -> BM25Index:
        """A compact index whose slot ``i`` is this index's ``slots[i]``."""
        slots = np.asarray(slots, np.int64)
        rows = [self._row(s) for s in slots]
        doc_ptr, doc_terms, doc_tfs = self._pack(rows)
        n = len(slots)
        n_terms = len(self.vocab)
        df = np.bincount(doc_terms, minlength=n_terms).astype(np.int64)
        main = _csc(doc_ptr, doc_terms, doc_tfs, np.arange(n), n_terms)
        empty = _csc(doc_ptr, doc_terms, doc_tfs, np.zeros(0, np.int64), n_terms)
        return BM25Index(
            self.vocab,
            doc_ptr,
            doc_terms,
            doc_tfs,
            self.doc_len[slots].copy(),
            np.ones(n, bool),
            df,
            *main,
            n,
            *empty,
            k1=self.k1,
            b=self.b,
        )
