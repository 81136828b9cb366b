"""Persisting a snapshot in ``.pycsamt_rag/`` and loading it back.

Files (DESIGN 4): ``manifest.json`` (what was indexed, how, when),
``chunks.jsonl`` (every chunk, inspectable, one JSON object a line),
``meta.json`` (the per-chunk columns ranking needs and the file map), and
``index.npz`` (BM25 term ids and weights, and chunk byte offsets) so a warm
start re-tokenizes nothing. Each file is written to a temporary name and
renamed; all carry one ``build_id`` so a torn set is detected on load.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from array import array
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from pycsamt_lsp import INDEX_VERSION, __version__
from pycsamt_lsp.errors import IndexLoadError
from pycsamt_lsp.index.bm25 import BM25Index
from pycsamt_lsp.index.mapped import load_errors, load_npz, shared_strings
from pycsamt_lsp.index.snapshot import ChunkTable, Snapshot, TextSource
from pycsamt_lsp.storage.atomic import Staged, atomic_write, staged_write
from pycsamt_lsp.storage.validate import check_manifest, check_meta

__all__ = [
    "INDEX_DIRNAME",
    "ChunkWriter",
    "IndexLoadError",
    "default_index_dir",
    "load_snapshot",
    "save_snapshot",
    "synced_meanwhile",
    "writable",
]

log = logging.getLogger(__name__)

INDEX_DIRNAME = ".pycsamt_rag"


def _writable(d: Path) -> bool:
    # hashlib, tempfile and uuid are imported where used: loading an index
    # needs none of them (3-6 ms of a fresh query process; issue 18)
    import tempfile

    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, prefix=".probe-"):
            pass
        return True
    except OSError:
        return False


def default_index_dir(root: Path, cache: Path) -> Path:
    """``root/.pycsamt_rag``, or a per-root cache folder when root is read-only."""
    d = root / INDEX_DIRNAME
    if (d.is_dir() and os.access(d, os.W_OK)) or (
        not d.exists() and os.access(root, os.W_OK)
    ):
        return d
    import hashlib

    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return cache / "indexes" / f"{root.name}-{key}"


def writable(index_dir: Path) -> bool:
    """Whether an index can be written in *index_dir* (created if missing)."""
    return _writable(index_dir)


def save_snapshot(
    snap: Snapshot, index_dir: Path, manifest_extra: dict[str, Any]
) -> dict[str, Any]:
    """Write *snap* (compacted, renumbered in file order); return the manifest."""
    if not _writable(index_dir):
        raise OSError(f"index folder {index_dir} is not writable")
    order = np.fromiter(snap.alive_slots(), np.int64)
    offsets = np.zeros(len(order) + 1, np.int64)
    by_kind: dict[str, int] = {}
    by_wf: dict[str, int] = {}
    table = snap.table

    import hashlib

    digest = hashlib.sha256()

    def write_chunks(fh) -> None:
        pos = 0
        for i, slot in enumerate(order):
            line = table.raw_line(int(slot))
            fh.write(line)
            digest.update(line)
            pos += len(line)
            offsets[i + 1] = pos
            kind, wf = table.kinds[slot], table.workflows[slot] or "none"
            by_kind[kind] = by_kind.get(kind, 0) + 1
            by_wf[wf] = by_wf.get(wf, 0) + 1

    atomic_write(index_dir / "chunks.jsonl", write_chunks)
    new_of = {int(s): i for i, s in enumerate(order)}
    files = {}
    for rel, (sha, slots) in sorted(snap.files.items()):
        files[rel] = [sha, [new_of[s] for s in slots]]
    columns = {
        "ids": [table.ids[s] for s in order],
        "paths": [table.paths[s] for s in order],
        "kinds": [table.kinds[s] for s in order],
        "symbols": [table.symbols[s] for s in order],
        "workflows": [table.workflows[s] for s in order],
    }
    return _write_rest(
        index_dir,
        columns,
        files,
        dict(snap.skipped),
        snap.bm25.renumbered(order),
        {
            "offsets": offsets,
            "priority": table.priority[order],
            "line_start": table.line_start[order],
            "line_end": table.line_end[order],
        },
        {
            "n_chunks": len(order),
            "n_files": len(files),
            "counts_by_kind": by_kind,
            "counts_by_workflow": by_wf,
            "source_fingerprint": snap.fingerprint,
            "chunks_sha256": digest.hexdigest(),
        },
        manifest_extra,
    )


def _write_rest(
    index_dir: Path,
    columns: dict[str, list[Any]],
    files: dict[str, list[Any]],
    skipped: dict[str, str],
    bm25: BM25Index,
    table_arrays: dict[str, np.ndarray],
    stats: dict[str, Any],
    manifest_extra: dict[str, Any],
) -> dict[str, Any]:
    """``meta.json``, ``index.npz`` and ``manifest.json`` of a saved
    snapshot (:class:`_Rest` with arrays already made)."""

    def arrays() -> dict[str, Any]:
        return {**bm25.arrays(), **table_arrays}

    return _Rest(index_dir, columns, files, skipped, arrays).finish(
        stats, manifest_extra
    )


class _Rest:
    """``meta.json`` and ``index.npz`` written side by side, put in place
    with ``manifest.json`` last (:meth:`finish`: a reader checks the one
    ``build_id`` all three carry, so the manifest is the commit point).

    One writer for a saved snapshot and for a streamed build, so both write
    the same bytes for the same chunks. ``index.npz`` is written by a
    thread while this one encodes and writes ``meta.json``: its arrays
    (*arrays*, called in that thread: a streamed build's BM25 postings are
    made there), the zip's CRCs and both files' writes and ``fsync`` are
    mostly work without the GIL, and at the end of a build the worker
    processes are gone, so a second core is free (issue 18: the build's
    serial tail). Both are written and synced under temporary names
    (:func:`~pycsamt_lsp.storage.atomic.staged_write`) and renamed only in
    :meth:`finish`, after what the caller writes before it (a build's
    ``chunks.jsonl``), so a failure anywhere before leaves the old index
    files as they were, as when each was written in turn.
    """

    def __init__(
        self,
        index_dir: Path,
        columns: dict[str, list[Any]],
        files: dict[str, list[Any]],
        skipped: dict[str, str],
        arrays: Callable[[], dict[str, Any]],
    ) -> None:
        import uuid

        self.index_dir = index_dir
        self.build_id = build_id = uuid.uuid4().hex
        self._staged: list[Staged] = []
        self._error: BaseException | None = None

        def write_npz() -> None:
            try:
                # Any: numpy's stub types savez(**kwds) with its allow_pickle flag
                got: dict[str, Any] = arrays()
                got["build_id"] = np.frombuffer(build_id.encode(), np.uint8)
                npz = staged_write(
                    index_dir / "index.npz", lambda fh: np.savez(fh, **got)
                )
                self._staged.append(npz)
            except BaseException as exc:  # noqa: BLE001 - raised again by finish()
                self._error = exc

        self._npz = threading.Thread(
            target=write_npz, name="pycsamt-index-npz", daemon=True
        )
        self._npz.start()
        try:
            meta = {"build_id": build_id, **columns, "files": files, "skipped": skipped}
            data = json.dumps(meta).encode("utf-8")
            del meta
            self._meta = staged_write(
                index_dir / "meta.json", lambda fh: fh.write(data)
            )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Wait for ``index.npz`` and remove what was not put in place (a
        failed build); idempotent, nothing to do after :meth:`finish`."""
        self._npz.join()
        for staged in (getattr(self, "_meta", None), *self._staged):
            if staged is not None:
                staged.discard()

    def finish(
        self, stats: dict[str, Any], manifest_extra: dict[str, Any]
    ) -> dict[str, Any]:
        """Wait for ``index.npz``, put it and ``meta.json`` in place, then
        write ``manifest.json``; return it. Raises what writing
        ``index.npz`` raised (nothing is put in place then)."""
        self._npz.join()
        if self._error is not None:
            error, self._error = self._error, None
            self.close()
            raise error
        try:
            self._meta.commit()
            self._staged[0].commit()
        except BaseException:
            self.close()
            raise
        manifest = {
            "index_version": INDEX_VERSION,
            "tool_version": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "n_chunks": stats["n_chunks"],
            "n_files": stats["n_files"],
            "counts_by_kind": dict(sorted(stats["counts_by_kind"].items())),
            "counts_by_workflow": dict(sorted(stats["counts_by_workflow"].items())),
            "source_fingerprint": stats["source_fingerprint"],
            "embedded": False,
            "embed_model": None,
            "build_id": self.build_id,
            "chunks_sha256": stats["chunks_sha256"],
            **manifest_extra,
        }
        # not synced: the commit point, checked whole by every load; what it
        # names was synced above (storage.atomic: durable=False). The sync
        # was 5-10 ms at the very end of every build
        atomic_write(
            self.index_dir / "manifest.json",
            lambda fh: fh.write(json.dumps(manifest, indent=2).encode()),
            durable=False,
        )
        return manifest


