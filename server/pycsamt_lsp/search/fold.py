"""The other number of a query word (stage ``fold``).

Why: the body index and the name field match words exactly, so a query
word in the plural never meets the same word in the singular: "my stations
have no valid names" does not reach ``ensure_station`` ("Return a valid
station name ...") through "stations" or "names". A question written
without the package's vocabulary picks its own number, and the docstring
or name picks another about as often. A stemmer at indexing time would
change the seed's tokens (DESIGN 5); this stage reads the query only.

What: for each query word the stage looks up its other grammatical number
in the index's vocabulary (generate and test: a few dictionary lookups, no
per-index table, nothing at warm start) and scores the words found with
the body BM25 and the name field, as a second, weaker reading of the
query: weight :data:`FOLD_WEIGHT`, the seed's weight of an expansion term
(a word that says the same as one the user typed). Only chunks the query
already reaches are re-weighed: the stage adds evidence, never candidates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pycsamt_lsp.index.bm25 import BM25Index, WeightCache

__all__ = ["FOLD_POSTINGS", "FOLD_WEIGHT", "FoldWeights", "number_variants"]

_NO_DOCS = np.zeros(0, np.int32)

#: The weight of a folded word, as the seed weighs an expansion term
#: (``EXPANSION_WEIGHT``). Tuning split (bundled + tuning, both corpora):
#: 0.7 and 1.0 lowered MRR@10 and, at 1.0, the bundled suites' MRR@10
#: (0.944); 0.35 raised MRR@10 on every tuning file.
FOLD_WEIGHT = 0.35

_SIBILANT = ("s", "x", "z", "ch", "sh")


@lru_cache(maxsize=8192)
def number_variants(word: str) -> tuple[str, ...]:
    """The singular of a plural English *word*, or the plurals of a singular.

    Only alphabetic words of 4+ letters (identifiers and numbers keep their
    exact match). ``points`` -> ``point``; ``boxes`` -> ``box``; ``bodies``
    -> ``body``; ``classes`` -> ``class``; ``cases`` -> ``case``;
    ``station`` -> ``stations``; ``body`` -> ``bodys``,
    ``bodies``; words ending ``ss``, ``us`` or ``is`` (``class``,
    ``status``, ``analysis``) are taken as singular.
    """
    if len(word) < 4 or not word.isalpha():
        return ()
    if word.endswith("ies"):
        return (word[:-3] + "y",)
    if word.endswith(("sses", "xes", "ches", "shes")):
        return (word[:-2],)
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return (word[:-1],)
    if word.endswith(_SIBILANT):
        return (word + "es",)
    if word[-1] == "y" and word[-2] not in "aeiou":
        return (word + "s", word[:-1] + "ies")
    return (word + "s",)


#: At most this many postings' weights are kept per snapshot (then anew),
#: 12 bytes each (~3 MB). The folded words of every suite query (1,287
#: queries, benchmarks/bench_query.py) hold 106k postings on the sdist and
#: 186k on the checkout; at 1 << 17 the checkout's overflowed and each
#: pass recomputed most of them.
FOLD_POSTINGS = 1 << 18


@dataclass(eq=False)
class FoldWeights:
    """The body BM25 weights of folded words, per snapshot, kept apart from
    the body index's own cache.

    Why apart: :meth:`BM25Index.scores` keeps the weights of every word a
    query uses, up to a fixed number of postings, and starts over when they
    do not fit. The folded words are more words per query (1-3); through
    that cache they pushed the queries' own words out of it on the
    checkout (the suites' 1,287 queries' words fill 496k of its 524k
    postings; with the folds it overflowed and every pass recomputed
    ~2,600 words' weights). Here they have their own bounded cache, and
    the query's words keep theirs. A save's snapshot starts a new one
    (new idf and lengths).

    :meth:`scores` is ``bm.scores(terms)`` with this cache in place of the
    index's (:class:`~pycsamt_lsp.index.bm25.WeightCache`), so the same bits
    (one ``bincount``, main segment then delta, each in first-seen term
    order). ``tests/test_ranking_stages.py`` compares the two.
    """

    cache: WeightCache = field(default_factory=lambda: WeightCache(FOLD_POSTINGS))

    @property
    def size(self) -> int:
        """Postings kept now (at most :data:`FOLD_POSTINGS`)."""
        return self.cache.size

    def scores(self, bm: BM25Index, terms: Iterable[str]) -> np.ndarray:
        """The body BM25 of every slot for the unique *terms* (0 for dead
        slots): ``bm.scores(terms)``, bit for bit, without its cache."""
        return bm.scores(terms, self.cache)
