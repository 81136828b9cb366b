"""Which slots and files two snapshots share: what the card caches of a
new snapshot are derived with (:mod:`pycsamt_lsp.cards.service`,
:meth:`pycsamt_lsp.cards.symbols.SymbolTable.following`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pycsamt_lsp.index.snapshot import ChunkTable

__all__ = ["NO_FILE", "changed_files", "extends"]

#: the ``files`` entry of a file a snapshot does not hold
NO_FILE: tuple[str, tuple[int, ...]] = ("", ())


def extends(new: ChunkTable, old: ChunkTable) -> bool:
    """Whether every slot of *old* holds the same path, kind, symbol,
    workflow and priority in *new* (a snapshot's ``updated`` only appends
    slots, so a save's table extends its predecessor's; a rebuilt or
    reloaded one in general does not). The columns' items are shared
    objects, so the comparison is mostly pointer checks (~0.2 ms for the
    sdist)."""
    if new is old:
        return True
    n = len(old.ids)
    if len(new.ids) < n:
        return False
    for a, b in (
        (new.symbols, old.symbols),
        (new.kinds, old.kinds),
        (new.workflows, old.workflows),
        (new.paths, old.paths),
    ):
        if a is not b and a[:n] != b:
            return False
    return new.priority is old.priority or bool(
        np.array_equal(new.priority[:n], old.priority)
    )


def changed_files(
    old: Mapping[str, tuple[str, tuple[int, ...]]],
    new: Mapping[str, tuple[str, tuple[int, ...]]],
) -> set[str]:
    """Files added, removed or re-chunked (other slots) between two
    snapshots' ``files``; with :func:`extends`, every other file's chunks
    are the same chunks in the same slots."""
    out = {rel for rel in old if rel not in new}
    for rel, entry in new.items():
        was = old.get(rel)
        if was is not entry and (was is None or was[1] != entry[1]):
            out.add(rel)
    return out