def _raw(buf: Any) -> memoryview:
    """*buf*'s bytes (an ``array``, ``bytes`` or numpy array): what
    ``array.frombytes`` takes, which refuses typed buffers."""
    return memoryview(buf).cast("B")


class _Vocab(dict[str, int]):
    """Term -> id where a missing term is given the next id as it is looked
    up (a streamed build's global vocabulary)."""

    def __missing__(self, term: str) -> int:
        new = self[term] = len(self)
        return new


class ChunkWriter:
    """A persisted index written file by file while the build still runs.

    The streamed build (``Workspace.rebuild``) hands it each file's
    :data:`~pycsamt_lsp.model.state.PackedChunks` in path order: the chunk
    lines go straight to ``chunks.jsonl`` (an :func:`atomic_open` handle),
    the terms its batch meets first in the file are mapped to global ids
    (first occurrence in path order, as :meth:`BM25Index.build` numbers
    them) and only flat arrays and the short ranking columns are kept. :meth:`finish` writes
    the other files, byte for byte what :func:`save_snapshot` writes for a
    snapshot of the same chunks. No chunk text or term mapping is held.
    """

    def __init__(self, fh: BinaryIO) -> None:
        import hashlib

        self.fh = fh
        self.digest = hashlib.sha256()
        self.vocab: dict[str, int] = _Vocab()
        self.columns: dict[str, list[Any]] = {
            "ids": [],
            "paths": [],
            "kinds": [],
            "symbols": [],
            "workflows": [],
        }
        self.files: dict[str, list[Any]] = {}
        self.n_chunks = 0
        self._done: tuple[np.ndarray, BM25Index] | None = None  # prepare()
        #: global ids of each batch's terms, by batch (PackedChunks' last
        #: field), in the batch's numbering (~0.7 MB in all on the checkout)
        self._batches: dict[str, array] = {}
        # the flat columns grow in place (``frombytes``: a copy of the
        # worker's bytes, no per-file numpy array) and become numpy views at
        # the end: no concatenation of ~8,000 small arrays on the build's
        # serial tail (~20 ms on the checkout with docs)
        self._parts: dict[str, array] = {
            key: array(code)
            for key, code in (
                ("line_len", "q"),
                ("priority", "h"),
                ("line_start", "i"),
                ("line_end", "i"),
                ("row_len", "i"),
                ("terms", "i"),
                ("tfs", "i"),
            )
        }

    def add(self, rel: str, sha_hex: str, packed: Any) -> None:
        """The next file (path order): its hash and packed chunks."""
        (
            _error,
            lines,
            line_len,
            ids,
            paths,
            kinds,
            symbols,
            workflows,
            priority,
            line_start,
            line_end,
            vocab,
            row_len,
            term_ids,
            tfs,
            batch,
        ) = packed
        self.fh.write(lines)
        self.digest.update(lines)
        n = len(ids)
        first = self.n_chunks
        self.files[rel] = [sha_hex, list(range(first, first + n))]
        self.n_chunks = first + n
        cols = self.columns
        cols["ids"].extend(ids)
        cols["paths"].extend(paths)
        cols["kinds"].extend(kinds)
        cols["symbols"].extend(symbols)
        cols["workflows"].extend(workflows)
        parts = self._parts
        parts["line_len"].frombytes(_raw(line_len))
        parts["priority"].frombytes(_raw(priority))
        parts["line_start"].frombytes(_raw(line_start))
        parts["line_end"].frombytes(_raw(line_end))
        parts["row_len"].frombytes(_raw(row_len))
        parts["tfs"].frombytes(_raw(tfs))
        gmap = self._batches.get(batch)
        if gmap is None:
            gmap = self._batches[batch] = array("i")
        if vocab:
            terms = vocab.split("\n")
            # the global ids of the terms the batch meets first here, a
            # term not seen before numbered as it is met (_Vocab.__missing__):
            # one lookup a term, in C. A batch's files come in path order and
            # no file of another batch between them has these terms before
            # this one, so new terms get ids in path order of first
            # occurrence, as BM25Index.build numbers them
            gmap.frombytes(
                _raw(np.fromiter(map(self.vocab.__getitem__, terms), np.int32))
            )
        if len(term_ids):
            local = np.frombuffer(term_ids, np.int32)
            parts["terms"].frombytes(_raw(np.frombuffer(gmap, np.int32)[local]))

    def _col(self, key: str, dtype: Any) -> np.ndarray:
        """A finished column as a numpy array of *dtype* (a view of the
        grown buffer when the type is the same)."""
        got = self._parts.pop(key)
        if not got:
            return np.zeros(0, dtype)
        # the array type codes used ('q', 'h', 'i') are numpy's codes too
        return np.frombuffer(got, got.typecode).astype(dtype, copy=False)

    def prepare(self) -> None:
        """Make the BM25 index and the chunk offsets from what was added
        (once; :meth:`finish` does it when not done). Separate so a build
        can do it while ``chunks.jsonl`` is still being synced to disk."""
        if self._done is not None:
            return
        self._batches.clear()
        n = self.n_chunks
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(self._col("line_len", np.int64), out=offsets[1:])
        doc_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(self._col("row_len", np.int64), out=doc_ptr[1:])
        bm25 = BM25Index.from_rows(
            dict(self.vocab),  # a plain dict: no insertion on a lookup later
            doc_ptr,
            self._col("terms", np.int32),
            self._col("tfs", np.float32),
        )
        self._done = (offsets, bm25)

    def _arrays(self) -> dict[str, Any]:
        """Every array of ``index.npz`` but the build id (:class:`_Rest`
        calls it in its thread)."""
        self.prepare()
        assert self._done is not None
        offsets, bm25 = self._done
        self._done = None
        return {
            **bm25.arrays(),
            "offsets": offsets,
            "priority": self._col("priority", np.int16),
            "line_start": self._col("line_start", np.int32),
            "line_end": self._col("line_end", np.int32),
        }

    def start_rest(self, index_dir: Path, skipped: dict[str, str]) -> _Rest:
        """Write ``meta.json`` now and start ``index.npz`` (its BM25 arrays
        made in :class:`_Rest`'s thread) once every file was added; the
        returned handle's ``finish(self.stats(...), extra)`` writes the
        manifest. Separate from :meth:`finish` so a build can start them
        before ``chunks.jsonl`` and the package model are synced and
        renamed (the manifest, last, still waits for those)."""
        return _Rest(index_dir, self.columns, self.files, skipped, self._arrays)

    def stats(self, fingerprint: str) -> dict[str, Any]:
        """The manifest's counts for what was added."""
        by_kind: dict[str, int] = {}
        for k in self.columns["kinds"]:
            by_kind[k] = by_kind.get(k, 0) + 1
        by_wf: dict[str, int] = {}
        for w in self.columns["workflows"]:
            by_wf[w or "none"] = by_wf.get(w or "none", 0) + 1
        return {
            "n_chunks": self.n_chunks,
            "n_files": len(self.files),
            "counts_by_kind": by_kind,
            "counts_by_workflow": by_wf,
            "source_fingerprint": fingerprint,
            "chunks_sha256": self.digest.hexdigest(),
        }

    def finish(
        self,
        index_dir: Path,
        fingerprint: str,
        skipped: dict[str, str],
        manifest_extra: dict[str, Any],
    ) -> dict[str, Any]:
        """Write ``meta.json``, ``index.npz`` and ``manifest.json`` (after the
        ``chunks.jsonl`` handle was closed and renamed); return the manifest."""
        rest = self.start_rest(index_dir, skipped)
        return rest.finish(self.stats(fingerprint), manifest_extra)


