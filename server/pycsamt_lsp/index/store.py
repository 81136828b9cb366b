"""Persisting a snapshot in ``.pycsamt_rag/`` and loading it back.

Files (DESIGN 4): ``manifest.json`` (what was indexed, how, when),
``chunks.jsonl`` (every chunk, inspectable, one JSON object a line),
``meta.json`` (the per-chunk columns ranking needs and the file map), and
``index.npz`` (BM25 term ids and weights, and chunk byte offsets) so a warm
start re-tokenizes nothing. Each file is written to a temporary name and
renamed; all carry one ``build_id`` so a torn set is detected on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pycsamt_lsp import INDEX_VERSION, __version__
from pycsamt_lsp.errors import IndexLoadError
from pycsamt_lsp.index.bm25 import BM25Index
from pycsamt_lsp.index.mapped import load_npz, shared_strings
from pycsamt_lsp.index.snapshot import ChunkTable, Snapshot, TextSource
from pycsamt_lsp.storage.atomic import atomic_write
from pycsamt_lsp.storage.validate import check_manifest, check_meta

__all__ = [
    "INDEX_DIRNAME",
    "IndexLoadError",
    "default_index_dir",
    "load_snapshot",
    "save_snapshot",
]

INDEX_DIRNAME = ".pycsamt_rag"


def _writable(d: Path) -> bool:
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
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return cache / "indexes" / f"{root.name}-{key}"


def save_snapshot(
    snap: Snapshot, index_dir: Path, manifest_extra: dict[str, Any]
) -> dict[str, Any]:
    """Write *snap* (compacted, renumbered in file order); return the manifest."""
    if not _writable(index_dir):
        raise OSError(f"index folder {index_dir} is not writable")
    build_id = uuid.uuid4().hex
    order = np.fromiter(snap.alive_slots(), np.int64)
    offsets = np.zeros(len(order) + 1, np.int64)
    by_kind: dict[str, int] = {}
    by_wf: dict[str, int] = {}
    table = snap.table

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
    meta = {
        "build_id": build_id,
        "ids": [table.ids[s] for s in order],
        "paths": [table.paths[s] for s in order],
        "kinds": [table.kinds[s] for s in order],
        "symbols": [table.symbols[s] for s in order],
        "workflows": [table.workflows[s] for s in order],
        "files": files,
        "skipped": dict(snap.skipped),
    }
    atomic_write(
        index_dir / "meta.json", lambda fh: fh.write(json.dumps(meta).encode("utf-8"))
    )
    # Any: numpy's stub types savez(**kwds) together with its allow_pickle flag
    arrays: dict[str, Any] = snap.bm25.renumbered(order).arrays()
    arrays.update(
        offsets=offsets,
        priority=table.priority[order],
        line_start=table.line_start[order],
        line_end=table.line_end[order],
        build_id=np.frombuffer(build_id.encode(), np.uint8),
    )
    atomic_write(index_dir / "index.npz", lambda fh: np.savez(fh, **arrays))
    manifest = {
        "index_version": INDEX_VERSION,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "n_chunks": len(order),
        "n_files": len(files),
        "counts_by_kind": dict(sorted(by_kind.items())),
        "counts_by_workflow": dict(sorted(by_wf.items())),
        "source_fingerprint": snap.fingerprint,
        "embedded": False,
        "embed_model": None,
        "build_id": build_id,
        "chunks_sha256": digest.hexdigest(),
        **manifest_extra,
    }
    atomic_write(
        index_dir / "manifest.json",
        lambda fh: fh.write(json.dumps(manifest, indent=2).encode()),
    )
    return manifest


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


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
    index_dir: Path, *, profile_name: str
) -> tuple[Snapshot, dict[str, Any]]:
    """Load a persisted snapshot; :class:`IndexLoadError` with the reason otherwise."""
    manifest = read_manifest(index_dir)
    if manifest.get("profile") != profile_name:
        raise IndexLoadError(
            f"index was built with profile {manifest.get('profile')!r}, not {profile_name!r}"
        )
    check_manifest(manifest)
    try:
        meta = json.loads((index_dir / "meta.json").read_text(encoding="utf-8"))
        arrays = load_npz(index_dir / "index.npz")  # postings mapped, not copied
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
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
        chunks_path = index_dir / "chunks.jsonl"
        if chunks_path.stat().st_size != int(offsets[-1]):
            raise IndexLoadError("chunks.jsonl does not match the index (size differs)")
        if _sha256_file(chunks_path) != manifest.get("chunks_sha256"):
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
