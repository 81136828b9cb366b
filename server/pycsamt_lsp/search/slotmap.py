"""A name -> slots mapping that makes each slot array when it is first read.

Why: :class:`~pycsamt_lsp.search.retrieval.RankAux` maps every symbol and
every leaf name of the chunk table to the slots that carry it (~7,000 and
~5,000 keys on the pyCSAMT sdist). Making those ~12,000 small ``int64``
arrays when an index is loaded cost a fresh ``pycsamt-lsp query`` process
10-15 ms (issue 18: the warm start), though a query reads the arrays of the
handful of names its text contains. Here the slot lists are kept as built
and each becomes its array on first read, the same array every later read
(the array a dict of arrays would have held: same values, ``int64``).

Safe for concurrent readers: two threads reading one key at once may both
make its array (equal values), and the last store wins; a store into a dict
is atomic under the GIL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

__all__ = ["SlotMap"]


class SlotMap(Mapping[str, np.ndarray]):
    """``name -> int64 array of slots``, arrays made on first read.

    Keys iterate in the order of *lists* (the order a dict built from the
    same loop has); :meth:`materialized` makes every array now and drops
    the lists (a long-lived server then holds the arrays only, as before).
    """

    __slots__ = ("_arrays", "_lists")

    def __init__(self, lists: dict[str, list[int]]) -> None:
        self._lists = lists
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def get(self, key: str, default: np.ndarray | None = None) -> np.ndarray | None:  # type: ignore[override]
        """The slots of *key*, or *default* (a dict's ``get``, without the
        ``Mapping`` mixin's exception round trip)."""
        arrays = self._arrays
        got = arrays.get(key)
        if got is not None:
            return got
        slots = self._lists.get(key)
        if slots is None:
            # materialized meanwhile (the arrays are whole before the lists go)
            got = self._arrays.get(key)
            return default if got is None else got
        got = arrays[key] = np.array(slots, np.int64)
        return got

    def __contains__(self, key: object) -> bool:
        return key in self._lists or key in self._arrays

    def __iter__(self) -> Iterator[str]:
        lists = self._lists
        return iter(lists if lists else self._arrays)

    def __len__(self) -> int:
        lists = self._lists
        return len(lists) if lists else len(self._arrays)

    def materialized(self) -> dict[str, np.ndarray]:
        """Every key's array (made now where not read yet), in key order."""
        lists = self._lists
        if not lists:
            return self._arrays
        arrays = self._arrays
        whole: dict[str, np.ndarray] = {}
        for k, slots in lists.items():
            got = arrays.get(k)
            whole[k] = np.array(slots, np.int64) if got is None else got
        # replaced, never cleared: a reader under way keeps what it holds
        self._arrays = whole
        self._lists = {}
        return whole