class _Syncs:
    """Threads syncing file descriptors (:func:`synced_meanwhile`)."""

    def __init__(self, threads: list[threading.Thread]) -> None:
        self.threads = threads

    def join(self) -> None:
        for t in self.threads:
            t.join()


def synced_meanwhile(*handles: BinaryIO) -> _Syncs:
    """Flush *handles* and start syncing them to disk, one thread each
    (``fsync`` releases the GIL; the disk's bandwidth is most of it: a 30
    MB ``chunks.jsonl`` and a 10 MB model took 30-37 ms together, 33-38
    ms one after the other); join before closing them.
    Their :func:`~pycsamt_lsp.storage.atomic.atomic_open` still syncs each
    on close (then quick: nothing left to write) and reports any error, so
    a failure here is only logged. A streamed build writes its other index
    files meanwhile instead of waiting for ~40 MB to reach the disk."""
    for fh in handles:
        fh.flush()

    def run(fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:  # raised again by the handle's own sync
            log.debug("early fsync failed: %s", exc)

    threads = [
        threading.Thread(
            target=run, args=(fh.fileno(),), name="pycsamt-index-fsync", daemon=True
        )
        for fh in handles
    ]
    for t in threads:
        t.start()
    return _Syncs(threads)


def _sha256_file(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _sha256_meanwhile(path: Path) -> Callable[[], str]:
    """Start hashing *path* in a thread; the returned function waits for the
    hex digest (or raises the :class:`OSError` reading it raised).

    ``hashlib`` and file reads release the GIL, so checking the 20+ MB
    ``chunks.jsonl`` of a large corpus overlaps the decoding of the other
    index files instead of following it (warm start, issue 18).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["sha"] = _sha256_file(path)
        except OSError as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, name="pycsamt-index-sha", daemon=True)
    worker.start()

    def result() -> str:
        worker.join()
        if "error" in box:
            raise box["error"]
        return box["sha"]

    return result


def read_manifest(index_dir: Path) -> dict[str, Any]:
    """The manifest, or :class:`IndexLoadError` saying what is wrong with it."""
    path = index_dir / "manifest.json"
    if not path.is_file():
        raise IndexLoadError(f"no persisted index in {index_dir}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"manifest.json is unreadable: {exc}") from None
    if not isinstance(manifest, dict):
        raise IndexLoadError("manifest.json is not an object")
    if manifest.get("index_version") != INDEX_VERSION:
        raise IndexLoadError(
            f"index version {manifest.get('index_version')!r} is not {INDEX_VERSION} (foreign or old index)"
        )
    return manifest


def load_snapshot(
    index_dir: Path,
    *,
    profile_name: str,
    verified: Callable[[dict[str, Any], Path], bool] | None = None,
) -> tuple[Snapshot, dict[str, Any]]:
    """Load a persisted snapshot; :class:`IndexLoadError` with the reason otherwise.

    ``chunks.jsonl`` is checked against the manifest's SHA-256 and the
    mapped arrays of ``index.npz`` against their zip CRCs, each unless
    ``verified(manifest, path)`` says this very file was checked before (the
    workspace's freshness record: same inode, size, mtime and ctime as when
    an earlier load checked it; warm start, issue 18). Sizes, shapes and the
    build id are checked either way.
    """
    manifest = read_manifest(index_dir)
    if manifest.get("profile") != profile_name:
        raise IndexLoadError(
            f"index was built with profile {manifest.get('profile')!r}, not {profile_name!r}"
        )
    check_manifest(manifest)
    chunks_path = index_dir / "chunks.jsonl"
    chunks_sha: Callable[[], str | None]
    if verified is not None and verified(manifest, chunks_path):
        chunks_sha = lambda: manifest.get("chunks_sha256")  # noqa: E731
    else:
        chunks_sha = _sha256_meanwhile(chunks_path)
    try:
        meta = json.loads((index_dir / "meta.json").read_text(encoding="utf-8"))
        npz = index_dir / "index.npz"
        arrays = load_npz(  # postings mapped, not copied
            npz, check_crc=verified is None or not verified(manifest, npz)
        )
    except load_errors() as exc:
        raise IndexLoadError(f"index files are unreadable: {exc}") from None
    try:
        check_meta(meta, manifest["n_chunks"])
        build_id = bytes(arrays.pop("build_id")).decode()
        if not (build_id == meta.get("build_id") == manifest.get("build_id")):
            raise IndexLoadError(
                "index files come from different builds (interrupted write)"
            )
        bm25 = BM25Index.from_arrays(arrays)
        n = len(meta["ids"])
        offsets = arrays["offsets"]
        if bm25.n_slots != n or len(offsets) != n + 1 or n != manifest.get("n_chunks"):
            raise IndexLoadError("index files disagree on the number of chunks")
        if chunks_path.stat().st_size != int(offsets[-1]):
            raise IndexLoadError("chunks.jsonl does not match the index (size differs)")
        if chunks_sha() != manifest.get("chunks_sha256"):
            raise IndexLoadError(
                "chunks.jsonl is corrupt (checksum differs from the manifest)"
            )
        table = ChunkTable(
            ids=meta["ids"],
            paths=shared_strings(meta["paths"]),
            kinds=shared_strings(meta["kinds"]),
            symbols=meta["symbols"],
            workflows=shared_strings(meta["workflows"]),
            priority=arrays["priority"].astype(np.int16),
            line_start=arrays["line_start"].astype(np.int32),
            line_end=arrays["line_end"].astype(np.int32),
            in_memory={},
            source=TextSource(str(chunks_path)),
            offsets=offsets,
        )
        files = {
            rel: (sha, tuple(slots)) for rel, (sha, slots) in meta["files"].items()
        }
    except IndexLoadError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OSError) as exc:
        raise IndexLoadError(f"index files are inconsistent: {exc!r}") from None
    snap = Snapshot(
        bm25, table, files, manifest["source_fingerprint"], 0, meta.get("skipped", {})
    )
    return snap, manifest
