"""An immutable view of the whole index: BM25 plus the chunk table.

Requests read one ``Snapshot`` from start to end; a file change produces a
new snapshot (sharing unchanged arrays) that the workspace swaps in with one
attribute assignment, so readers never see a half-applied update.

Chunk columns used by ranking (kind, workflow, priority, symbol leaf) live in
arrays; full chunks (text, metadata) are read lazily from ``chunks.jsonl`` by
byte offset for chunks that came from disk, which keeps warm start fast and
resident memory small.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.index.bm25 import BM25Index
from pycsamt_lsp.index.tokenize import term_counts

__all__ = ["ChunkTable", "Snapshot", "TextSource"]


class TextSource:
    """Reads chunk records from a ``chunks.jsonl`` by offset.

    The file descriptor is held open, so a later atomic replace of the file
    (rename) does not disturb snapshots still reading the old one.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        self._cache: OrderedDict[int, Chunk] = OrderedDict()
        self._lock = threading.Lock()

    def read_raw(self, offset: int, length: int) -> bytes:
        """The record's JSON line as stored (no parsing)."""
        return os.pread(self.fd, length, offset)

    def read(self, offset: int, length: int) -> Chunk:
        """The chunk at *offset*, parsed; the last 512 read stay cached (the top
        chunks of related queries are read again and again).
        """
        with self._lock:
            hit = self._cache.get(offset)
            if hit is not None:
                self._cache.move_to_end(offset)
                return hit
        raw = os.pread(self.fd, length, offset)
        chunk = Chunk.from_dict(json.loads(raw))
        with self._lock:
            self._cache[offset] = chunk
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        return chunk

    def __del__(self) -> None:  # pragma: no cover - GC timing
        try:
            os.close(self.fd)
        except (OSError, AttributeError):
            pass


@dataclass(frozen=True, eq=False)
class ChunkTable:
    """Per-slot chunk columns; ``get(slot)`` returns the full chunk."""

    ids: list[str]
    paths: list[str]
    kinds: list[str]
    symbols: list[str | None]
    workflows: list[str | None]
    priority: np.ndarray  # int16
    line_start: np.ndarray  # int32 (0 = unknown)
    line_end: np.ndarray
    in_memory: Mapping[int, Chunk] = field(default_factory=dict)
    source: TextSource | None = None
    offsets: np.ndarray | None = None  # int64, len n + 1 (slots from disk)

    @classmethod
    def from_chunks(cls, chunks: Sequence[Chunk]) -> ChunkTable:
        """A table holding *chunks* in slots ``0..n-1``."""
        t = cls(
            [],
            [],
            [],
            [],
            [],
            np.zeros(0, np.int16),
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
        )
        return t.appended(chunks)

    def __len__(self) -> int:
        return len(self.ids)

    def appended(self, chunks: Sequence[Chunk]) -> ChunkTable:
        """A table with *chunks* in new slots after the existing ones."""
        first = len(self.ids)
        mem = dict(self.in_memory)
        for i, c in enumerate(chunks):
            mem[first + i] = c
        return replace(
            self,
            ids=self.ids + [c.id for c in chunks],
            paths=self.paths + [c.source_path for c in chunks],
            kinds=self.kinds + [c.kind for c in chunks],
            symbols=self.symbols + [c.symbol for c in chunks],
            workflows=self.workflows + [c.workflow for c in chunks],
            priority=np.concatenate(
                (self.priority, np.array([c.priority for c in chunks], np.int16))
            ),
            line_start=np.concatenate(
                (
                    self.line_start,
                    np.array([c.line_start or 0 for c in chunks], np.int32),
                )
            ),
            line_end=np.concatenate(
                (self.line_end, np.array([c.line_end or 0 for c in chunks], np.int32))
            ),
            in_memory=mem,
        )

    def raw_line(self, slot: int) -> bytes:
        """The chunk's ``chunks.jsonl`` line, copied from disk when it came from there."""
        c = self.in_memory.get(slot)
        if c is not None or self.source is None or self.offsets is None:
            c = c or self.get(slot)
            return c.json_line()
        start = int(self.offsets[slot])
        return self.source.read_raw(start, int(self.offsets[slot + 1]) - start)

    def get(self, slot: int) -> Chunk:
        """The full chunk in *slot* (read from disk when not in memory)."""
        c = self.in_memory.get(slot)
        if c is not None:
            return c
        if self.source is None or self.offsets is None or slot + 1 >= len(self.offsets):
            raise KeyError(slot)
        start = int(self.offsets[slot])
        return self.source.read(start, int(self.offsets[slot + 1]) - start)


#: the metadata a chunk's lines are in (all a move changes)
_LINE_KEYS = ("line_start", "line_end")


