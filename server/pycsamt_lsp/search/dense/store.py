"""The persisted vectors: ``embeddings.npz`` beside the index, and building it.

One row per live chunk id, with the content hash of the chunk's file when
it was embedded (a row whose file changed since is stale and not used at
query time) and the hash of the text that was embedded. A rebuild reuses
every row whose embedded text is unchanged, whatever its chunk id or file,
so after an edit only the chunks whose text changed are sent to the model.
Reading here is uncached; a workspace keeps the loaded store in its
:class:`~.service.DenseService`.

What is embedded (:func:`embed_text`, recipe :data:`TEXT_RECIPE`) was
chosen on the tuning split only (``benchmarks/bench_quality.py --dense``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pycsamt_lsp.search.dense.backends import (
    EmbeddingBackend,
    EmbeddingError,
    l2_normalize,
)
from pycsamt_lsp.storage.atomic import atomic_write, atomic_write_text
from pycsamt_lsp.text.identifiers import identifier_parts

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "EMBED_GROUP",
    "MAX_EMBED_CHARS",
    "TEXT_RECIPE",
    "TEXT_RECIPES",
    "VECTOR_FILENAME",
    "EmbeddingStore",
    "build_embeddings",
    "describe_store",
    "embed_text",
    "load_store",
    "manifest_extra",
    "recipe_of",
    "refresh_embeddings",
    "refreshable",
    "save_store",
    "store_signature",
    "text_sha",
]

log = logging.getLogger(__name__)

VECTOR_FILENAME = "embeddings.npz"
#: Characters of a chunk that are embedded with the ``full`` recipe (the
#: head carries symbol, signature and docstring; MiniLM reads at most 256
#: word pieces anyway).
MAX_EMBED_CHARS = 2000
#: Characters kept of the ``head`` recipe's docstring / prose part.
HEAD_CHARS = 600
#: The recipes :func:`embed_text` knows; vectors made with another recipe
#: (or another model) are never reused.
TEXT_RECIPES = ("full", "head")
#: The default recipe, chosen on the tuning split: ``head`` costs a quarter
#: of ``full`` (71-83 word pieces a chunk against 210 on the sdist) and with
#: it fusion lifts the tuning split's MRR@10 (0.801 -> 0.818, sdist);
#: ``full`` at 256 pieces was not measured on quality (4x the embedding).
TEXT_RECIPE = "head"
#: Texts sent to a backend per call: the progress step of a build.
EMBED_GROUP = 128


def _first_paragraph(text: str, limit: int) -> str:
    para = text.strip().split("\n\n", 1)[0]
    return " ".join(para.split())[:limit]


def _words_of(symbol: str) -> str:
    leaf = symbol.rsplit(".", 1)[-1]
    return " ".join(identifier_parts(leaf)).lower()


def embed_text(chunk: Any, recipe: str = TEXT_RECIPE) -> str:
    """The text of *chunk* that is embedded.

    ``full``: the chunk text's first :data:`MAX_EMBED_CHARS` characters.
    ``head``: what a question is about, without the code body: for a
    symbol or method its leaf name as words (``rotate to strike``), the
    dotted name, the signature and the docstring's first paragraph (the
    code's first lines when there is no docstring); for a module its name
    and docstring's first paragraph; for prose (recipes, doc sections) the
    heading and the first :data:`HEAD_CHARS` characters. Short texts are
    also what makes MiniLM fast: cost grows faster than length.
    """
    text = chunk.text or ""
    if recipe == "full":
        return text[:MAX_EMBED_CHARS]
    if recipe != "head":
        raise EmbeddingError(f"unknown embedding text recipe {recipe!r}")
    meta = chunk.metadata or {}
    symbol = chunk.symbol or ""
    if chunk.kind in ("python_symbol", "python_method") and symbol:
        doc = _first_paragraph(str(meta.get("docstring") or ""), HEAD_CHARS)
        if not doc:
            code = text.split("\nCode:\n", 1)[-1]
            doc = " ".join(code.split())[:HEAD_CHARS]
        sig = str(meta.get("signature") or "")
        return f"{_words_of(symbol)}: {symbol}\n{sig}\n{doc}"
    if chunk.kind == "module_doc" and symbol:
        doc = _first_paragraph(str(meta.get("docstring") or ""), HEAD_CHARS)
        return f"{_words_of(symbol)} module: {symbol}\n{doc}"
    body = text.split("\n", 1)[1] if text.startswith("Document:") else text
    heading = str(meta.get("heading") or "")
    if heading and body.lstrip().startswith(heading):
        heading = ""
    return f"{heading}\n{' '.join(body.split())[:HEAD_CHARS]}".strip()


def text_sha(text: str) -> str:
    """The key of an embedded text: equal texts share one vector."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True, eq=False)
