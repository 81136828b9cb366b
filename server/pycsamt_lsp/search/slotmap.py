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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import cast

import numpy as np

__all__ = [
    "LazyGroups",
    "SlotMap",
    "pack_groups",
    "unpack_groups",
    "unpack_slotmap",
]

_NO_SLOTS = np.zeros(0, np.int64)

#: what separates the keys of :func:`pack_groups` (a key holding it is not packed)
_SEP = "\0"


class SlotMap(Mapping[str, np.ndarray]):
    """``name -> int64 array of slots``, arrays made on first read.

    Keys iterate in the order of *lists* (the order a dict built from the
    same loop has); :meth:`materialized` makes every array now and drops
    the lists (a long-lived server then holds the arrays only, as before).
    """

    __slots__ = ("_arrays", "_flat", "_lists", "_ptr")

    def __init__(self, lists: dict[str, list[int]]) -> None:
        self._lists: Mapping[str, Sequence[int] | int] = lists
        self._arrays: dict[str, np.ndarray] = {}
        self._ptr: np.ndarray | None = None
        self._flat = _NO_SLOTS

    @classmethod
    def packed(cls, keys: list[str], ptr: np.ndarray, flat: np.ndarray) -> SlotMap:
        """The map :func:`pack_groups` saved (checked by :func:`unpack_groups`'s
        rules): key *i*'s slots are ``flat[ptr[i]:ptr[i + 1]]``, copied into
        their own array on first read, so a warm start makes neither the
        arrays nor ~12,000 lists."""
        out = cls({})
        out._lists = dict(zip(keys, range(len(keys)), strict=True))
        out._ptr, out._flat = ptr, flat
        return out

    def _made(self, slots: Sequence[int] | int) -> np.ndarray:
        """The array of a key's *slots* (a list, or its index when packed)."""
        ptr = self._ptr
        if ptr is None:
            return np.array(slots, np.int64)
        i = int(slots)  # type: ignore[arg-type]
        return self._flat[ptr[i] : ptr[i + 1]].copy()

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
        got = arrays[key] = self._made(slots)
        return got

    def __contains__(self, key: object) -> bool:
        return key in self._lists or key in self._arrays

    def __iter__(self) -> Iterator[str]:
        lists = self._lists
        return iter(lists if lists else self._arrays)

    def __len__(self) -> int:
        lists = self._lists
        return len(lists) if lists else len(self._arrays)

    def groups(self) -> Mapping[str, Sequence[int] | np.ndarray]:
        """Every key's slots as they are held now (lists or arrays), in key
        order, making none (what :func:`pack_groups` saves)."""
        lists = self._lists
        if not lists:
            return self._arrays
        arrays = self._arrays
        if self._ptr is None:  # the lists themselves (equal to any array made)
            return cast("Mapping[str, Sequence[int]]", lists)
        return {
            k: got if (got := arrays.get(k)) is not None else self._made(v)
            for k, v in lists.items()
        }

    def materialized(self) -> dict[str, np.ndarray]:
        """Every key's array (made now where not read yet), in key order."""
        lists = self._lists
        if not lists:
            return self._arrays
        arrays = self._arrays
        whole: dict[str, np.ndarray] = {}
        for k, slots in lists.items():
            got = arrays.get(k)
            whole[k] = self._made(slots) if got is None else got
        # replaced, never cleared: a reader under way keeps what it holds
        self._arrays = whole
        self._lists = {}
        return whole


def pack_groups(
    prefix: str, groups: Mapping[str, Iterable[int]] | Mapping[int, Iterable[int]]
) -> dict[str, np.ndarray]:
    """*groups* (``key -> ints``, keys ``str`` or ``int``) as flat arrays:
    ``{prefix}keys`` (the keys), ``{prefix}ptr`` and ``{prefix}flat`` (every
    group's ints, concatenated in key order). :func:`unpack_groups` gives the
    same keys, order and values again. ``ValueError`` when a ``str`` key holds
    the separator.

    Why: a warm start reads the ranking's name -> slots maps back from disk
    (``workspace.warm``) instead of grouping the chunk table again (issue 18).
    """
    keys = list(groups)
    vals = list(groups.values())
    ptr = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(v) for v in vals], out=ptr[1:])  # type: ignore[arg-type]
    flat = np.fromiter(chain.from_iterable(vals), np.int64, int(ptr[-1]))
    if all(isinstance(k, int) for k in keys):
        packed = np.array(keys, np.int64)
    else:
        if any(_SEP in k for k in keys):  # type: ignore[operator]
            raise ValueError("a key holds the separator")
        packed = np.frombuffer(_SEP.join(keys).encode("utf-8"), np.uint8)  # type: ignore[arg-type]
    return {f"{prefix}keys": packed, f"{prefix}ptr": ptr, f"{prefix}flat": flat}


