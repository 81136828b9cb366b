"""A workspace's card caches: the cards of its current package model and
the symbol maps and symbol table of its current snapshot.

Each :class:`~pycsamt_lsp.workspace.facade.Workspace` owns one
:class:`CardService`; a new model or snapshot (an edit to the corpus)
replaces what is cached, so cards follow the corpus, and two workspaces in
one process never share a card. It holds no reference to the workspace.

A save makes a new snapshot and, once its module is re-modelled, a new
model: the card warm-up then ran over every chunk twice (the symbol maps,
then the symbol table: ~30 ms of CPU for the sdist's 7,863 chunks, more
than the refresh itself). Both are now derived from the previous
snapshot's, re-reading only the files the save changed
(:meth:`SymbolMaps.following`, :meth:`SymbolTable.following`); the answers
are those of a full pass over the new snapshot (``symbol_map``), which is
what any other snapshot gets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pycsamt_lsp.cards.lineage import NO_FILE, changed_files, extends
from pycsamt_lsp.cards.model import Card
from pycsamt_lsp.cards.symbols import SymbolTable
from pycsamt_lsp.index.snapshot import ChunkTable, Snapshot

if TYPE_CHECKING:
    from pycsamt_lsp.model.package import PackageModel

__all__ = ["CardCache", "CardService", "SymbolMaps", "extends", "symbol_map"]


def symbol_map(snap: Snapshot | None) -> tuple[dict[str, str | None], dict[str, int]]:
    """``symbol -> workflow`` and ``symbol -> slot`` over the live chunks.

    Files in the snapshot's ``files`` order, chunks in slot order: the slot
    is the symbol's last chunk that is not a ``module_doc``, else its first;
    the workflow the first one that is not None."""
    maps = SymbolMaps.full(snap)
    return maps.workflows, maps.slots


class SymbolMaps:
    """``symbol -> workflow`` and ``symbol -> slot`` of one snapshot (as
    :func:`symbol_map`), plus the files of each symbol found in more than
    one file (what a later snapshot's maps are derived with). Never
    mutated once made: readers may hold them while a newer one is built."""

    __slots__ = ("multi", "slots", "snapshot", "workflows")

    def __init__(
        self,
        snapshot: Snapshot | None,
        workflows: dict[str, str | None],
        slots: dict[str, int],
        multi: dict[str, tuple[str, ...]],
    ) -> None:
        self.snapshot = snapshot
        self.workflows = workflows
        self.slots = slots
        #: symbol -> the files holding it, for symbols in more than one file
        #: (none in the pyCSAMT sdist; ``a/b.py`` and ``a/b/__init__.py``
        #: both hold ``a.b``)
        self.multi = multi

    @classmethod
    def full(cls, snap: Snapshot | None) -> SymbolMaps:
        """The maps of *snap* from all of its chunks."""
        wf: dict[str, str | None] = {}
        slots: dict[str, int] = {}
        home: dict[str, str] = {}
        multi: dict[str, list[str]] = {}
        if snap is None:
            return cls(snap, wf, slots, {})
        for rel, (_sha, file_slots) in snap.files.items():
            _place(snap.table, rel, file_slots, None, wf, slots, home, multi)
        return cls(snap, wf, slots, {k: tuple(v) for k, v in multi.items()})

    def following(self, snap: Snapshot | None) -> SymbolMaps:
        """The maps of *snap*: derived from these when *snap*'s table extends
        this snapshot's (:func:`extends`) and the files it did not change
        kept their order (both hold after a save), re-reading the changed
        files and the other files of the symbols they hold; else
        :meth:`full`. Same answers either way."""
        old = self.snapshot
        if snap is old:
            return self
        if old is None or snap is None or not extends(snap.table, old.table):
            return SymbolMaps.full(snap)
        of, nf = old.files, snap.files
        changed = changed_files(of, nf)
        if not changed:
            return SymbolMaps(snap, self.workflows, self.slots, self.multi)
        # unchanged files must keep their relative order ("first workflow
        # wins", module_doc precedence): ``updated`` moves the changed ones
        # to the end and keeps the others as they were
        if [r for r in of if r not in changed and of[r][1]] != [
            r for r in nf if r not in changed and nf[r][1]
        ]:
            return SymbolMaps.full(snap)
        ot, nt = old.table, snap.table
        affected: set[str] = set()
        gone: set[int] = set()  # the changed files' slots in the old snapshot
        for rel in changed:
            for s in of.get(rel, NO_FILE)[1]:
                gone.add(s)
                if sym := ot.symbols[s]:
                    affected.add(sym)
        scan = {rel for rel in changed if rel in nf}
        for rel in scan:
            for s in nf[rel][1]:
                if sym := nt.symbols[s]:
                    affected.add(sym)
        # the unchanged files holding an affected symbol are read again too
        for sym in affected:
            files = self.multi.get(sym)
            if files is not None:
                scan.update(r for r in files if r not in changed)
                continue
            slot = self.slots.get(sym)
            if slot is None or slot in gone:
                continue  # a new symbol, or one only a changed file held
            rel = ot.paths[slot]  # a symbol a save added to another file's
            if slot not in of.get(rel, NO_FILE)[1]:
                return SymbolMaps.full(snap)  # a slot outside its path's file
            scan.add(rel)
        order = list(scan)
        if len(order) > 1:
            pos = {rel: i for i, rel in enumerate(nf)}
            order.sort(key=pos.__getitem__)
        wf = dict(self.workflows)
        slots = dict(self.slots)
        multi = dict(self.multi)
        for sym in affected:
            wf.pop(sym, None)
            slots.pop(sym, None)
            multi.pop(sym, None)
        home: dict[str, str] = {}
        found: dict[str, list[str]] = {}
        for rel in order:
            _place(nt, rel, nf[rel][1], affected, wf, slots, home, found)
        multi.update((k, tuple(v)) for k, v in found.items())
        return SymbolMaps(snap, wf, slots, multi)


def _place(
    t: ChunkTable,
    rel: str,
    file_slots: Iterable[int],
    only: set[str] | None,
    wf: dict[str, str | None],
    slots: dict[str, int],
    home: dict[str, str],
    multi: dict[str, list[str]],
) -> None:
    """Add file *rel*'s chunks (its *file_slots* of table *t*) to the maps,
    in file order, for the symbols in *only* (all when None): the first
    slot of a symbol unless a later one is not a module docstring, the
    first workflow found, and the files of a symbol held by more than one.
    One rule for :meth:`SymbolMaps.full` and the incremental pass, so both
    give the same maps."""
    symbols, workflows, kinds = t.symbols, t.workflows, t.kinds
    for s in file_slots:
        sym = symbols[s]
        if not sym or (only is not None and sym not in only):
            continue
        if sym not in slots:
            slots[sym] = s
            home[sym] = rel
        else:
            if kinds[s] != "module_doc":
                slots[sym] = s
            if home[sym] != rel:
                files = multi.setdefault(sym, [home[sym]])
                if files[-1] != rel:  # a file's slots come together
                    files.append(rel)
        if wf.get(sym) is None:
            wf[sym] = workflows[s]


class CardCache:
    """Cards of one model; the workflow and slot maps of one snapshot."""

    def __init__(self, model: PackageModel) -> None:
        self.model = model
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.maps: SymbolMaps | None = None
        self.workflows: dict[str, str | None] = {}
        self.slots: dict[str, int] = {}
        self.cards: dict[tuple[str, str | None], Card | None] = {}

    def follow(self, maps: SymbolMaps) -> None:
        """Point the maps at *maps*' snapshot (cards made for another
        snapshot are dropped)."""
        if self.maps is not maps:
            with self.lock:
                if self.maps is not maps:
                    self.workflows, self.slots = maps.workflows, maps.slots
                    self.cards = {}
                    self.snapshot = maps.snapshot
                    self.maps = maps


class CardService:
    """The card cache of the current model, and the symbol maps and the
    symbol table of the current snapshot, each replaced when its source is
    (the snapshot's derived from the previous snapshot's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: one derivation at a time: two readers of a new snapshot share one
        self._derive = threading.Lock()
        self._cache: CardCache | None = None
        self._maps: SymbolMaps | None = None
        self._table: tuple[Snapshot, SymbolTable] | None = None

    def maps_for(self, snap: Snapshot | None) -> SymbolMaps:
        """The symbol maps of *snap* (derived once per snapshot)."""
        maps = self._maps
        if maps is not None and maps.snapshot is snap:
            return maps
        with self._derive:
            maps = self._maps
            if maps is None:
                got = SymbolMaps.full(snap)
            elif maps.snapshot is snap:
                return maps
            else:
                got = maps.following(snap)
            self._maps = got
            return got

    def cache_for(self, model: PackageModel, snap: Snapshot | None) -> CardCache:
        """The cache of *model*, its maps following *snap*."""
        with self._lock:
            cache = self._cache
            if cache is None or cache.model is not model:
                cache = self._cache = CardCache(model)
        cache.follow(self.maps_for(snap))
        return cache

    def symbol_table(self, snap: Snapshot) -> SymbolTable:
        """The code symbols of *snap* (built once per snapshot, from the
        previous snapshot's table where it can: :meth:`SymbolTable.following`)."""
        with self._lock:
            hit = self._table
        if hit is not None and hit[0] is snap:
            return hit[1]
        with self._derive:
            with self._lock:
                hit = self._table
            if hit is not None and hit[0] is snap:
                return hit[1]
            table = (
                SymbolTable(snap)
                if hit is None
                else SymbolTable.following(hit[1], hit[0], snap)
            )
            with self._lock:
                self._table = (snap, table)
            return table

    def clear(self) -> None:
        """Forget every cached card, symbol map and symbol table (benchmarks, tests)."""
        with self._lock:
            self._cache = None
            self._maps = None
            self._table = None