class EmbeddingStore:
    """Vectors of ``embeddings.npz``: one row per chunk id.

    ``file_sha`` is the content hash of the chunk's file when it was
    embedded; a row whose file changed since is stale and not used.
    ``text_sha`` is the hash of the embedded text and ``recipe`` how that
    text was made (:func:`embed_text`) and cut (``head/256``): a rebuild
    reuses a row whose text hash matches, under the same model and recipe.
    Stores written before these existed have them empty (nothing reused).
    """

    model: str
    ids: list[str]
    paths: list[str]
    file_sha: list[str]
    vectors: np.ndarray  # float32 (n, dim), unit rows
    fingerprint: str
    created: str
    text_sha: list[str] | None = None
    recipe: str = ""

    @property
    def dim(self) -> int:
        """Vector width (0 for an empty store)."""
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0

    def row_of(self) -> dict[str, int]:
        """Chunk id -> row (built once per store: a query's feedback step
        looks a row up, and the store never changes)."""
        return self._rows

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.ids)}

    def row_of_text(self) -> dict[str, int]:
        """Embedded-text hash -> row, to carry vectors of unchanged texts over
        to a new store instead of embedding them again.
        """
        return {h: i for i, h in enumerate(self.text_sha or []) if h}


def _bytes_column(values: list[str]) -> np.ndarray:
    """UTF-8 bytes (``S`` dtype): numpy's ``U`` strings take 4 bytes a
    character, and the id, path and hash columns were a third of the file."""
    return np.array([v.encode("utf-8") for v in values], dtype=np.bytes_)


def _str_column(arr: np.ndarray) -> list[str]:
    """A column back as ``str`` (``S`` columns, or ``U`` of older files)."""
    if arr.dtype.kind == "S":
        return [x.decode("utf-8") for x in arr.tolist()]
    return [str(x) for x in arr.tolist()]


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
            ids=_bytes_column(store.ids),
            paths=_bytes_column(store.paths),
            file_sha=_bytes_column(store.file_sha),
            text_sha=_bytes_column(store.text_sha or [""] * len(store.ids)),
            recipe=np.array(store.recipe),
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
            ids = _str_column(z["ids"])
            store = EmbeddingStore(
                model=str(z["model"]),
                ids=ids,
                paths=_str_column(z["paths"]),
                file_sha=_str_column(z["file_sha"]),
                vectors=np.asarray(z["vectors"], np.float32),
                fingerprint=str(z["fingerprint"]),
                created=str(z["created"]),
                text_sha=_str_column(z["text_sha"]) if "text_sha" in z.files else None,
                recipe=str(z["recipe"]) if "recipe" in z.files else "",
            )
    except Exception as exc:  # noqa: BLE001 - a corrupt file means "no vectors"
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None
    if store.vectors.ndim != 2 or store.vectors.shape[0] != len(store.ids):
        log.warning("ignoring %s: vectors and ids disagree", path)
        return None
    if store.text_sha is not None and len(store.text_sha) != len(store.ids):
        log.warning("ignoring %s: text hashes and ids disagree", path)
        return None
    return store


def manifest_extra(index_dir: Path) -> dict[str, Any]:
    """``{"embedded", "embed_model", "embed_dim"}`` of the vectors in *index_dir*."""
    return describe_store(load_store(index_dir))


