"""Keeping the static package model beside the index.

The model covers every module file of the package (``.py``, ``.pyi`` stubs,
compiled extensions), including those the retrieval policy leaves out of
the index, because an import of a real but unindexed module is real. It is
built from the same parse as the index (the chunking workers extract the
module facts from the tree they already parsed), updated incrementally with
it, and persisted as ``package_model.json`` beside the index with the
SHA-256 of every module file, so a warm start re-parses only what changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from array import array
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO

from pycsamt_lsp.chunking import Chunk, FileChunks, chunk_file
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.corpus.safety import MODEL_MAX_BYTES, read_regular, screen, shown
from pycsamt_lsp.index import heap
from pycsamt_lsp.index.tokenize import RunMemo, term_counts
from pycsamt_lsp.model.deferred import DeferredModuleInfo, HeadModuleInfo, deferrable
from pycsamt_lsp.model.extract import module_head
from pycsamt_lsp.model.package import (
    ModuleInfo,
    PackageModel,
    module_info_from_bytes,
    module_name_for,
    package_dirs,
)
from pycsamt_lsp.storage.atomic import atomic_write
from pycsamt_lsp.text.jsonenc import json_encoder

__all__ = [
    "MODEL_FILE",
    "BuildJob",
    "ModelWriter",
    "PackedChunks",
    "PackedFile",
    "deferred_info",
    "load_model",
    "module_files",
    "pack_batch",
    "process_file",
    "save_model",
    "worker_init",
]

log = logging.getLogger(__name__)

MODEL_FILE = "package_model.json"
_SKIP = frozenset(
    {"__pycache__", ".git", ".hg", ".svn", "node_modules", ".pycsamt_rag"}
)


def module_files(
    root: Path, package: str, screened: Mapping[str, Path] | None = None
) -> dict[str, Path]:
    """Every module file of the package under ``root`` (flat or src layout):
    ``rel -> path``.

    *screened*: files the caller already passed through
    :func:`~pycsamt_lsp.corpus.safety.screen` under the same root (the
    index's listing, in a build): only their size is checked again, not
    their name and link target (that check was most of this function's
    time, on the build's serial path)."""
    out: dict[str, Path] = {}
    walks = (w for top in package_dirs(root, package) for w in os.walk(top))
    for dirpath, dirnames, filenames in walks:
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP and not d.startswith(".")
        )
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        for fn in filenames:
            rel = f"{rel_dir}/{fn}"
            if module_name_for(rel, package) is not None:
                out[rel] = Path(dirpath) / fn
    # no FIFO, symlink out of the corpus, bad name or 50 MB file (issue 19)
    if not screened:
        return dict(screen(root, out.items(), max_bytes=MODEL_MAX_BYTES))
    fresh = dict(
        screen(
            root,
            ((r, p) for r, p in out.items() if screened.get(r) != p),
            max_bytes=MODEL_MAX_BYTES,
        )
    )
    kept: dict[str, Path] = {}
    for rel, path in out.items():  # in walk order, as screen() keeps it
        if screened.get(rel) != path:
            if rel in fresh:
                kept[rel] = path
            continue
        try:
            why = (
                f"larger than {MODEL_MAX_BYTES} bytes"
                if os.stat(path).st_size > MODEL_MAX_BYTES
                else None
            )
        except OSError as exc:
            why = f"unreadable ({exc.strerror})"
        if why:
            log.info("skipped %s: %s", shown(rel), why)
        else:
            kept[rel] = path
    return kept


def module_info(
    rel: str, data: bytes, package: str, tree: Any = None
) -> ModuleInfo | None:
    """Module facts from a tree already parsed, or from the bytes."""
    meta = module_name_for(rel, package)
    if meta is None:
        return None
    dotted, is_pkg, kind = meta
    if kind == "compiled":
        return ModuleInfo(name=dotted, rel=rel, is_package=is_pkg, kind="compiled")
    if tree is not None and kind in ("source", "stub"):
        return ModuleInfo.from_tree(
            tree, name=dotted, rel=rel, is_package=is_pkg, kind=kind, source=data
        )
    return module_info_from_bytes(data, dotted, rel, is_pkg, kind)


def process_file(
    args: tuple[str, bytes, Profile, bool],
) -> tuple[str, FileChunks, ModuleInfo | None]:
    """One parse for both consumers: chunks for the index, facts for the model.

    A process-pool worker: the tree never leaves the process, only chunks,
    their term counts (tokenizing here uses both cores; the parent would do
    it alone) and the extracted module facts do.
    """
    rel, data, profile, index = args
    fc, info = _parse(rel, data, profile, index)
    # plain dicts: a Counter pickles as a call that rebuilds it on arrival
    fc.counts = [dict(c) for c in fc.counts or ()]
    return rel, fc, info


def _parse(
    rel: str,
    data: bytes,
    profile: Profile,
    index: bool,
    runs: RunMemo | None = None,
) -> tuple[FileChunks, ModuleInfo | None]:
    """Chunks with their term counts (``fc.counts``) and module facts, from
    one parse; the tree is dropped. *runs*: the build's tokenizer memo."""
    fc = chunk_file(rel, data, profile) if index else FileChunks([])
    fc.counts = [term_counts(c.text, runs) for c in fc.chunks]
    info = module_info(rel, data, profile.package, fc.tree)
    fc.tree = None
    return fc, info


# -- the streamed build's worker side -------------------------------------------

#: One file of a streamed build: ``(rel, path, indexed, modelled)``; indexed:
#: the index policy lists it; modelled: it is a module file of the package.
BuildJob = tuple[str, str, bool, bool]
#: A file's chunks as a streamed build needs them, everything already encoded:
#: ``(error, lines, line_lengths, ids, paths, kinds, symbols, workflows,
#: priority, line_start, line_end, vocab, terms_per_chunk, term_ids, tfs,
#: batch)``. ``lines`` are the ``chunks.jsonl`` lines; terms are numbered per
#: batch (:class:`BatchTerms`): ``vocab`` holds the file's terms its batch had
#: not met before (newline-joined, first-occurrence order), ``term_ids`` index
#: the batch's terms, ``batch`` names the batch (its first file).
PackedChunks = tuple[
    str | None,
    bytes,
    array,
    list[str],
    list[str],
    list[str],
    list[str | None],
    list[str | None],
    array,
    array,
    array,
    str,
    array,
    array,
    array,
    str,
]
#: ``(rel, read_failure, sha256 digest, chunks, model_record, model_sha)``:
#: ``read_failure`` is ``("too_large" | "unreadable", message)`` when the
#: index could not read the file; ``model_record`` the file's entry of
#: ``package_model.json`` (``"rel": {...}``, UTF-8) or None.
PackedFile = tuple[
    str,
    tuple[str, str] | None,
    bytes | None,
    PackedChunks | None,
    bytes | None,
    str | None,
]

_PACK = struct.pack
#: json.dumps' defaults, as save_model (the encode method, made once)
_ENCODE_MODEL = json_encoder()


def worker_init() -> None:
    """Initializer of a build's worker processes: no cyclic collection
    (``heap.no_gc``). Being here, it also makes a spawned worker import
    this module (the chunkers, the model extractor, the tokenizer) as it
    starts, while the parent still lists the corpus, not when its first
    batch arrives."""
    heap.no_gc()


def pack_batch(
    args: tuple[Profile, str, list[BuildJob]]
    | tuple[Profile, str, RunMemo, list[BuildJob]],
) -> list[PackedFile]:
    """A streamed build's work item: read, chunk, tokenize and model files.

    Runs in a worker process. What goes back is compact and final: bytes
    and flat arrays, no :class:`Chunk` objects, no term-count mappings, no
    parse results; the parent only maps each file's distinct terms to
    global ids and copies bytes into the index files (``index.store``), so
    its share of the build stays small and overlaps the parsing.
    ``(profile, root, memo, jobs)``: *memo* is the calling process's
    :class:`~pycsamt_lsp.index.tokenize.RunMemo` for this build (one per
    process, every batch of it: a worker's fixed arguments are unpickled
    once), the output unchanged; without it the tokenizer's ``lru_cache``.
    """
    profile, root, *memo, jobs = args
    terms = BatchTerms(jobs[0][0] if jobs else "")
    runs = memo[0] if memo else None
    return [_pack_file(profile, Path(root), job, terms, runs) for job in jobs]


class BatchTerms(dict[str, int]):
    """The terms of one :func:`pack_batch` batch, numbered as first met
    (in path order: a batch's files are). Why per batch, not per file: a
    batch's files share most of their terms, so the building process, which
    maps each term string it is sent to a global id, gets 167,000 strings
    instead of 431,000 on the checkout with docs (its share of the build),
    and the worker numbers each term once a batch instead of once a file."""

    __slots__ = ("key", "order")

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key  # the batch's name in its files' PackedChunks
        self.order: list[str] = []  # the terms by id

    def __missing__(self, term: str) -> int:
        new = self[term] = len(self.order)
        self.order.append(term)
        return new


def _pack_file(
    profile: Profile,
    root: Path,
    job: BuildJob,
    terms: BatchTerms,
    runs: RunMemo | None = None,
) -> PackedFile:
    """One file, read here (the parent never holds the corpus's bytes)."""
    # the path as the string it came as: a ``Path`` made per file (its
    # parsing) was 2,045 of them on the checkout, for two reads
    rel, path, indexed, modelled = job
    failed: tuple[str, str] | None = None
    digest: bytes | None = None
    if indexed:
        try:
            data = read_regular(path, profile.max_file_bytes)
        except OSError as exc:
            failed, data = ("unreadable", str(exc)), None
        else:
            if data is None:
                failed = ("too_large", "")
            else:
                digest = hashlib.sha256(data).digest()
        if data is not None:
            fc, info = _parse(rel, data, profile, True, runs)
            chunks = _pack_chunks(fc, terms)
            return (
                rel,
                None,
                digest,
                chunks,
                _model_record(info, profile, root),
                # the model's hash is the index's digest (one SHA-256 a file)
                digest.hex() if modelled and digest is not None else None,
            )
    if not modelled:
        return rel, failed, None, None, None, None
    try:  # a module file the index leaves out (or could not take)
        if rel.endswith((".so", ".pyd")):
            raw = b""
        else:
            with open(path, "rb") as fh:
                raw = fh.read()
    except OSError:
        return rel, failed, None, None, None, None
    sha = sha_hex(raw)
    later = deferred_info(
        rel, raw, profile.package, root, sha, suggested=profile.should_index(rel)
    )
    if later is not None:  # listed, parsed when first used (model.deferred)
        return rel, failed, None, None, _record(rel, later.to_dict()), sha
    _fc, info = _parse(rel, raw, profile, False)
    return rel, failed, None, None, _model_record(info, profile, root), sha


def deferred_info(
    rel: str,
    data: bytes,
    package: str,
    root: Path | None,
    sha: str | None = None,
    *,
    suggested: bool = True,
) -> DeferredModuleInfo | None:
    """A module file the index leaves out, as a deferred module (not parsed,
    or only what it binds and exports extracted: :mod:`pycsamt_lsp.model.deferred`),
    or None when it must be modelled whole now.

    *suggested*: whether the package-wide suggestion index reads its names
    (False when the profile does not index the file: the server's
    ``suggest_demote`` leaves such a module's names out, so they need not
    be read now)."""
    meta = module_name_for(rel, package)
    if meta is None or meta[2] != "source":
        return None
    sha = sha if sha is not None else sha_hex(data)
    if deferrable(meta[0], meta[2], data, suggested=suggested):
        return DeferredModuleInfo.of(
            name=meta[0], rel=rel, is_package=meta[1], sha=sha, root=root
        )
    head = module_head(data, meta[0], rel, meta[1])  # its names are read
    if head is None:  # does not parse: modelled whole (nothing more to read)
        return None
    return HeadModuleInfo.of_head(head, sha=sha, root=root)


def _record(rel: str, d: dict[str, Any]) -> bytes:
    """One ``"rel": {...}`` entry of ``package_model.json``."""
    return f"{_ENCODE_MODEL(rel)}: {_ENCODE_MODEL(d)}".encode()


def _model_record(
    info: ModuleInfo | None, profile: Profile, root: Path
) -> bytes | None:
    """The file's ``"rel": {...}`` entry of ``package_model.json``, made by
    the model itself (``add_module`` may still re-read Cython includes)."""
    if info is None:
        return None
    if info.kind == "cython":  # add_module may re-read its includes
        one = PackageModel(profile.package, root)
        one.add_module(info)
        ((rel, d),) = one.to_dict()["files"].items()
        return _record(rel, d)
    return _record(info.rel, info.to_dict())


def _pack_chunks(fc: FileChunks, terms: BatchTerms) -> PackedChunks:
    chunks: list[Chunk] = fc.chunks
    counts = fc.counts or []
    lines = [c.json_line() for c in chunks]
    base = len(terms.order)
    term_ids = _int_array(list(map(terms.__getitem__, chain.from_iterable(counts))))
    return (
        fc.error,
        b"".join(lines),
        array("q", map(len, lines)),
        [c.id for c in chunks],
        [c.source_path for c in chunks],
        [c.kind for c in chunks],
        [c.symbol for c in chunks],
        [c.workflow for c in chunks],
        array("h", [c.priority for c in chunks]),
        array("i", [c.line_start or 0 for c in chunks]),
        array("i", [c.line_end or 0 for c in chunks]),
        "\n".join(terms.order[base:]),
        array("i", map(len, counts)),
        term_ids,
        _int_array(list(chain.from_iterable(map(dict.values, counts)))),
        terms.key,
    )


def _int_array(values: list[int]) -> array:
    """``array("i", values)``, the same array, made by one ``struct.pack``
    and a copy of its bytes. Why: ``array`` converts an iterable item by
    item through its generic setter, ~2x the cost of ``struct``'s loop; a
    file's postings are two such lists (term ids and frequencies, 939k
    items each on the checkout with docs, every one made in a worker or
    in the building process while it also parses)."""
    out = array("i")
    if values:
        out.frombytes(_PACK(f"{len(values)}i", *values))
    return out


class ModelWriter:
    """Writes ``package_model.json`` file by file, in path order, byte for
    byte what :func:`save_model` writes for the same model (a test holds
    them equal), from the workers' :data:`PackedFile` model records."""

    def __init__(self, fh: BinaryIO, package: str) -> None:
        self.fh = fh
        doc = PackageModel(package, None).to_dict()
        keys = list(doc)
        cut = keys.index("files")
        self._after = keys[cut + 1 :]
        self._doc = doc
        self.dirs: set[str] = set()
        self.n_files = 0
        fh.write(b'{"model": {')
        for i, key in enumerate(keys[:cut]):
            fh.write(f"{', ' if i else ''}{_ENCODE_MODEL(key)}: ".encode())
            fh.write(_ENCODE_MODEL(doc[key]).encode())
        fh.write(f"{', ' if cut else ''}{_ENCODE_MODEL('files')}: {{".encode())

    def add(self, rel: str, record: bytes) -> None:
        """The next module file (callers go in path order)."""
        if self.n_files:
            self.fh.write(b", ")
        self.fh.write(record)
        self.n_files += 1
        parent = rel.rpartition("/")[0]
        while parent:  # what PackageModel.add_module records
            self.dirs.add(parent)
            parent = parent.rpartition("/")[0]

    def finish(self, shas: dict[str, str]) -> None:
        """Close the document: the remaining model keys, then the hashes."""
        fh = self.fh
        fh.write(b"}")
        for key in self._after:
            value = sorted(self.dirs) if key == "dirs" else self._doc[key]
            fh.write(f", {_ENCODE_MODEL(key)}: {_ENCODE_MODEL(value)}".encode())
        fh.write(f'}}, "shas": {_ENCODE_MODEL(shas)}}}'.encode())


def sha_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_model(index_dir: Path, model: PackageModel, shas: dict[str, str]) -> None:
    """Write ``package_model.json`` atomically (temp file + rename)."""
    atomic_write(index_dir / MODEL_FILE, lambda fh: _write_model(fh, model, shas))


def _write_model(fh: Any, model: PackageModel, shas: dict[str, str]) -> None:
    """``json.dumps({"model": model.to_dict(), "shas": shas})``, byte for byte,
    written one module at a time: the whole document as one string (and its
    UTF-8 copy) was 26 MB of a build's peak on the pyCSAMT sdist."""
    enc = json.JSONEncoder().encode  # json.dumps' defaults, C encoder
    fh.write(b'{"model": ')
    for piece in model.iter_json():  # one module at a time (issue 18)
        fh.write(piece)
    fh.write(f', "shas": {enc(shas)}}}'.encode())


def load_model(
    index_dir: Path,
    root: Path,
    package: str,
    files: dict[str, Path],
    *,
    workers: int = 1,
    known: Mapping[str, str] | None = None,
) -> tuple[PackageModel, dict[str, str], bool]:
    """The persisted model brought up to date, or a fresh one.

    Returns ``(model, shas, changed)``; ``changed`` says whether it differs
    from what was persisted (so the caller persists it again).

    *known*: content hashes (hex SHA-256) of files whose bytes were just
    hashed elsewhere (the index's digests of the files it holds, checked on
    open): a module whose persisted hash equals its known one is not read
    again (warm start, issue 18: the open had read and hashed every indexed
    file a moment before). Any other module file is read and hashed here.
    """
    model: PackageModel | None = None
    shas: dict[str, str] = {}
    path = index_dir / MODEL_FILE
    if path.is_file():
        try:
            # modules' functions, classes and docs decoded on first use
            model, shas = PackageModel.load_persisted(path, root)
            if model.package != package:
                raise ValueError(f"model is of package {model.package!r}")
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            RecursionError,
        ) as exc:  # a foreign or reshaped file: rebuilt (issue 19)
            log.warning("rebuilding the package model: %s", exc)
            model, shas = None, {}
    if model is None:
        model = PackageModel.build(root, package, workers=workers)
        current: dict[str, str] = {
            rel: sha_hex(p.read_bytes()) for rel, p in files.items() if _readable(p)
        }
        return model, current, True
    changed = False
    current = {}
    known = known or {}
    for rel, p in files.items():
        seen = known.get(rel)
        if seen is not None and shas.get(rel) == seen:
            current[rel] = seen
            continue
        try:
            data = p.read_bytes()
        except OSError:
            continue
        current[rel] = sha_hex(data)
        if shas.get(rel) != current[rel]:
            model.update_file(rel, data)
            changed = True
    for rel in set(shas) - set(current):
        model.update_file(rel, None)
        changed = True
    return model, current, changed


def _readable(p: Path) -> bool:
    return os.access(p, os.R_OK)


def apply_updates(
    model: PackageModel,
    shas: dict[str, str],
    updates: Iterable[tuple[str, bytes | None, Any]],
) -> tuple[PackageModel, dict[str, str]] | None:
    """A copy of *model* with ``(rel, data or None, tree or None)`` applied.

    None when nothing in the package changed.
    """
    todo = []
    for rel, data, tree in updates:
        if module_name_for(rel, model.package) is None:
            continue
        new_sha = None if data is None else sha_hex(data)
        if shas.get(rel) == new_sha:
            continue
        todo.append((rel, data, tree, new_sha))
    if not todo:
        return None
    new_model = model.copy()
    new_shas = dict(shas)
    for rel, data, tree, new_sha in todo:
        if data is None or new_sha is None:  # None together: a deleted file
            new_model.update_file(rel, None)
            new_shas.pop(rel, None)
        else:
            info = module_info(rel, data, model.package, tree)
            if info is not None:
                new_model.add_module(info)
            new_shas[rel] = new_sha
    return new_model, new_shas
