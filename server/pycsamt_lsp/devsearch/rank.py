"""Ranking of developer search: BM25 over identifier-aware terms, plus bonuses.

The BM25 arithmetic is :mod:`pycsamt_lsp.index.bm25`'s (:func:`~pycsamt_lsp.index.bm25.idf`,
:func:`~pycsamt_lsp.index.bm25.term_score`), with this search's own
parameters: ``k1 = 1.2`` and ``b = 0.5`` (short files are not favoured as
much as chunks are, since a file is as long as it is), term weights by kind,
the files scanned as the collection and byte length as the document length.
A definition of a named identifier, a path component and a path typed in
the query add bonuses scaled by the term's idf.
"""

from __future__ import annotations

import re
from pathlib import Path

from pycsamt_lsp.devsearch.query import Query
from pycsamt_lsp.devsearch.scan import Hit, hint_matches
from pycsamt_lsp.index.bm25 import idf as bm25_idf
from pycsamt_lsp.index.bm25 import term_score

__all__ = ["K1", "B", "has_whole_term", "rank_hits"]

#: BM25 parameters of developer search (files, not chunks).
K1, B = 1.2, 0.5
_DEF_BONUS, _ASSIGN_BONUS, _PATH_BONUS, _HINT_BONUS = 10.0, 4.0, 1.5, 8.0


def has_whole_term(h: Hit, q: Query) -> bool:
    """True when *h* matched a term that is not only an identifier part, or a
    path hint: a file that only matches fragments is not a strong hit.
    """
    return any(q.terms[i].kind != "part" for i in h.tf) or any(
        hint_matches(hint, h.cand.rel) for hint in q.hints
    )


def rank_hits(found: list[Hit], q: Query, n_docs: int) -> None:
    """Lexical score: BM25 over identifier-aware terms + definition/path bonuses."""
    if not found:
        return
    df = [sum(1 for h in found if i in h.tf) for i in range(len(q.terms))]
    idf = [bm25_idf(n_docs, d) for d in df]
    avg = sum(len(h.data) for h in found) / len(found) or 1.0
    primary = [i for i, t in enumerate(q.terms) if t.kind != "part"]
    total = sum(q.terms[i].weight * idf[i] for i in primary) or 1.0
    for h in found:
        dl = max(len(h.data), 1)
        s = sum(
            term_score(q.terms[i].weight * idf[i], n, dl, avg, k1=K1, b=B)
            for i, n in h.tf.items()
        )
        comps = set(re.split(r"[/._-]", h.cand.rel.lower())) | {
            Path(h.cand.rel).stem.lower()
        }
        covered = 0.0
        for i in primary:
            if q.terms[i].low in comps:
                s += _PATH_BONUS * q.terms[i].weight * idf[i]
            if i in h.tf or q.terms[i].low in comps:
                covered += q.terms[i].weight * idf[i]
        for j, (kind, _, in_class) in h.defs.items():
            tg = q.targets[j]
            bonus = _DEF_BONUS if kind == "def" else _ASSIGN_BONUS
            # Cls.method asked, but no class Cls here: a namesake, half credit
            s += bonus * idf[tg.term] * tg.strength * (1.0 if in_class else 0.5)
        s *= 0.5 + 0.5 * covered / total
        s += _HINT_BONUS * sum(hint_matches(hint, h.cand.rel) for hint in q.hints)
        h.score = s