def describe_store(store: EmbeddingStore | None) -> dict[str, Any]:
    """``{"embedded", "embed_model", "embed_dim"}`` of *store* for the manifest."""
    if store is None:
        return {"embedded": False, "embed_model": None}
    return {
        "embedded": True,
        "embed_model": store.model,
        "embed_dim": store.dim,
        "embed_recipe": store.recipe or None,
    }


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


def recipe_of(backend: EmbeddingBackend, recipe: str = TEXT_RECIPE) -> str:
    """``<text recipe>/<token cap>`` (``head/256``): what a vector depends on
    beyond the model's name."""
    cap = getattr(backend, "max_len", None)
    return f"{recipe}/{cap}" if cap else recipe


def build_embeddings(
    ws: Workspace,
    backend: EmbeddingBackend,
    *,
    recipe: str = TEXT_RECIPE,
    group: int = EMBED_GROUP,
    progress: Callable[[int, str], None] | None = None,
    unchanged_files: bool = False,
) -> dict[str, Any]:
    """Embed every live chunk of ``ws.snapshot`` and write ``embeddings.npz``.

    *unchanged_files* (a refresh): a chunk whose id and file hash match a
    stored row keeps that row without its text being made again.

    Only texts not embedded before (same model, same recipe, same text
    hash) are sent to the backend, each distinct text once; the rest is
    copied from the previous store. Texts go to the backend sorted by
    length in groups of *group* (the model pads a batch to its longest
    text, so similar lengths waste little), and *progress* gets
    ``(percent, message)`` after each group. The report has the counts
    (``embedded`` = texts sent, ``reused``), the time and the throughput.
    Raises :class:`EmbeddingError` when the backend fails.
    """
    snap = ws.snapshot
    if snap is None:
        raise EmbeddingError("the index is not built yet")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    full_recipe = recipe_of(backend, recipe)
    prev = ws.dense.load_store()
    if prev is not None and (prev.model != backend.name or prev.recipe != full_recipe):
        prev = None
    prev_rows = prev.row_of_text() if prev is not None else {}
    table = snap.table
    ids: list[str] = []
    paths: list[str] = []
    shas: list[str] = []
    tshas: list[str] = []
    reuse: dict[int, int] = {}
    todo: dict[str, tuple[str, list[int]]] = {}  # text sha -> (text, positions)
    # unchanged files: same chunk id and file hash as a stored row means the
    # same chunk, so its text hash and vector are taken as they are (what
    # query-time freshness trusts too); only chunks of changed files are
    # materialised and their texts made (~0.3 s of a save on the sdist)
    same_file = prev.row_of() if unchanged_files and prev is not None else {}
    prev_tsha = (prev.text_sha or []) if prev is not None else []
    for slot in snap.alive_slots():
        cid, rel = table.ids[slot], table.paths[slot]
        fsha = snap.files[rel][0] if rel in snap.files else ""
        pos = len(ids)
        ids.append(cid)
        paths.append(rel)
        shas.append(fsha)
        kept = same_file.get(cid)
        if (
            kept is not None
            and prev is not None
            and prev.file_sha[kept] == fsha
            and kept < len(prev_tsha)
            and prev_tsha[kept]
        ):
            tshas.append(prev_tsha[kept])
            reuse[pos] = kept
            continue
        text = embed_text(table.get(slot), recipe)
        key = text_sha(text)
        tshas.append(key)
        row = prev_rows.get(key)
        if row is not None:
            reuse[pos] = row
        elif key in todo:
            todo[key][1].append(pos)
        else:
            todo[key] = (text, [pos])
    dim = prev.dim if prev is not None else 0
    items = sorted(todo.values(), key=lambda tp: len(tp[0]))
    pending: list[tuple[list[int], np.ndarray]] = []
    done = 0
    # the time left is estimated from characters, not texts: texts go short
    # first, so a rate in texts/s promised a third of the real time left
    total_chars = sum(len(t) for t, _ in items) or 1
    done_chars = 0
    for b in range(0, len(items), max(int(group), 1)):
        part = items[b : b + max(int(group), 1)]
        vecs = l2_normalize(backend.embed([t for t, _ in part]))
        if vecs.shape[0] != len(part):
            raise EmbeddingError("the backend returned a wrong number of vectors")
        if dim and vecs.shape[1] != dim:
            raise EmbeddingError(
                f"the backend changed dimension ({vecs.shape[1]} != {dim})"
            )
        dim = vecs.shape[1]
        for (_, where), v in zip(part, vecs, strict=True):
            pending.append((where, v))
        done += len(part)
        done_chars += sum(len(t) for t, _ in part)
        if progress:
            el = time.perf_counter() - t0
            rate = done / el if el > 0 else 0.0
            eta = el * (total_chars - done_chars) / max(done_chars, 1)
            progress(
                int(100 * done / max(len(items), 1)),
                f"embedded {done}/{len(items)} texts ({rate:.1f}/s, ~{eta:.0f} s left)",
            )
    matrix = np.zeros((len(ids), dim or 1), np.float32)
    if reuse and prev is not None:
        pos_arr = np.fromiter(reuse.keys(), np.int64, len(reuse))
        row_arr = np.fromiter(reuse.values(), np.int64, len(reuse))
        matrix[pos_arr] = prev.vectors[row_arr]
    for where, v in pending:
        matrix[where] = v
    embed_s = time.perf_counter() - t0
    embed_cpu = time.process_time() - cpu0
    store = EmbeddingStore(
        model=backend.name,
        ids=ids,
        paths=paths,
        file_sha=shas,
        vectors=matrix,
        fingerprint=snap.fingerprint,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        text_sha=tshas,
        recipe=full_recipe,
    )
    path = save_store(ws.index_dir, store)
    _patch_manifest(ws.index_dir, describe_store(store))
    n_new = sum(len(w) for _, w in todo.values())
    return {
        "model": backend.name,
        "recipe": full_recipe,
        "dim": store.dim,
        "n_vectors": len(ids),
        "embedded": len(todo),
        "embedded_chunks": n_new,
        "reused": len(reuse),
        "path": str(path),
        "file_bytes": path.stat().st_size,
        "vectors_bytes": int(matrix.nbytes),
        "embed_seconds": round(embed_s, 3),
        "embed_cpu_seconds": round(embed_cpu, 3),
        "texts_per_s": round(len(todo) / embed_s, 2) if todo and embed_s > 0 else None,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def refreshable(ws: Workspace, store: EmbeddingStore | None) -> bool:
    """True when *store* lags behind ``ws.snapshot`` and can be refreshed
    locally: its model is the hashing or MiniLM backend (never a paid or
    networked one behind the user's back) and its recipe is known."""
    from pycsamt_lsp.search.dense.backends import HASH_NAME, MINILM_NAME

    snap = ws.snapshot
    if snap is None or store is None or store.fingerprint == snap.fingerprint:
        return False
    if store.model not in (HASH_NAME, MINILM_NAME):
        return False
    return (store.recipe or TEXT_RECIPE).partition("/")[0] in TEXT_RECIPES


def refresh_embeddings(
    ws: Workspace,
    *,
    progress: Callable[[int, str], None] | None = None,
) -> dict[str, Any] | None:
    """Bring ``embeddings.npz`` up to date after ``ws.refresh`` (an edit).

    Re-embeds only the chunks whose embedded text changed, with the model
    and recipe of the existing vectors, and only with a local backend (no
    network call, no cost is ever made behind the user's back). None when
    there are no vectors, they are already current, or their model is not
    local; an :class:`EmbeddingError` when the local backend fails. Meant
    for the server after a save (the chunks of an edited file have stale
    vectors until then, and dense retrieval skips them).
    """
    store = ws.dense.load_store()
    if store is None or not refreshable(ws, store):
        return None
    recipe, _, cap = (store.recipe or TEXT_RECIPE).partition("/")
    backend = ws.dense.backend_for(store.model)
    if cap.isdigit() and getattr(backend, "max_len", None) not in (None, int(cap)):
        from pycsamt_lsp.search.dense.backends import MiniLMBackend

        backend = MiniLMBackend(max_len=int(cap))  # the stored vectors' cap
    return build_embeddings(
        ws, backend, recipe=recipe, progress=progress, unchanged_files=True
    )
