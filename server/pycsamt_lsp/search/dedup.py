"""Near-identical chunks do not fill the first page (stage ``dedup``).

A package repeats itself: the same method body in sibling classes
(``n_sites``, ``stations``, ``__init__`` of five plot classes), a function
copied into a second module, a doc section that restates a docstring. Each
copy matches a query exactly as well as the others, so together they take
places of the first page that different answers could have had.

What counts as near-identical: the **body terms** of two chunks have a
weighted Jaccard similarity ``sum(min(tf)) / sum(max(tf))`` of at least
:data:`DEDUP_SIMILARITY`. The body terms are the chunk's BM25 row (term ids
and frequencies) with the counts of the header lines that name the chunk
(``Symbol: <symbol>`` / ``Module:`` / ``Document:`` and ``File: <path>``)
taken off: those differ between copies by construction. Term ids are only
compared for equality, so the similarity is the same in an index built at
once and in one updated save by save. No chunk text is read.

What the stage does: among the :data:`DEDUP_DEPTH` best candidates, taken
best first (ties by chunk id), a chunk near-identical to one already kept is
a copy; every copy is moved below the last chunk kept among them (relative
order kept), so the first page shows one of each and the copies follow.
Only pairs whose body sizes could reach the similarity (both the term
mass and the number of distinct terms within the ratio) are compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.tokenize import term_counts

__all__ = [
    "DEDUP_DEPTH",
    "DEDUP_SIMILARITY",
    "BodyCache",
    "best_first",
    "copies",
    "demote_copies",
]

#: The best candidates compared with each other per query.
DEDUP_DEPTH = 20
#: Weighted Jaccard of the body terms from which two chunks are copies.
#: Tuning split (sdist and checkout, with field_head on): 0.9 changed no
#: metric; 0.85 moved ``convert_z2d`` (0.885 similar to ``convert_z3d``)
#: off a first page and raised MRR@10 and hit@10 on both corpora; 0.8 also
#: merged ``build_ztem_record`` with ``build_airmt_record`` (0.82), two
#: functions for two systems, so it is not lower.
DEDUP_SIMILARITY = 0.85
_NONE = (np.zeros(0, np.int32), np.zeros(0, np.float64), 0.0)
#: a body: sorted term ids, their frequencies, the frequencies' sum
Body = tuple[np.ndarray, np.ndarray, float]


@dataclass(eq=False)
class BodyCache:
    """Slot -> its :data:`Body`, made on first use.

    A slot's row never changes (an update appends new slots), so entries of
    live slots carry over to the next snapshot (:meth:`carried`).
    """

    rows: dict[int, Body] = field(default_factory=dict)

    def body(self, snap: Snapshot, slot: int) -> Body:
        """The body terms of *slot* (computed once per slot)."""
        got = self.rows.get(slot)
        if got is None:
            got = self.rows[slot] = _body(snap, slot)  # one dict store
        return got

    def carried(self, alive: np.ndarray, n_old: int) -> BodyCache:
        """The cache for an update of its snapshot (live old slots only)."""
        return BodyCache({k: v for k, v in self.rows.items() if k < n_old and alive[k]})


def header_text(kind: str, symbol: str | None, path: str) -> str:
    """The header lines the chunkers write that name the chunk itself (its
    symbol and file), which differ between two copies of one body."""
    if kind == "module_doc":
        return f"Module: {symbol or ''}\nFile: {path}"
    if kind in ("doc_section", "recipe", "pdf_page"):
        return f"Document: {path}"
    return f"Symbol: {symbol or ''}\nFile: {path}"


def _body(snap: Snapshot, slot: int) -> Body:
    """The slot's row with the header's counts taken off, sorted by term id."""
    bm, t = snap.bm25, snap.table
    if slot >= bm.n_slots or not bm.alive[slot]:
        return _NONE
    s, e = int(bm.doc_ptr[slot]), int(bm.doc_ptr[slot + 1])
    if s == e:
        return _NONE
    order = np.argsort(bm.doc_terms[s:e], kind="stable")
    terms = bm.doc_terms[s:e][order]
    tfs = bm.doc_tfs[s:e][order].astype(np.float64)
    head = term_counts(header_text(t.kinds[slot], t.symbols[slot], t.paths[slot]))
    if head:  # distinct header terms: each found at most once in the row
        ids = np.fromiter((bm.vocab.get(w, -1) for w in head), np.int64, len(head))
        counts = np.fromiter(head.values(), np.float64, len(head))
        pos = np.minimum(terms.searchsorted(ids), len(terms) - 1)
        hit = terms[pos] == ids
        tfs[pos[hit]] -= counts[hit]
        np.maximum(tfs, 0.0, out=tfs)
    keep = tfs > 0
    terms, tfs = terms[keep], tfs[keep]
    return terms, tfs, float(tfs.sum())


def _similar(a: Body, b: Body) -> float:
    """Weighted Jaccard of two sorted body rows."""
    (ta, fa, ma), (tb, fb, mb) = a, b
    if len(ta) < len(tb):
        (ta, fa, ma), (tb, fb, mb) = b, a
    pos = np.minimum(ta.searchsorted(tb), len(ta) - 1)  # ta is sorted
    hit = ta[pos] == tb
    common = float(np.minimum(fa[pos[hit]], fb[hit]).sum())
    union = ma + mb - common
    return common / union if union > 0 else 0.0


def copies(
    snap: Snapshot,
    cache: BodyCache,
    slots: Sequence[int],
    similarity: float | None = None,
) -> list[int]:
    """Positions in *slots* (best first) that are copies of an earlier kept
    one (*similarity*: :data:`DEDUP_SIMILARITY` when not given)."""
    if similarity is None:
        similarity = DEDUP_SIMILARITY
    rows = [cache.body(snap, int(x)) for x in slots]
    n = len(rows)
    if n < 2:
        return []
    mass = np.array([r[2] for r in rows])
    width = np.array([len(r[0]) for r in rows], np.float64)
    # a pair can only reach the similarity when both its term masses and its
    # numbers of distinct terms are within the ratio: one matrix test each
    ok = np.ones((n, n), bool)
    for v in (mass, width):
        lo, hi = np.minimum.outer(v, v), np.maximum.outer(v, v)
        ok &= (lo >= similarity * hi) & (hi > 0)
    ok = np.triu(ok, 1)
    if not ok.any():
        return []
    later: dict[int, list[int]] = {}
    for i, j in zip(*np.nonzero(ok), strict=True):
        later.setdefault(int(j), []).append(int(i))
    gone: set[int] = set()
    for j in sorted(later):
        if any(
            i not in gone and _similar(rows[i], rows[j]) >= similarity for i in later[j]
        ):
            gone.add(j)
    return sorted(gone)


def best_first(
    s: np.ndarray, ids: Sequence[str], idx: np.ndarray, n: int
) -> np.ndarray:
    """The positions of the *n* best scores, best first, ties by chunk id
    (the ranking's own order: slot numbers differ between an update and a
    rebuild, chunk ids do not)."""
    if len(s) > n:
        at = len(s) - n
        cut = float(np.partition(s, at)[at])
        top = np.flatnonzero(s >= cut)
    else:
        top = np.arange(len(s))
    ranked = sorted(top.tolist(), key=lambda j: (-s[j], ids[int(idx[j])]))
    return np.array(ranked[:n], np.int64)


def demote_copies(
    snap: Snapshot,
    cache: BodyCache,
    idx: np.ndarray,
    s: np.ndarray,
    depth: int = DEDUP_DEPTH,
) -> np.ndarray:
    """*s* with the copies among the *depth* best candidates moved below the
    last kept one (scaled together, so their order among them stays)."""
    if len(s) < 2:
        return s
    order = best_first(s, snap.table.ids, idx, depth)
    dup = copies(snap, cache, idx[order].tolist())
    if not dup:
        return s
    pos = order[dup]
    kept = np.setdiff1d(order, pos)
    floor = float(s[kept].min())
    top = float(s[pos].max())
    out = s.copy()
    if top > 0 and floor > 0:
        out[pos] = s[pos] * (floor / top) * (1.0 - 1e-9)
    return out
