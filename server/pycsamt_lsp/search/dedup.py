"""Near-identical chunks do not fill the first page (stage ``dedup``).

A package repeats itself: the same method body in sibling classes
(``n_sites``, ``stations``, ``__init__`` of five plot classes), a function
copied into a second module, a doc section that restates a docstring. Each
copy matches a query exactly as well as the others, so together they take
places of the first page that different answers could have had.

What counts as near-identical: the **body terms** of two chunks (their BM25
row: term ids and frequencies, with the counts of the header lines that name the chunk, ``Symbol: <its
symbol>`` / ``Module:`` / ``Document:`` and ``File: <its path>``, taken off:
they differ between copies by construction) have a weighted Jaccard similarity
``sum(min(tf)) / sum(max(tf))`` of at least :data:`DEDUP_SIMILARITY`. Term
ids are compared only for equality, so the similarity is the same in an
index built at once and in one updated save by save. No chunk text is read.

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
DEDUP_SIMILARITY = 0.9
_NONE = (np.zeros(0, np.int32), np.zeros(0, np.float32))


@dataclass(eq=False)
class BodyCache:
    """Slot -> its body terms ``(sorted term ids, tfs)``, made on first use.

    A slot's row never changes (an update appends new slots), so entries of
    live slots carry over to the next snapshot (:meth:`carried`).
    """

    rows: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def body(self, snap: Snapshot, slot: int) -> tuple[np.ndarray, np.ndarray]:
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


def _body(snap: Snapshot, slot: int) -> tuple[np.ndarray, np.ndarray]:
    """The slot's row with the header's counts taken off, sorted by term id."""
    bm, t = snap.bm25, snap.table
    if slot >= bm.n_slots or not bm.alive[slot]:
        return _NONE
    s, e = int(bm.doc_ptr[slot]), int(bm.doc_ptr[slot + 1])
    terms = bm.doc_terms[s:e]
    tfs = bm.doc_tfs[s:e].astype(np.float64)
    head = term_counts(header_text(t.kinds[slot], t.symbols[slot], t.paths[slot]))
    ids = [bm.vocab[w] for w in head if w in bm.vocab]
    if ids:
        sub = np.zeros(len(terms))
        pos = {tid: i for i, tid in enumerate(terms.tolist())}
        for w, c in head.items():
            i = pos.get(bm.vocab.get(w, -1))
            if i is not None:
                sub[i] = c
        tfs = np.maximum(tfs - sub, 0.0)
    keep = tfs > 0
    terms, tfs = terms[keep], tfs[keep]
    order = np.argsort(terms, kind="stable")
    return terms[order], tfs[order]


def _similar(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> float:
    """Weighted Jaccard of two sorted body rows."""
    _, ia, ib = np.intersect1d(a[0], b[0], assume_unique=True, return_indices=True)
    common = float(np.minimum(a[1][ia], b[1][ib]).sum())
    union = float(a[1].sum() + b[1].sum()) - common
    return common / union if union > 0 else 0.0


def copies(
    snap: Snapshot,
    cache: BodyCache,
    slots: Sequence[int],
    similarity: float = DEDUP_SIMILARITY,
) -> list[int]:
    """Positions in *slots* (best first) that are copies of an earlier kept one."""
    rows = [cache.body(snap, int(x)) for x in slots]
    mass = np.array([r[1].sum() for r in rows])
    width = np.array([len(r[0]) for r in rows], np.float64)
    kept: list[int] = []
    out: list[int] = []
    for j, r in enumerate(rows):
        if not len(r[0]):
            kept.append(j)
            continue
        dup = False
        for i in kept:
            lo, hi = sorted((mass[i], mass[j]))
            wlo, whi = sorted((width[i], width[j]))
            if lo < similarity * hi or wlo < similarity * whi:
                continue
            if _similar(rows[i], r) >= similarity:
                dup = True
                break
        if dup:
            out.append(j)
        else:
            kept.append(j)
    return out


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
