"""Identifier-aware tokenizer shared by indexing and queries.

``StaticShiftAgent`` -> ``staticshiftagent``, ``static``, ``shift``,
``agent``; ``estimate_ss_ama`` -> the whole word plus ``estimate``, ``ss``,
``ama``. Whole identifiers keep exact symbol matches strong; the parts let
plain-language queries reach code. Splits are memoised per raw word because
a corpus repeats the same identifiers thousands of times.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from itertools import chain

from pycsamt_lsp.text.identifiers import STOPWORDS, identifier_parts

__all__ = ["STOPWORDS", "term_counts", "tokenize", "word_tokens"]

_WORD = re.compile(r"[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)*")


@lru_cache(maxsize=262_144)
def word_tokens(raw: str) -> tuple[str, ...]:
    """Tokens of one raw identifier: the whole (lowercased) and its parts."""
    low = raw.lower()
    out: list[str] = []
    if len(low) >= 2 and low not in STOPWORDS:
        out.append(low)
    if "_" in raw or not (raw.islower() or raw.isupper() or raw.isdigit()):
        for piece in raw.split("_"):
            for part in identifier_parts(piece):
                p = part.lower()
                if p != low and len(p) >= 2 and p not in STOPWORDS:
                    out.append(p)
    return tuple(out)


def tokenize(text: str) -> list[str]:
    """All tokens of *text* in order (duplicates kept)."""
    out: list[str] = []
    for raw in _WORD.findall(text or ""):
        out.extend(word_tokens(raw))
    return out


def term_counts(text: str) -> Counter[str]:
    """Token -> count for *text*; the fast path used when indexing chunks.

    Counted by ``Counter``'s C loop over the token stream (the memoised
    splits chained in C): the same counts in the same first-seen order as
    splitting each distinct word once and merging in a Python loop, which
    was 10-20% slower on the sdist's 7.9k chunks.
    """
    return Counter(chain.from_iterable(map(word_tokens, _WORD.findall(text or ""))))
