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
    same loop has); :meth:`materialized` makes every array now.
    """

    __slots__ = ("_arrays", "_lists")

    def __init__(self, lists: dict[str, list[int]]) -> None:
        self._lists = lists
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        got = self._arrays.get(key)
        if got is None:
            got = self._arrays[key] = np.array(self._lists[key], np.int64)
        return got

    def get(self, key: str, default: np.ndarray | None = None) -> np.ndarray | None:  # type: ignore[override]
        """The slots of *key*, or *default* (a dict's ``get``, without the
        ``Mapping`` mixin's exception round trip)."""
        got = self._arrays.get(key)
        if got is not None:
            return got
        if key not in self._lists:
            return default
        return self[key]

    def __contains__(self, key: object) -> bool:
        return key in self._lists

    def __iter__(self) -> Iterator[str]:
        return iter(self._lists)

    def __len__(self) -> int:
        return len(self._lists)

    def materialized(self) -> dict[str, np.ndarray]:
        """Every key's array (made now where not read yet), in key order."""
        return {k: self[k] for k in self._lists}
