"""The persisted vectors: ``embeddings.npz`` beside the index, and building it.

One row per live chunk id, with the content hash of the chunk's file when
it was embedded: a row whose file changed since is stale and not used, and
a rebuild re-embeds only new or changed chunks. Reading here is uncached;
a workspace keeps the loaded store in its :class:`~.service.DenseService`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pycsamt_lsp.search.dense.backends import (
    EmbeddingBackend,
    EmbeddingError,
    l2_normalize,
)
from pycsamt_lsp.storage.atomic import atomic_write, atomic_write_text

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "MAX_EMBED_CHARS",
    "VECTOR_FILENAME",
    "EmbeddingStore",
    "build_embeddings",
    "describe_store",
    "load_store",
    "manifest_extra",
    "save_store",
    "store_signature",
]

log = logging.getLogger(__name__)

VECTOR_FILENAME = "embeddings.npz"
#: Characters of a chunk that are embedded (the head carries symbol,
#: signature and docstring; MiniLM reads 256 word pieces anyway).
MAX_EMBED_CHARS = 2000


@dataclass(frozen=True, eq=False)
class EmbeddingStore:
    """Vectors of ``embeddings.npz``: one row per chunk id.

    ``file_sha`` is the content hash of the chunk's file when it was
    embedded; a row whose file changed since is stale and not used.
    """

    model: str
    ids: list[str]
    paths: list[str]
    file_sha: list[str]
    vectors: np.ndarray  # float32 (n, dim), unit rows
    fingerprint: str
    created: str

    @property
    def dim(self) -> int:
        """Vector width (0 for an empty store)."""
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0

    def row_of(self) -> dict[str, int]:
        """Chunk id -> row, to carry vectors of unchanged chunks over to a new
        store instead of embedding them again.
        """
        return {cid: i for i, cid in enumerate(self.ids)}


def save_store(index_dir: Path, store: EmbeddingStore) -> Path:
    """Write ``embeddings.npz`` atomically (temporary file + rename)."""
    index_dir.mkdir(parents=True, exist_ok=True)
    path = index_dir / VECTOR_FILENAME
    atomic_write(
        path,
        lambda fh: np.savez(
            fh,
            model=np.array(store.model),
            fingerprint=np.array(store.fingerprint),
            created=np.array(store.created),
            ids=np.array(store.ids, dtype=str),
            paths=np.array(store.paths, dtype=str),
            file_sha=np.array(store.file_sha, dtype=str),
            vectors=np.asarray(store.vectors, np.float32),
        ),
    )
    return path


def store_signature(index_dir: Path) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of ``embeddings.npz``, None when there is none:
    what a cache of the loaded store is checked against."""
    try:
        st = (Path(index_dir) / VECTOR_FILENAME).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def load_store(index_dir: Path) -> EmbeddingStore | None:
    """The persisted vectors, or None when absent or unreadable (logged)."""
    path = Path(index_dir) / VECTOR_FILENAME
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            ids = [str(x) for x in z["ids"].tolist()]
            store = EmbeddingStore(
                model=str(z["model"]),
                ids=ids,
                paths=[str(x) for x in z["paths"].tolist()],
                file_sha=[str(x) for x in z["file_sha"].tolist()],
                vectors=np.asarray(z["vectors"], np.float32),
                fingerprint=str(z["fingerprint"]),
                created=str(z["created"]),
            )
    except Exception as exc:  # noqa: BLE001 - a corrupt file means "no vectors"
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None
    if store.vectors.ndim != 2 or store.vectors.shape[0] != len(store.ids):
        log.warning("ignoring %s: vectors and ids disagree", path)
        return None
    return store


def manifest_extra(index_dir: Path) -> dict[str, Any]:
    """``{"embedded", "embed_model", "embed_dim"}`` of the vectors in *index_dir*."""
    return describe_store(load_store(index_dir))


