"""Ranking arrays persisted beside an index by its first reader (warm start).

Why: the name field (:class:`~pycsamt_lsp.search.fields.NameField`, stage
``field_bm25``) is built from the symbol column by splitting ~7,000 names:
50-80 ms of CPU, most of what a fresh ``pycsamt-lsp query`` process spent
after its imports (issue 18). It depends only on the persisted chunk table,
so the first process that loads an index saves it (``names.npz``, a few
hundred KB) and later ones read it back in about a millisecond, the same
arrays to the bit. It is keyed by the index's ``build_id`` and its number
of slots; anything that does not match or does not load is ignored (the
field is built as before), and a read-only index folder just means every
process builds it.

The other ranking arrays (:class:`~pycsamt_lsp.search.retrieval.RankAux`:
kind and workflow codes, the symbol and leaf slot maps and their heads, and
the stage masks and module tree of
:class:`~pycsamt_lsp.search.stages.StageAux`) are the same kind of thing:
pure functions of the persisted chunk table (and its live slots), none of
the profile's settings but the ones the table already carries. Grouping
~8,000 rows cost another ~10 ms of CPU at every open; ``ranks.npz`` holds
them, with the same keying and the same fallback.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from pycsamt_lsp.index.mapped import load_errors, load_npz
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.search.fields import NameField
from pycsamt_lsp.search.retrieval import RankAux
from pycsamt_lsp.storage.atomic import atomic_write

__all__ = [
    "NAMES_FILE",
    "RANKS_FILE",
    "load_names",
    "load_ranks",
    "save_names",
    "save_ranks",
]

log = logging.getLogger(__name__)

NAMES_FILE = "names.npz"
RANKS_FILE = "ranks.npz"


def load_names(index_dir: Path, build_id: str, n_slots: int) -> NameField | None:
    """The name field saved for the index *build_id*, or None."""
    path = index_dir / NAMES_FILE
    if not build_id or not path.is_file():
        return None
    try:
        arrays = load_npz(path, mapped=())  # every array a copy, CRCs checked
        if bytes(arrays.pop("build_id")).decode() != build_id:
            return None
        names = NameField.from_arrays(arrays)
    except load_errors() as exc:
        log.debug("ignoring %s: %s", path, exc)
        return None
    return names if names.n_slots == n_slots else None


def save_names(index_dir: Path, build_id: str, names: NameField) -> bool:
    """Save *names* for the index *build_id*; False when it cannot be written."""
    if not build_id:
        return False
    # Any: numpy's stub types savez(**kwds) together with its allow_pickle flag
    arrays: dict[str, Any] = names.to_arrays()
    arrays["build_id"] = np.frombuffer(build_id.encode(), np.uint8)
    try:
        atomic_write(index_dir / NAMES_FILE, lambda fh: np.savez(fh, **arrays))
    except OSError as exc:
        log.debug("name field not saved: %s", exc)
        return False
    return True


def load_ranks(
    index_dir: Path, build_id: str, snap: Snapshot, names: NameField | None
) -> RankAux | None:
    """The ranking arrays saved for the index *build_id* (*snap*, loaded
    from it), with the name field *names* (built when None), or None."""
    path = index_dir / RANKS_FILE
    if not build_id or not path.is_file():
        return None
    try:
        arrays = load_npz(path, mapped=())  # every array a copy, CRCs checked
        if bytes(arrays.pop("build_id")).decode() != build_id:
            return None
        if arrays.pop("n_slots").tolist() != [len(snap.table)]:
            return None
        return RankAux.from_arrays(snap, arrays, names)
    except load_errors() as exc:  # UnicodeDecodeError is a ValueError
        log.debug("ignoring %s: %s", path, exc)
        return None
    except (TypeError, IndexError) as exc:  # an array of another shape (0-d)
        log.debug("ignoring %s: %s", path, exc)
        return None


def save_ranks(index_dir: Path, build_id: str, n_slots: int, aux: RankAux) -> bool:
    """Save *aux*'s table-derived arrays for the index *build_id* (*n_slots*
    slots); False when they cannot be packed or written."""
    if not build_id:
        return False
    try:
        arrays: dict[str, Any] = aux.to_arrays()
    except ValueError as exc:  # a name holding the key separator
        log.debug("ranking arrays not saved: %s", exc)
        return False
    arrays["build_id"] = np.frombuffer(build_id.encode(), np.uint8)
    arrays["n_slots"] = np.array([n_slots], np.int64)
    try:
        atomic_write(index_dir / RANKS_FILE, lambda fh: np.savez(fh, **arrays))
    except OSError as exc:
        log.debug("ranking arrays not saved: %s", exc)
        return False
    return True