def unpack_groups(
    prefix: str, arrays: Mapping[str, np.ndarray], bound: int, *, int_keys: bool
) -> tuple[list, list[list[int]]]:
    """The keys and the groups (lists of ints) :func:`pack_groups` wrote.

    ``ValueError`` when the arrays disagree, the keys are not of the kind
    *int_keys* says, or an int is outside ``0..bound-1``.
    """
    keys, ptr, flat = _checked(prefix, arrays, bound, int_keys)
    ints, p = flat.tolist(), ptr.tolist()
    # slices of one list, in C: a Python loop over the groups costs more
    return keys, list(map(ints.__getitem__, map(slice, p[:-1], p[1:])))


def unpack_slotmap(
    prefix: str,
    arrays: Mapping[str, np.ndarray],
    bound: int,
    keys: list[str] | None = None,
) -> SlotMap:
    """The :class:`SlotMap` :func:`pack_groups` wrote (``str`` keys, slots
    below *bound*); *keys*: its keys when the caller knows them (then the
    saved ones are not read and may be absent). ``ValueError`` as for
    :func:`unpack_groups`."""
    return SlotMap.packed(*_checked(prefix, arrays, bound, False, keys))


class LazyGroups(Mapping[str, tuple[int, ...]]):
    """``key -> tuple of ints`` that :func:`pack_groups` wrote, unpacked on
    first read: for maps only a save reads (a warm start that is never
    followed by one then pays nothing for them). The arrays are checked
    when it is made (``ValueError`` as for :func:`unpack_groups`)."""

    __slots__ = ("_args", "_dict")

    def __init__(
        self, prefix: str, arrays: Mapping[str, np.ndarray], bound: int
    ) -> None:
        raw, ptr, flat = (arrays[prefix + k] for k in ("keys", "ptr", "flat"))
        _check_ints(prefix, ptr, flat, bound)
        n = len(ptr) - 1
        if raw.dtype != np.uint8 and len(raw):
            raise ValueError(f"{prefix} keys of the wrong kind")
        text = bytes(raw).decode("utf-8")
        if n and text.count(_SEP) != n - 1:
            raise ValueError(f"{prefix} keys disagree")
        self._args: tuple[str, int, np.ndarray, np.ndarray] | None = (
            text,
            n,
            ptr,
            flat,
        )
        self._dict: dict[str, tuple[int, ...]] | None = None

    def _whole(self) -> dict[str, tuple[int, ...]]:
        got = self._dict
        if got is None:
            args = self._args
            assert args is not None
            text, n, ptr, flat = args
            keys = text.split(_SEP) if n else []
            ints, p = flat.tolist(), ptr.tolist()
            vals = map(tuple, map(ints.__getitem__, map(slice, p[:-1], p[1:])))
            got = self._dict = dict(zip(keys, vals, strict=True))
        return got

    def __getitem__(self, key: str) -> tuple[int, ...]:
        return self._whole()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())


def _check_ints(prefix: str, ptr: np.ndarray, flat: np.ndarray, bound: int) -> None:
    if (
        ptr.dtype != np.int64
        or flat.dtype != np.int64
        or ptr.ndim != 1
        or flat.ndim != 1
        or len(ptr) < 1
        or int(ptr[0]) != 0
        or int(ptr[-1]) != len(flat)
        or bool(np.any(np.diff(ptr) < 0))
        or (len(flat) and (int(flat.min()) < 0 or int(flat.max()) >= bound))
    ):
        raise ValueError(f"{prefix} groups disagree")


def _checked(
    prefix: str,
    arrays: Mapping[str, np.ndarray],
    bound: int,
    int_keys: bool,
    known: list | None = None,
) -> tuple[list, np.ndarray, np.ndarray]:
    ptr, flat = arrays[prefix + "ptr"], arrays[prefix + "flat"]
    _check_ints(prefix, ptr, flat, bound)
    n = len(ptr) - 1
    keys: list
    if known is not None:
        keys = known
    else:
        raw = arrays[prefix + "keys"]
        if raw.dtype != (np.int64 if int_keys else np.uint8) and len(raw):
            raise ValueError(f"{prefix} keys of the wrong kind")
        if int_keys:
            keys = raw.tolist()
        else:
            keys = bytes(raw).decode("utf-8").split(_SEP) if n else []
    if len(keys) != n:
        raise ValueError(f"{prefix} keys disagree")
    return keys, ptr, flat