def describe_store(store: EmbeddingStore | None) -> dict[str, Any]:
    """``{"embedded", "embed_model", "embed_dim"}`` of *store* for the manifest."""
    if store is None:
        return {"embedded": False, "embed_model": None}
    return {"embedded": True, "embed_model": store.model, "embed_dim": store.dim}


def _patch_manifest(index_dir: Path, extra: dict[str, Any]) -> None:
    path = index_dir / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # not persisted yet: the next persist records nothing stale
    if not isinstance(manifest, dict):
        return
    manifest.update(extra)
    try:
        atomic_write_text(path, json.dumps(manifest, indent=2))
    except OSError as exc:
        log.warning("could not record the embeddings in the manifest: %s", exc)


def build_embeddings(
    ws: Workspace,
    backend: EmbeddingBackend,
    *,
    batch_size: int = 64,
    progress: Callable[[int, str], None] | None = None,
) -> dict[str, Any]:
    """Embed every live chunk of ``ws.snapshot`` and write ``embeddings.npz``.

    Vectors of chunks whose file is unchanged since the last run with the
    same model are reused; only new or changed chunks are sent to the
    backend. Raises :class:`EmbeddingError` when the backend fails.
    """
    snap = ws.snapshot
    if snap is None:
        raise EmbeddingError("the index is not built yet")
    t0 = time.perf_counter()
    prev = ws.dense.load_store()
    if prev is not None and prev.model != backend.name:
        prev = None
    prev_rows = prev.row_of() if prev is not None else {}
    table = snap.table
    ids: list[str] = []
    paths: list[str] = []
    shas: list[str] = []
    reuse: dict[int, int] = {}
    todo: list[tuple[int, int]] = []  # (position, slot)
    for slot in snap.alive_slots():
        cid, rel = table.ids[slot], table.paths[slot]
        sha = snap.files[rel][0] if rel in snap.files else ""
        pos = len(ids)
        ids.append(cid)
        paths.append(rel)
        shas.append(sha)
        row = prev_rows.get(cid)
        if row is not None and prev is not None and prev.file_sha[row] == sha:
            reuse[pos] = row
        else:
            todo.append((pos, slot))
    dim = prev.dim if prev is not None else 0
    new_vecs: dict[int, np.ndarray] = {}
    for b in range(0, len(todo), batch_size):
        part = todo[b : b + batch_size]
        texts = [(table.get(slot).text or "")[:MAX_EMBED_CHARS] for _, slot in part]
        vecs = l2_normalize(backend.embed(texts))
        if vecs.shape[0] != len(part):
            raise EmbeddingError("the backend returned a wrong number of vectors")
        if dim and vecs.shape[1] != dim:
            raise EmbeddingError(
                f"the backend changed dimension ({vecs.shape[1]} != {dim})"
            )
        dim = vecs.shape[1]
        for (pos, _), v in zip(part, vecs, strict=True):
            new_vecs[pos] = v
        if progress:
            done = min(b + batch_size, len(todo))
            progress(
                int(100 * done / max(len(todo), 1)), f"embedded {done}/{len(todo)}"
            )
    matrix = np.zeros((len(ids), dim or 1), np.float32)
    for pos, row in reuse.items():
        matrix[pos] = prev.vectors[row]  # type: ignore[union-attr]
    for pos, v in new_vecs.items():
        matrix[pos] = v
    store = EmbeddingStore(
        model=backend.name,
        ids=ids,
        paths=paths,
        file_sha=shas,
        vectors=matrix,
        fingerprint=snap.fingerprint,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    path = save_store(ws.index_dir, store)
    _patch_manifest(
        ws.index_dir,
        {"embedded": True, "embed_model": backend.name, "embed_dim": store.dim},
    )
    return {
        "model": backend.name,
        "dim": store.dim,
        "n_vectors": len(ids),
        "embedded": len(new_vecs),
        "reused": len(reuse),
        "path": str(path),
        "seconds": round(time.perf_counter() - t0, 3),
    }
