"""A loaded index's vocabulary, ``term -> id``, looked up in its persisted bytes.

Why: ``index.npz`` stores the vocabulary as one UTF-8 blob, the terms in id
order joined by newlines. Making the ``dict`` of its ~30,000 terms cost a
fresh ``pycsamt-lsp query`` process ~10 ms (splitting the blob and hashing
every term; issue 18: the warm start), and such a process looks up 6-15
terms. :class:`TermIds` answers those from the blob itself (a byte search
for ``\\n term \\n``; the id is the number of newlines before it) and makes
the ``dict`` once more distinct terms than :data:`EAGER_AFTER` were asked
for, or when anything iterates it. Same answers as the ``dict``: terms
never hold a newline, and each term is in the blob once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

__all__ = ["EAGER_AFTER", "TermIds"]

#: Distinct terms looked up in the blob before the dict is made (a lookup
#: scans the blob: ~5-200 us on the sdist's 317 KB; the dict costs ~10 ms).
EAGER_AFTER = 32


class TermIds(Mapping[str, int]):
    """``term -> id`` over the vocabulary blob of ``index.npz``.

    Safe for concurrent readers: the memo and the dict are only ever added
    to or set whole (the dict is made under a lock, once).
    """

    __slots__ = ("_blob", "_dict", "_lock", "_memo", "_n", "_newlines")

    def __init__(self, blob: bytes, n_terms: int) -> None:
        """*blob*: the terms in id order joined by ``\\n`` (UTF-8);
        *n_terms*: how many (``blob.count(b"\\n") + 1``, or 0 when empty)."""
        self._blob = b"\n" + blob + b"\n"
        self._n = n_terms
        self._memo: dict[str, int | None] = {}
        self._newlines: np.ndarray | None = None
        self._dict: dict[str, int] | None = None
        self._lock = threading.Lock()

    def materialized(self) -> dict[str, int]:
        """The vocabulary as a ``dict`` (made on the first call; the blob,
        its newline offsets and the memo are dropped then: a long-lived
        server keeps only the dict, as before)."""
        got = self._dict
        if got is None:
            with self._lock:
                got = self._dict
                if got is None:
                    text = self._blob[1:-1].decode("utf-8")
                    terms = text.split("\n") if self._n else []
                    got = self._dict = dict(zip(terms, range(len(terms)), strict=True))
                    # replaced, never cleared: a lookup under way keeps its own
                    self._blob, self._newlines, self._memo = b"", None, {}
        return got

    def _find(self, term: str) -> int | None:
        """The id of *term* found in the blob, or None."""
        try:
            key = b"\n" + term.encode("utf-8") + b"\n"
        except UnicodeEncodeError:  # a lone surrogate is no persisted term
            return None
        blob, nl = self._blob, self._newlines  # one consistent pair
        pos = blob.find(key)
        if pos < 0 or not self._n:
            return None
        if nl is None:
            nl = np.flatnonzero(np.frombuffer(blob, np.uint8) == 10)
            if blob is self._blob:
                self._newlines = nl
        return int(np.searchsorted(nl, pos))  # newlines before it = its id

    def get(self, term: str, default: Any = None) -> Any:
        """The term's id, or *default*."""
        d = self._dict
        if d is not None:
            return d.get(term, default)
        memo = self._memo
        if term in memo:
            tid = memo[term]
        elif len(memo) >= EAGER_AFTER:
            return self.materialized().get(term, default)
        else:
            tid = self._find(term)
            if self._dict is None:  # else the blob may be gone: the dict answers
                memo[term] = tid
            else:
                return self._dict.get(term, default)
        return default if tid is None else tid

    def __getitem__(self, term: str) -> int:
        tid = self.get(term)
        if tid is None:
            raise KeyError(term)
        return tid

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return iter(self.materialized())