def _moved(c: Chunk, was: Chunk) -> bool:
    """Whether *c* is *was* at other lines (same text given): every column
    and metadata item but the id and the lines equal."""
    if (
        c.kind != was.kind
        or c.symbol != was.symbol
        or c.source_path != was.source_path
        or c.workflow != was.workflow
        or c.priority != was.priority
    ):
        return False
    a, b = c.metadata, was.metadata
    if a is b:
        return True
    if len(a) != len(b):
        return False
    for k, v in a.items():
        if k not in b:
            return False
        if k not in _LINE_KEYS and (w := b[k]) is not v and w != v:
            return False
    return True


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The index at one content fingerprint."""

    bm25: BM25Index
    table: ChunkTable
    files: Mapping[str, tuple[str, tuple[int, ...]]]  # rel -> (sha256 hex, slots)
    fingerprint: str
    generation: int = 0
    skipped: Mapping[str, str] = field(default_factory=dict)  # rel -> reason

    @classmethod
    def build(
        cls,
        per_file: Mapping[str, tuple[str, Sequence[Chunk]]],
        fingerprint: str,
        skipped: Mapping[str, str] | None = None,
        counts: Mapping[str, Sequence[Mapping[str, int]]] | None = None,
    ) -> Snapshot:
        """Index ``rel -> (sha hex, chunks)`` from scratch, files in path order.

        ``counts`` may carry ``rel -> term counts per chunk`` already computed
        (by the build workers); files without them are tokenized here.
        """
        chunks: list[Chunk] = []
        rows: list[Mapping[str, int]] = []
        files: dict[str, tuple[str, tuple[int, ...]]] = {}
        for rel in sorted(per_file):
            sha, file_chunks = per_file[rel]
            first = len(chunks)
            chunks.extend(file_chunks)
            given = counts.get(rel) if counts else None
            if given is None or len(given) != len(file_chunks):
                given = [term_counts(c.text) for c in file_chunks]
            rows.extend(given)
            files[rel] = (sha, tuple(range(first, len(chunks))))
        bm25 = BM25Index.build(rows)
        return cls(
            bm25,
            ChunkTable.from_chunks(chunks),
            files,
            fingerprint,
            0,
            dict(skipped or {}),
        )

    @property
    def n_chunks(self) -> int:
        """Live chunks (the index's document count)."""
        return self.bm25.n_docs

    def alive_slots(self) -> Iterable[int]:
        """Slots of the live chunks, grouped by file in path order (the order a
        saved index and the embedding store are written in).
        """
        for _rel, (_sha, slots) in sorted(self.files.items()):
            yield from slots

    def chunks(self) -> Iterable[Chunk]:
        """Every live chunk, in file-path order."""
        for slot in self.alive_slots():
            yield self.table.get(slot)

    def updated(
        self,
        changed: Mapping[str, tuple[str, Sequence[Chunk]]],
        removed: Iterable[str],
        fingerprint: str,
        skipped: Mapping[str, str] | None = None,
    ) -> Snapshot:
        """A new snapshot with *changed* files re-chunked and *removed* gone.

        A chunk of a changed file that the file had already keeps its slot:
        one equal to an old chunk (the statements before an edit), or one
        that only moved (the same text, symbol, kind and metadata at other
        lines: the statements after an edit that added or removed lines;
        its slot's id and lines are rewritten). Only the others leave and
        are appended. Why: what an update costs after this (the BM25 rows,
        the ranking and stage arrays, the name field) is per removed and
        added slot, and re-adding a large module's unchanged chunks made a
        save cost in proportion to the file, not to the change (issue 18).
        A kept slot holds the same text and the same columns but its id and
        lines, which no per-slot array is made from (ties rank by the id,
        read at query time), so every array stays right.
        """
        drop: list[int] = []
        files = dict(self.files)
        for rel in removed:
            old = files.pop(rel, None)
            if old:
                drop.extend(old[1])
        new_chunks: list[Chunk] = []
        moved: list[tuple[int, Chunk]] = []  # kept slots with new lines
        # per changed file: its chunks' slots, a kept slot as itself and a
        # new chunk as ``-1 - i`` (its index in new_chunks)
        layout: dict[str, tuple[str, list[int]]] = {}
        # the stored terms of a dropped chunk of the same text are reused
        # instead of tokenizing the text again
        same: dict[str, int] = {}
        table = self.table
        for rel in sorted(changed):
            sha, file_chunks = changed[rel]
            old = files.pop(rel, None)
            held = old[1] if old else ()
            by_id: dict[str, tuple[int, Chunk]] = {}
            by_text: dict[str, tuple[int, Chunk]] = {}
            for slot in held:
                try:
                    was = table.get(slot)
                except KeyError:
                    continue
                by_id.setdefault(was.id, (slot, was))
                by_text.setdefault(was.text, (slot, was))
                same.setdefault(was.text, slot)
            kept: set[int] = set()
            equal: dict[int, int] = {}  # chunk index -> its kept slot
            for i, c in enumerate(file_chunks):  # equal chunks first (same lines)
                hit = by_id.get(c.id)
                if (
                    hit is not None
                    and hit[0] not in kept
                    and (c is hit[1] or c == hit[1])
                ):
                    kept.add(hit[0])
                    equal[i] = hit[0]
            order: list[int] = []
            for i, c in enumerate(file_chunks):
                got = equal.get(i)
                if got is not None:
                    order.append(got)
                    continue
                hit = by_text.get(c.text)
                if hit is not None and hit[0] not in kept and _moved(c, hit[1]):
                    kept.add(hit[0])
                    order.append(hit[0])
                    moved.append((hit[0], c))
                else:
                    order.append(-1 - len(new_chunks))
                    new_chunks.append(c)
            drop.extend(slot for slot in held if slot not in kept)
            layout[rel] = (sha, order)
        bm25, new_slots = self.bm25.updated(
            drop,
            [
                s if (s := same.get(c.text)) is not None else term_counts(c.text)
                for c in new_chunks
            ],
        )
        table = self.table.appended(new_chunks)  # new columns: written below
        if drop or moved:
            mem = dict(table.in_memory)
            for s in drop:
                mem.pop(s, None)
            ids, line_start, line_end = table.ids, table.line_start, table.line_end
            for s, c in moved:
                mem[s] = c
                ids[s] = c.id
                line_start[s] = c.line_start or 0
                line_end[s] = c.line_end or 0
            table = replace(table, in_memory=mem)
        for rel, (sha, placed) in layout.items():
            files[rel] = (
                sha,
                tuple(s if s >= 0 else new_slots[-1 - s] for s in placed),
            )
        skip = dict(self.skipped if skipped is None else skipped)
        return Snapshot(bm25, table, files, fingerprint, self.generation + 1, skip)
