"""The name field of code chunks, scored with BM25 (stage ``field_bm25``).

The seed scores one bag of words per chunk, so the symbol's own name weighs
no more than a word deep in its docstring or code. This field holds only
what names the chunk: the leaf name of a function or class, and the class
with the method name for a method, split like every identifier
(``plot_phase_tensor_map`` -> ``plot_phase_tensor_map``, ``plot``, ``phase``,
``tensor``, ``map``). It is built from the chunk table's symbol column, so no
chunk text is read and a warm start costs what it did.

Scores are BM25 (the index's ``k1`` and ``b``) with the field's own
statistics; the per-term contributions are precomputed, so a query costs one
fancy-indexed add per query term.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pycsamt_lsp.index.bm25 import K1, B
from pycsamt_lsp.index.tokenize import term_counts

__all__ = ["CODE_KINDS", "NameField", "name_text"]

CODE_KINDS = frozenset({"python_symbol", "python_method"})


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
    """``term_counts(text)`` as pairs, remembered across builds: the field is
    rebuilt for every saved file, and splitting every name again was most of
    a refresh (~1 s of 2 on a 240 KB module, under cProfile)."""
    return tuple(term_counts(text).items())


@dataclass(frozen=True, eq=False)
class NameField:
    """Term -> (slots, BM25 weights) over the name field of every slot."""

    n_slots: int
    postings: dict[str, tuple[np.ndarray, np.ndarray]]

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
        repeat, so each distinct name is split once), then numpy computes
        every weight and groups them by term.
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
            return cls(n, {})
        row = np.array(rows, np.int64)
        term = np.array(terms, np.int64)
        f = np.array(tfs, np.float64)
        lens = np.bincount(row, weights=f, minlength=n)
        n_docs = int(np.count_nonzero(lens))
        avgdl = float(lens.sum()) / n_docs
        df = np.bincount(term, minlength=len(vocab)).astype(np.float64)
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        w = idf[term] * f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * lens[row] / avgdl))
        order = np.argsort(term, kind="stable")
        row, w = row[order], w[order]
        ptr = np.zeros(len(vocab) + 1, np.int64)
        np.cumsum(df.astype(np.int64), out=ptr[1:])
        postings = {
            t: (row[ptr[i] : ptr[i + 1]], w[ptr[i] : ptr[i + 1]])
            for t, i in vocab.items()
        }
        return cls(n, postings)

    def scores(self, tokens: Iterable[str], slots: np.ndarray) -> np.ndarray:
        """The field's BM25 for the unique *tokens*, at the given *slots*."""
        out: np.ndarray | None = None
        for term in dict.fromkeys(tokens):
            hit = self.postings.get(term)
            if hit is None:
                continue
            if out is None:
                out = np.zeros(self.n_slots)
            out[hit[0]] += hit[1]
        return np.zeros(len(slots)) if out is None else out[slots]
