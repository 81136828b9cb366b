"""A workspace's card caches: the cards of its current package model and
the symbol table of its current snapshot.

Each :class:`~pycsamt_lsp.workspace.facade.Workspace` owns one
:class:`CardService`; a new model or snapshot (an edit to the corpus)
replaces what is cached, so cards follow the corpus, and two workspaces in
one process never share a card. It holds no reference to the workspace.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from pycsamt_lsp.cards.model import Card
from pycsamt_lsp.cards.symbols import SymbolTable
from pycsamt_lsp.index.snapshot import Snapshot

if TYPE_CHECKING:
    from pycsamt_lsp.model.package import PackageModel

__all__ = ["CardCache", "CardService"]


class CardCache:
    """Cards of one model; the workflow and slot maps of one snapshot."""

    def __init__(self, model: PackageModel) -> None:
        self.model = model
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.workflows: dict[str, str | None] = {}
        self.slots: dict[str, int] = {}
        self.cards: dict[tuple[str, str | None], Card | None] = {}

    def follow(self, snap: Snapshot | None) -> None:
        """Point the maps at *snap* (cards made for another snapshot are dropped)."""
        if self.snapshot is not snap:
            with self.lock:
                if self.snapshot is not snap:
                    self.workflows, self.slots = symbol_map(snap)
                    self.cards = {}
                    self.snapshot = snap


def symbol_map(snap: Snapshot | None) -> tuple[dict[str, str | None], dict[str, int]]:
    """``symbol -> workflow`` and ``symbol -> slot`` over the live chunks."""
    wf: dict[str, str | None] = {}
    slots: dict[str, int] = {}
    if snap is None:
        return wf, slots
    t = snap.table
    symbols, workflows, kinds = t.symbols, t.workflows, t.kinds
    for _rel, (_sha, file_slots) in snap.files.items():
        for s in file_slots:
            sym = symbols[s]
            if not sym:
                continue
            if sym not in slots or kinds[s] != "module_doc":
                slots[sym] = s
            if wf.get(sym) is None:
                wf[sym] = workflows[s]
    return wf, slots


class CardService:
    """The card cache of the current model and the symbol table of the
    current snapshot, each replaced when its source is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: CardCache | None = None
        self._table: tuple[Snapshot, SymbolTable] | None = None

    def cache_for(self, model: PackageModel, snap: Snapshot | None) -> CardCache:
        """The cache of *model*, its maps following *snap*."""
        with self._lock:
            cache = self._cache
            if cache is None or cache.model is not model:
                cache = self._cache = CardCache(model)
        cache.follow(snap)
        return cache

    def symbol_table(self, snap: Snapshot) -> SymbolTable:
        """The code symbols of *snap* (built once per snapshot)."""
        with self._lock:
            hit = self._table
            if hit is not None and hit[0] is snap:
                return hit[1]
        table = SymbolTable(snap)
        with self._lock:
            self._table = (snap, table)
        return table

    def clear(self) -> None:
        """Forget every cached card and symbol table (benchmarks, tests)."""
        with self._lock:
            self._cache = None
            self._table = None
