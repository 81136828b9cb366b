"""The facade: one object holding the current snapshot and answering requests.

The CLI and the language server are thin adapters over :class:`Workspace`.
It knows nothing of LSP. Mutations (build, refresh) are serialised by a lock
and publish a new immutable :class:`Snapshot` with one assignment, so
readers on other threads always see a whole index.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pycsamt_lsp import __version__
from pycsamt_lsp.corpus.discovery import (
    BUNDLED_PREFIX,
    FileEntry,
    bundled_recipes_dir,
    cache_dir,
    fingerprint,
    hash_file,
    iter_corpus_files,
    scan_corpus,
)
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.corpus.safety import file_refusal, shown
from pycsamt_lsp.errors import BuildCancelled, QueryError
from pycsamt_lsp.index import heap
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.store import (
    ChunkWriter,
    IndexLoadError,
    default_index_dir,
    load_snapshot,
    save_snapshot,
    synced_meanwhile,
    writable,
)
from pycsamt_lsp.storage.atomic import atomic_open
from pycsamt_lsp.storage.cleanup import remove_stale_temps
from pycsamt_lsp.workspace.model import ModelService, ModelUpdate

if TYPE_CHECKING:
    # Imported where used. A build needs none of the services; a warm start
    # (load the index, check its fingerprint, answer) needs none of the
    # build's modules (chunkers, the package model, worker pools: ~0.1 s of
    # a fresh query process, issue 18).
    from pycsamt_lsp.answer.service import AnswerService
    from pycsamt_lsp.cards.service import CardService
    from pycsamt_lsp.chunking import Chunk, FileChunks
    from pycsamt_lsp.chunking.incremental import Outlines, TreeCache
    from pycsamt_lsp.chunking.pdf import PaperService
    from pycsamt_lsp.index.workers import PipePool
    from pycsamt_lsp.model.package import PackageModel
    from pycsamt_lsp.model.state import BuildJob, PackedFile
    from pycsamt_lsp.search.dense.service import DenseService
    from pycsamt_lsp.workspace.isolated import ChildBuild
    from pycsamt_lsp.workspace.published import Published

__all__ = ["BuildCancelled", "Progress", "QueryError", "Workspace"]

log = logging.getLogger(__name__)

#: ``progress(percent 0-100, message)``; called from the working thread.
Progress = Callable[[int, str], None]
#: Below this many files a build parses in the building process: starting
#: worker processes would cost more than it saves.
_PARALLEL_MIN_FILES = 200
#: a file this large, listed once the pool runs, goes to the worker at once,
#: alone (:meth:`Workspace._send_early`), for the first this many such files:
#: on the checkout with docs the first ones are 33-60 KB, ~10-15 ms of a
#: worker's parsing each, while this process lists and plans for ~0.03 s
_EARLY_BYTES = 32 * 1024
_EARLY_FILES = 3


def _in_order(
    batches: list[list[int]], outs: Iterable[list[PackedFile]]
) -> Iterator[PackedFile]:
    """Results of *batches* (lists of job positions) in position order."""
    waiting: dict[int, PackedFile] = {}
    nxt = 0
    for batch, out in zip(batches, outs, strict=True):
        waiting.update(zip(batch, out, strict=True))
        while nxt in waiting:
            yield waiting.pop(nxt)
            nxt += 1
    yield from (waiting.pop(i) for i in sorted(waiting))


@dataclass
class _State:
    #: snapshot and ranking arrays, swapped together in one assignment
    published: Published | None = None
    builds: int = 0
    loaded_from: str = "none"
    last_reason: str = ""
    manifest: dict[str, Any] = field(default_factory=dict)
    dirty: bool = False
    #: a streamed build persisted an index nobody has loaded yet: the first
    #: reader loads it (a one-shot ``pycsamt-lsp build`` never does)
    on_disk: bool = False


class Workspace:
    """An index over one corpus root with one profile."""

    def __init__(
        self,
        root: Path,
        profile: Profile,
        *,
        index_dir: Path | None = None,
        feedback_path: Path | None = None,
        workers: int | None = None,
        long_lived: bool = False,
    ) -> None:
        """``long_lived`` (the server): freeze the published index out of the
        cyclic collector and compact the heap after persisting (``heap``)."""
        self.root = Path(root).resolve()
        self.profile = profile
        self.index_dir = index_dir or default_index_dir(self.root, cache_dir())
        self.feedback_path = feedback_path or (self.index_dir / "feedback.json")
        self.workers = workers if workers is not None else min(2, os.cpu_count() or 1)
        #: build workers started early (``index.workers.prestart``, by the
        #: CLI before its imports) for this workspace's next build to take
        self.spare_workers: list[Any] = []
        self._lock = threading.RLock()
        self._state = _State()
        self._bundled = bundled_recipes_dir()
        self.listeners: list[Callable[[Snapshot], object]] = []
        #: ask settings given before :attr:`answers` was first used (the
        #: server configures at start; answer/ and routing/ load on first use)
        self.ask_changes: dict[str, Any] = {}
        self.long_lived = long_lived
        #: package model updates of saved index files not applied yet
        #: (``rel -> update``, the latest per file), and the model they are
        #: for: a save is searchable before its module is re-modelled
        #: (:meth:`_defer_model`)
        self._model_pending: dict[str, ModelUpdate] = {}
        self._model_pending_for: PackageModel | None = None
        #: the static package model, kept current with the index
        self.package_model = ModelService(
            self.root,
            self.profile,
            self.index_dir,
            workers=self.workers,
            long_lived=long_lived,
        )
        # -- the services this workspace owns (properties below, made on
        # first use: a build or a one-shot query needs few of them, and
        # importing them all cost every process ~0.1 s): every cache lives
        # in one of them, none points back here (a dropped workspace is
        # freed by reference counting, with all of them). Developer search
        # and evaluations (devsearch/, evals/) keep no per-workspace state
        # today; a service of theirs that does is added the same way
        # (constructed with what it needs, never ``self``).

    @cached_property
    def _child_build(self) -> ChildBuild:
        """The build process of a long-lived workspace (made on first build)."""
        from pycsamt_lsp.workspace.isolated import ChildBuild

        return ChildBuild()

    @cached_property
    def _trees(self) -> TreeCache:
        """The last trees of two saved modules: a save re-parses the changed
        statements only (chunking.incremental)."""
        from pycsamt_lsp.chunking.incremental import TreeCache

        return TreeCache()

    @cached_property
    def answers(self) -> AnswerService:
        """Ask settings and the survey-line registries (``pycsamt.ask``)."""
        from pycsamt_lsp.answer.service import AnswerService

        svc = AnswerService()
        if self.ask_changes:
            svc.configure(**self.ask_changes)
        return svc

    @cached_property
    def dense(self) -> DenseService:
        """The dense vectors of this index folder and the loaded backends."""
        from pycsamt_lsp.search.dense.service import DenseService

        return DenseService(self.index_dir)

    @cached_property
    def cards(self) -> CardService:
        """API cards of the current model, symbol table of the current snapshot."""
        from pycsamt_lsp.cards.service import CardService

        return CardService()

    @cached_property
    def papers(self) -> PaperService:
        """The papers side index (PDFs under the profile's papers_dir)."""
        from pycsamt_lsp.chunking.pdf import PaperService

        return PaperService()

    # -- state ---------------------------------------------------------------

    @property
    def published(self) -> Published | None:
        """The published snapshot and its ranking arrays, one consistent pair
        (None before the first build or load). Take it once per request."""
        pub = self._state.published
        if pub is None and self._state.on_disk:
            return self._load_built()
        return pub

    def _load_built(self) -> Published | None:
        """Publish the index a streamed build persisted (first reader)."""
        with self._lock:
            st = self._state
            if st.published is None and st.on_disk:
                st.on_disk = False
                try:
                    snap, _ = load_snapshot(
                        self.index_dir, profile_name=self.profile.name
                    )
                except IndexLoadError as exc:
                    log.warning("the index just built does not load (%s)", exc)
                    self.build()
                else:
                    from pycsamt_lsp.workspace.published import Published

                    st.published = Published.of(snap)
                    st.loaded_from = "build"
            return st.published

    @property
    def persisted(self) -> bool:
        """Whether the index and the package model held are the ones on disk."""
        return not (self._state.dirty or self.package_model.dirty)

    @property
    def snapshot(self) -> Snapshot | None:
        """The published snapshot (None before the first build or load)."""
        pub = self.published
        return pub.snapshot if pub is not None else None

    def require_published(self) -> Published:
        """The published state; :class:`QueryError` when nothing is built yet."""
        pub = self.published
        if pub is None:
            raise QueryError("the index is not built yet")
        return pub

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest of the last persisted or loaded index (may be empty)."""
        return dict(self._state.manifest)

    @property
    def builds(self) -> int:
        """How many times a new snapshot was made (full or incremental)."""
        return self._state.builds

    def _publish(
        self, snap: Snapshot, how: str, names: Any = None, aux: Any = None
    ) -> None:
        """Publish *snap* (``names``, ``aux``: its persisted name field and
        ranking arrays, on a load)."""
        from pycsamt_lsp.workspace.published import Published

        st = self._state
        old = st.published
        st.on_disk = False
        if how == "update" and old is not None:
            st.published = old.extended(snap)  # updates only append slots
        else:
            st.published = Published.of(snap, names, aux)
        st.builds += 1
        st.dirty = True
        st.loaded_from = how
        if self.long_lived:
            heap.freeze()
        self._notify(snap)

    def _notify(self, snap: Snapshot) -> None:
        for fn in list(self.listeners):
            try:
                fn(snap)
            except Exception:  # a listener must not break indexing
                log.exception("snapshot listener failed")

    # -- building ------------------------------------------------------------

    def _chunk_files(
        self,
        entries: dict[str, FileEntry],
        contents: dict[str, bytes],
        progress: Progress | None,
        model_only: dict[str, bytes],
    ) -> tuple[
        dict[str, tuple[str, list[Chunk]]],
        dict[str, str],
        PackageModel,
        dict[str, list[dict[str, int]]],
    ]:
        """Chunk indexed files and model package modules, one parse per file.

        Returns chunks per file, skip reasons, the model, and the term counts
        the workers computed per file.
        """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from pycsamt_lsp.index.workers import main_script_hidden
        from pycsamt_lsp.model.package import PackageModel
        from pycsamt_lsp.model.state import deferred_info, process_file

        per_file: dict[str, tuple[str, list[Chunk]]] = {}
        skipped: dict[str, str] = {}
        counts: dict[str, list[dict[str, int]]] = {}
        model = PackageModel(self.profile.package, self.root)
        jobs = [(rel, contents[rel], self.profile, True) for rel in sorted(entries)]
        for rel, data in sorted(model_only.items()):
            later = deferred_info(
                rel,
                data,
                self.profile.package,
                self.root,
                suggested=self.profile.should_index(rel),
            )
            if later is not None:  # parsed when first used (model.deferred)
                model.add_module(later)
            else:
                jobs.append((rel, data, self.profile, False))
        total = max(len(jobs), 1)

        def take(i: int, rel: str, fc: FileChunks, info) -> None:
            if info is not None:
                model.add_module(info)
            if rel in entries:
                if fc.error:
                    log.info("skipped %s: %s", rel, fc.error)
                    skipped[rel] = fc.error
                per_file[rel] = (entries[rel].sha256.hex(), fc.chunks)
                if fc.counts is not None:
                    counts[rel] = fc.counts
            if progress and (i % 50 == 0 or i == total - 1):
                progress(5 + int(80 * (i + 1) / total), f"parsed {i + 1}/{total} files")

        if self.workers > 1 and len(jobs) >= _PARALLEL_MIN_FILES:
            # spawn, not fork: a server process has threads (event loop, pool
            # threads) and forking it can deadlock the children.
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=heap.no_gc
            ) as pool:
                with main_script_hidden():  # the workers start in map's submits
                    results = pool.map(process_file, jobs, chunksize=32)
                for i, (rel, fc, info) in enumerate(results):
                    take(i, rel, fc, info)
        else:
            for i, job in enumerate(jobs):
                take(i, *process_file(job))
        return per_file, skipped, model, counts

    def build(self, progress: Progress | None = None) -> dict[str, Any]:
        """Index the whole corpus from scratch (no cyclic collection meanwhile:
        ``heap.paused_gc``; 1.2 of 9 s CPU on the sdist went to it)."""
        with self._lock, heap.paused_gc():
            t0 = time.perf_counter()
            if progress:
                progress(0, f"scanning {self.root}")
            refused: dict[str, str] = {}  # not regular, outside, bad names
            entries, contents, skips = scan_corpus(
                self.root,
                self.profile,
                iter_corpus_files(self.root, self.profile, refused),
            )
            fp = fingerprint({r: e.sha256 for r, e in entries.items()})
            model_only, model_shas = self.package_model.unindexed_files(contents)
            per_file, skipped, model, counts = self._chunk_files(
                entries, contents, progress, model_only
            )
            self.package_model.hold(model, model_shas)
            for rel in skips.too_large:
                skipped[rel] = f"larger than {self.profile.max_file_bytes} bytes"
            for rel in skips.unreadable:
                skipped[rel] = "unreadable"
            skipped.update(refused)
            if progress:
                progress(88, "building the BM25 index")
            snap = Snapshot.build(per_file, fp, skipped, counts)
            self._publish(snap, "build")
            self._state.last_reason = "full build"
            return {
                "action": "build",
                "n_chunks": snap.n_chunks,
                "n_files": len(snap.files),
                "skipped": len(skipped),
                "fingerprint": fp,
                "seconds": round(time.perf_counter() - t0, 3),
            }

    def rebuild(self, progress: Progress | None = None) -> dict[str, Any]:
        """Build from scratch and persist.

        In a long-lived process (the server) a large corpus is built by a
        child process that persists the index and exits; this process then
        loads what it wrote. The build's transient memory (every file's
        bytes, parse results, chunk texts) then never lands in the server's
        heap, which would keep most of it (fragmentation) for its lifetime.
        Any failure there falls back to building here, with the reason
        logged.
        """
        if self.long_lived and sum(1 for _ in self._files()) >= _PARALLEL_MIN_FILES:
            report = self._build_isolated(progress)
            if report is not None:
                return report
        with self._lock:
            try:
                report = self._build_streamed(progress)
                if report is None:  # the index folder cannot be written
                    report = self.build(progress)
                    self.persist()  # logs why it could not
            finally:
                if self.spare_workers:  # no pool took them (a small corpus)
                    from pycsamt_lsp.index.workers import discard_spares

                    discard_spares(self.spare_workers)
            return report

    def _build_streamed(self, progress: Progress | None) -> dict[str, Any] | None:
        """Build and persist in one pass (``rebuild``); None when the index
        folder is not writable.

        The workers read, chunk, tokenize and model the files and send back
        final bytes (``model.state.pack_batch``); this process writes them
        into the index files in path order as they arrive (``ChunkWriter``,
        ``ModelWriter``), so the end of the build is not a long serial tail
        and no moment holds every file's bytes or every chunk's text. The
        result is byte for byte what :meth:`build` + :meth:`persist` write
        (tests hold them equal). The snapshot is loaded from the written
        files by its first reader (a server, a query after the build); a
        one-shot ``pycsamt-lsp build`` never pays for that.
        """
        if not writable(self.index_dir):
            return None
        from pycsamt_lsp.model.state import MODEL_FILE, ModelWriter, module_files

        with self._lock, heap.paused_gc(), ExitStack() as stack:
            t0 = time.perf_counter()
            if progress:
                progress(0, f"scanning {self.root}")
            refused: dict[str, str] = {}  # not regular, outside, bad names
            pools: list[PipePool] = []
            listed: dict[str, Path] = {}
            sizes: dict[str, int] = {}
            early: list[tuple[str, bool]] = []  # batches the worker has already
            for rel, path in iter_corpus_files(self.root, self.profile, refused):
                listed[rel] = path
                try:
                    sizes[rel] = os.stat(path).st_size
                except OSError:
                    sizes[rel] = 0
                if len(listed) == _PARALLEL_MIN_FILES:
                    self._start_pool(pools, stack)  # starts while we list
                if pools and len(early) < _EARLY_FILES and sizes[rel] >= _EARLY_BYTES:
                    self._send_early(pools[0], rel, path, early)
            if pools and listed:  # and the largest file, unless it went already
                largest = max(listed, key=sizes.__getitem__)
                if all(rel != largest for rel, _guess in early):
                    self._send_early(pools[0], largest, listed[largest], early)
            modules = module_files(self.root, self.profile.package, listed)
            rels = sorted(listed.keys() | modules.keys())
            jobs: list[BuildJob] = [
                (
                    rel,
                    str(listed.get(rel) or modules[rel]),
                    rel in listed,
                    rel in modules,
                )
                for rel in rels
            ]
            listed_pos = {rel: i for i, rel in enumerate(listed)}
            if len(jobs) >= _PARALLEL_MIN_FILES:
                self._start_pool(pools, stack)
            errors: dict[str, str] = {}
            failed: dict[str, list[str]] = {"too_large": [], "unreadable": []}
            digests: dict[str, bytes] = {}
            model_shas: dict[str, str] = {}
            total = max(len(jobs), 1)
            t_listed = time.perf_counter()
            t_first = 0.0
            with (
                atomic_open(self.index_dir / "chunks.jsonl") as chunks_fh,
                atomic_open(self.index_dir / MODEL_FILE) as model_fh,
            ):
                writer = ChunkWriter(chunks_fh)
                models = ModelWriter(model_fh, self.profile.package)
                packed_files = self._packed_in_order(
                    jobs, pools[0] if pools else None, sizes, early, modules
                )
                extra: dict[str, Any] | None = None
                for i, packed in enumerate(packed_files):
                    rel, failure, digest, chunks, record, model_sha = packed
                    if extra is None:
                        # the manifest's other fields, asked now (the dense
                        # service's imports and its look for vectors, 10 ms
                        # of CPU, ~25 ms wall) while the workers are busy,
                        # not on the serial tail after the last file
                        t_first = time.perf_counter()
                        extra = self._manifest_extra()
                    if failure is not None:
                        why, message = failure
                        if message:
                            log.info("skipped unreadable %s: %s", rel, message)
                        failed[why].append(rel)
                    if chunks is not None and digest is not None:
                        if chunks[0]:
                            log.info("skipped %s: %s", rel, chunks[0])
                            errors[rel] = chunks[0]
                        digests[rel] = digest
                        writer.add(rel, digest.hex(), chunks)
                    if record is not None:
                        models.add(rel, record)
                    if model_sha is not None:
                        model_shas[rel] = model_sha
                    if progress and (i % 50 == 0 or i == total - 1):
                        progress(
                            5 + int(80 * (i + 1) / total),
                            f"parsed {i + 1}/{total} files",
                        )
                models.finish({r: model_shas[r] for r in modules if r in model_shas})
                syncing = synced_meanwhile(chunks_fh, model_fh)
                for pool in pools:  # they exit now, before the index files' peak
                    pool.release()
                t_parsed = time.perf_counter()
                if progress:
                    progress(88, "writing the BM25 index")
                skipped = errors
                for rel in sorted(failed["too_large"], key=listed_pos.__getitem__):
                    skipped[rel] = f"larger than {self.profile.max_file_bytes} bytes"
                for rel in sorted(failed["unreadable"], key=listed_pos.__getitem__):
                    skipped[rel] = "unreadable"
                skipped.update(refused)
                # meta.json here and index.npz (its BM25 arrays made there) in
                # a thread, while chunks.jsonl and the model reach the disk;
                # both are put in place after those, by rest.finish
                rest = writer.start_rest(self.index_dir, skipped)
                stack.callback(rest.close)  # a failure below: the old files stay
                fp = fingerprint(digests)
                syncing.join()
            manifest = rest.finish(
                writer.stats(fp), extra if extra is not None else self._manifest_extra()
            )
            for pool in pools:  # gone by now: reaped
                pool.close()
            st = self._state
            st.manifest = manifest
            st.published, st.on_disk, st.dirty = None, True, False
            st.builds += 1
            st.loaded_from = "build"
            st.last_reason = "full build"
            self.package_model.forget()  # persisted: loaded on first use
            self.package_model.dirty = False
            t_end = time.perf_counter()
            log.debug(
                "streamed build: listed %d files in %.3f s, first result after "
                "%.3f s, all parsed and written after %.3f s, index files %.3f s",
                len(jobs),
                t_listed - t0,
                t_first - t_listed,
                t_parsed - t_listed,
                t_end - t_parsed,
            )
            report = {
                "action": "build",
                "n_chunks": writer.n_chunks,
                "n_files": len(writer.files),
                "skipped": len(skipped),
                "fingerprint": fp,
                "seconds": round(time.perf_counter() - t0, 3),
            }
        if self.long_lived or self.listeners:
            pub = self.published  # load now, and tell the listeners
            if pub is not None:
                self._notify(pub.snapshot)
            if self.long_lived:
                heap.freeze()
                heap.compact()
        return report

    def _start_pool(self, pools: list[PipePool], stack: ExitStack) -> None:
        """Start the build's worker processes now (once, into *pools*).

        Called as soon as the listing shows the corpus is large enough, so
        the workers' interpreter start and imports overlap the rest of the
        listing instead of following it. This process is one of the
        ``workers``: it parses batches too (:func:`~pycsamt_lsp.index.workers.ordered`),
        so ``workers - 1`` processes are started. They are stopped when
        *stack* closes (a failed write does not wait for their batches).
        """
        if pools or self.workers < 2:
            return
        from pycsamt_lsp.index.tokenize import RunMemo
        from pycsamt_lsp.index.workers import PipePool

        pool = PipePool(
            self.workers - 1,
            "pycsamt_lsp.model.state:pack_batch",
            (self.profile, str(self.root), RunMemo()),
            spares=self.spare_workers,
        )
        stack.callback(pool.close, kill=True)
        pools.append(pool)

    def _send_early(
        self, pool: PipePool, rel: str, path: Path, early: list[tuple[str, bool]]
    ) -> None:
        """Give the worker file *rel* now, alone, as the next early batch
        (key ``len(early)``), before the package's module files are known
        and the batches planned: whether it is a module file (its job's
        last field) is guessed from its name, and :meth:`_packed_in_order`
        parses it again here if the guess was wrong. Appends ``(rel,
        guess)`` to *early* when it was sent.

        Why: the listing, the module files and the plan are ~0.06 s of this
        process's work after the worker's imports are done. A build sends
        the first few large files as the listing meets them (once the pool
        runs), and the largest one when the listing ends, so the worker
        parses from the moment it is ready instead of waiting for the plan.
        """
        from pycsamt_lsp.model.facts import module_name_for

        live = [w for w in pool.workers if w.alive]
        if not live:
            return
        guess = module_name_for(rel, self.profile.package) is not None
        with pool.lock:  # key len(early): _packed_in_order puts it there
            message = pool.message(live[0], len(early), [(rel, str(path), True, guess)])
        pool.send_now(live[0], message)
        early.append((rel, guess))

    def _packed_in_order(
        self,
        jobs: list[BuildJob],
        pool: PipePool | None,
        sizes: dict[str, int] | None = None,
        early: Collection[tuple[str, bool]] = (),
        modules: Collection[str] = (),
    ) -> Iterator[PackedFile]:
        """``pack_batch`` over *jobs* (in *pool*'s workers and here), results
        yielded in job order.

        Large files go first, each alone, to the workers, so the processes
        finish together (the longest parse does not start last) and the
        largest syntax trees are not built in this process, whose heap holds
        the index being written; the rest follow in path order in batches of
        about the same number of bytes. Results that arrive before their
        turn wait here, already compact. *sizes*: file sizes known already
        (by relative path); *early*: the files :meth:`_send_early` gave the
        worker as batches 0, 1, ..., with their guessed module flags
        (*modules* says whether a guess was right; if not, its answer is
        parsed again).
        """
        from pycsamt_lsp.index.tokenize import RunMemo
        from pycsamt_lsp.index.workers import batch_target, ordered, plan_batches
        from pycsamt_lsp.model.state import pack_batch

        memo = RunMemo()  # this process's tokenizer memo for the build

        known = sizes or {}
        sizes_of = []
        for rel, path, _i, _m in jobs:
            if rel in known:
                sizes_of.append(known[rel])
                continue
            try:
                sizes_of.append(os.stat(path).st_size)
            except OSError:
                sizes_of.append(0)
        batches = plan_batches(sizes_of, self.workers)
        if pool is None:
            args = (
                (self.profile, str(self.root), memo, [jobs[i] for i in b])
                for b in batches
            )
            yield from _in_order(batches, map(pack_batch, args))
            return
        sent: set[int] = set()
        redo: set[int] = set()
        if early:  # batches 0 .. len(early) - 1 are the worker's already
            pos_of = {job[0]: i for i, job in enumerate(jobs)}
            first = [pos_of[rel] for rel, _guess in early]
            taken = set(first)
            rest = [[i for i in b if i not in taken] for b in batches]
            batches = [*([p] for p in first), *(b for b in rest if b)]
            sent.update(range(len(early)))
            redo.update(
                k for k, (rel, guess) in enumerate(early) if guess != (rel in modules)
            )
        target = batch_target(sizes_of, self.workers)
        big = {
            k for k, b in enumerate(batches) if len(b) == 1 and sizes_of[b[0]] >= target
        }
        profile, root = self.profile, str(self.root)
        yield from ordered(
            batches,
            lambda b: [jobs[i] for i in b],
            lambda item: pack_batch((profile, root, memo, item)),
            pool,
            big=big,
            sent=sent,
            redo=redo,
        )

    def _build_isolated(self, progress: Progress | None) -> dict[str, Any] | None:
        """:meth:`rebuild` in a child process; None when that failed."""
        with self._lock:
            report, error = self._child_build.run(
                Workspace,
                self.root,
                self.profile,
                self.index_dir,
                self.workers,
                progress,
            )
            if self._child_build.cancelled:
                raise BuildCancelled("the index build was cancelled")
            if report is None:
                log.warning(
                    "the build process failed (%s); building in the server", error
                )
                return None
            try:
                snap, manifest = load_snapshot(
                    self.index_dir, profile_name=self.profile.name
                )
            except IndexLoadError as exc:
                log.warning("could not load the built index (%s); building here", exc)
                return None
            st = self._state
            self.package_model.forget()  # the child persisted it: loaded on first use
            st.manifest = manifest
            self._publish(snap, "build")
            st.dirty = False
            st.last_reason = "full build"
            report["isolated"] = True
            return report

    def cancel_build(self) -> None:
        """Stop a build process still running, with its workers (server
        shutdown); the waiting :meth:`rebuild` raises :class:`BuildCancelled`."""
        if "_child_build" in vars(self):  # never made: nothing to stop
            self._child_build.cancel()

    def _files(self) -> Iterable[tuple[str, Path]]:
        return iter_corpus_files(self.root, self.profile)

    def open(
        self, progress: Progress | None = None, *, persist: bool = True
    ) -> dict[str, Any]:
        """Load the persisted index, bring it up to date, or build it.

        A persisted index whose fingerprint matches the corpus is used as is;
        one that differs is updated incrementally (only changed files are
        re-chunked); a missing, corrupt or foreign one is rebuilt, with the
        reason in the report and the log.

        Whether the corpus still matches is settled from ``stat`` alone when
        an earlier open content-checked it and recorded every path's stat
        (:mod:`.freshness`: nothing was written, renamed, added or removed
        since); otherwise every file is read and hashed (:meth:`_unchanged`)
        and, when that finds no change, the record is written for the next
        open. The report's ``update.checked`` says which (``stat`` or
        ``content``).
        """
        from pycsamt_lsp.workspace import freshness
        from pycsamt_lsp.workspace.warm import (
            load_names,
            load_ranks,
            save_names,
            save_ranks,
        )

        with self._lock:
            t0 = time.perf_counter()
            remove_stale_temps(self.index_dir)  # of a build killed mid-write
            record = freshness.read_record(self.index_dir)
            checked: dict[str, os.stat_result] = {}  # before the load reads them
            for name in ("chunks.jsonl", "index.npz"):
                try:
                    checked[name] = os.stat(self.index_dir / name)
                except OSError:
                    pass
            try:
                snap, manifest = load_snapshot(
                    self.index_dir,
                    profile_name=self.profile.name,
                    verified=lambda man, path: freshness.trusted_stat(
                        record, str(man.get("build_id") or ""), path
                    ),
                )
            except IndexLoadError as exc:
                reason = str(exc)
                if (self.index_dir / "manifest.json").exists():
                    log.warning("rebuilding the index: %s", reason)
                else:
                    log.info("building the index: %s", reason)
                report = self.rebuild(progress) if persist else self.build(progress)
                report["reason"] = reason
                return report
            self._state.manifest = manifest
            build_id = str(manifest.get("build_id") or "")
            names = load_names(self.index_dir, build_id, len(snap.table))
            aux = load_ranks(self.index_dir, build_id, snap, names)
            self._publish(snap, "disk", names, aux)
            self._state.dirty = False
            if names is None or aux is None:  # the first reader: for the next
                pub = self.require_published()
                if names is None:
                    save_names(self.index_dir, build_id, pub.aux.stages.names)
                if aux is None:
                    save_ranks(self.index_dir, build_id, len(snap.table), pub.aux)
            if progress:
                progress(50, "checking the corpus fingerprint")
            update: dict[str, Any] | None
            if freshness.still_fresh(
                record, build_id, self.root, self.profile, self._bundled
            ):
                update = self._unchanged_report(snap, time.perf_counter(), "stat")
                if record is not None:  # always, once still_fresh held
                    freshness.renew_index_keys(self.index_dir, record, checked)
            else:
                recorder = freshness.StatRecorder(
                    self.root, self.profile, self._bundled
                )
                update = self._unchanged(snap, recorder)
                if update is not None:
                    recorder.write(self.index_dir, build_id, checked)
            if update is None:  # something differs: re-hash and apply it
                update = self.refresh(None)
                update["checked"] = "content"
            if update["changed"] or update["removed"] or update["added"]:
                action = "load+update"
                if persist:
                    self.persist()
            else:
                action = "load"
            pub = self.require_published()
            return {
                "action": action,
                "n_chunks": pub.snapshot.n_chunks,
                "n_files": len(pub.snapshot.files),
                "fingerprint": pub.snapshot.fingerprint,
                "update": update,
                "seconds": round(time.perf_counter() - t0, 3),
            }

    def _unchanged(self, snap: Snapshot, recorder: Any = None) -> dict[str, Any] | None:
        """The refresh report of an unchanged corpus when the files on disk
        are exactly those *snap* indexed, else None (then :meth:`refresh`
        finds and applies what differs).

        Still a content check (DESIGN 3): every listed file is read and
        hashed (SHA-256) and compared with the digest the snapshot holds, and
        the skip reasons must be the same. It differs from ``refresh(None)``
        in reading each file once through the listing, which has already
        screened it (name, links, regular file), instead of screening it
        again and re-checking every path the index ever saw (warm start,
        issue 18). Anything it cannot settle (an unreadable file) goes to
        the full refresh. *recorder* (a :class:`.freshness.StatRecorder`)
        is given each file's path just before it is read.
        """
        t0 = time.perf_counter()
        refused: dict[str, str] = {}
        limit = self.profile.max_file_bytes
        old = snap.files
        skipped = {rel: why for rel, why in snap.skipped.items() if rel in old}
        seen = 0
        for rel, path in iter_corpus_files(self.root, self.profile, refused):
            if recorder is not None:
                recorder.file(path)
            try:
                got = hash_file(path, limit)
            except OSError:
                return None
            if got is None:
                skipped[rel] = f"larger than {limit} bytes"
                continue
            entry = old.get(rel)
            if entry is None or entry[0] != got[1].hex():
                return None
            seen += 1
        skipped.update(refused)
        if seen != len(old) or skipped != dict(snap.skipped):
            return None
        if refused and recorder is not None:
            recorder.ok = False  # a refused entry's reason may change unseen
        return self._unchanged_report(snap, t0, "content")

    def _unchanged_report(
        self, snap: Snapshot, t0: float, checked: str
    ) -> dict[str, Any]:
        """The refresh report of an open that found the corpus unchanged."""
        self._refresh_model_only(None)  # a held model: its other module files
        return {
            "changed": [],
            "added": [],
            "removed": [],
            "seconds": round(time.perf_counter() - t0, 4),
            "fingerprint": snap.fingerprint,
            "checked": checked,
        }

    # -- incremental updates -------------------------------------------------

    def rel_of(self, path: str | Path) -> str | None:
        """Corpus-relative POSIX path of an absolute path, or None when outside."""
        p = Path(path)
        if not p.is_absolute():
            return p.as_posix()
        resolved = p.resolve()
        for base, prefix in ((self.root, ""), (self._bundled, BUNDLED_PREFIX + "/")):
            if base is None:
                continue
            try:
                return prefix + resolved.relative_to(base).as_posix()
            except ValueError:
                continue
        return None

    def uri_of(self, rel: str) -> str:
        """``file://`` URI of a corpus-relative path (bundled recipes included)."""
        return self._abs_of(rel).resolve().as_uri()

    def _base_of(self, rel: str) -> Path:
        """The root *rel* must stay inside: the corpus, or the bundled recipes."""
        bundled = rel.startswith(BUNDLED_PREFIX + "/") and self._bundled is not None
        if bundled and not (self.root / rel).exists():
            return self._bundled  # type: ignore[return-value]
        return self.root

    def _abs_of(self, rel: str) -> Path:
        if rel.startswith(BUNDLED_PREFIX + "/") and self._bundled is not None:
            own = self.root / rel
            if not own.exists():
                return self._bundled / rel[len(BUNDLED_PREFIX) + 1 :]
        return self.root / rel

    def _observe(self, rels: Iterable[str]) -> dict[str, tuple[str, Any]]:
        """What is on disk now: ``rel -> ("ok", (sha hex, bytes)) | ("skip", why) | ("gone", None)``."""
        seen: dict[str, tuple[str, Any]] = {}
        limit = self.profile.max_file_bytes
        for rel in rels:
            if not self.profile.should_index(rel):
                seen[rel] = ("gone", None)
                continue
            why = file_refusal(self._base_of(rel), rel, self._abs_of(rel))
            if why == "no such file":
                seen[rel] = ("gone", None)
                continue
            if why is not None:  # a symlink out, a FIFO, a bad name (issue 19)
                seen[rel] = ("skip", why)
                continue
            try:
                got = hash_file(self._abs_of(rel), limit)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                seen[rel] = ("gone", None)
                continue
            except OSError as exc:
                log.info("skipped unreadable %s: %s", rel, exc)
                seen[rel] = ("skip", "unreadable")
                continue
            if got is None:
                seen[rel] = ("skip", f"larger than {limit} bytes")
            else:
                seen[rel] = ("ok", (got[1].hex(), got[0]))
        return seen

    def refresh(self, paths: Iterable[str | Path] | None = None) -> dict[str, Any]:
        """Re-hash *paths* (or the whole corpus) and apply what changed.

        Only files whose content hash differs are re-chunked. When nothing
        changed (a ``touch``, a formatter no-op) no new snapshot is made.
        A path naming a folder (a move or checkout) rescans everything.
        No cyclic collection meanwhile (``heap.paused_gc``): re-enabled after
        the file's parse tree is freed, a collection no longer walks it.
        """
        with self._lock, heap.paused_gc():
            t0 = time.perf_counter()
            snap = self.snapshot
            if snap is None:
                self.build()
                return {"changed": [], "added": [], "removed": [], "rebuilt": True}
            old = {rel: sha for rel, (sha, _) in snap.files.items()}
            if paths is not None:
                rels: set[str] = set()
                for p in paths:
                    try:
                        rel = self.rel_of(p)
                    except (ValueError, OSError) as exc:  # NUL, bad name
                        log.warning("ignored changed path %r: %s", shown(str(p)), exc)
                        continue
                    if rel is None:
                        log.info(
                            "ignored changed path outside the corpus: %s", shown(str(p))
                        )
                        continue
                    if self._abs_of(rel).is_dir():
                        paths = None  # a folder changed: rescan everything
                        break
                    rels.add(rel)
            if paths is None:
                refused: dict[str, str] = {}
                listed = iter_corpus_files(self.root, self.profile, refused)
                rels = set(old) | set(snap.skipped) | {rel for rel, _ in listed}
            seen = self._observe(sorted(rels))
            if paths is None:  # refused files stay counted skips (issue 19)
                seen.update((rel, ("skip", why)) for rel, why in refused.items())
            skipped = dict(snap.skipped)
            contents: dict[str, tuple[str, bytes]] = {}
            removed: list[str] = []
            for rel, (state, value) in seen.items():
                if state == "ok":
                    if (
                        old.get(rel) != value[0]
                    ):  # unchanged files keep their skip reason
                        skipped.pop(rel, None)
                        contents[rel] = value
                    continue
                skipped.pop(rel, None)
                if state == "skip":
                    skipped[rel] = value
                if rel in old:
                    removed.append(rel)
            report: dict[str, Any] = {
                "changed": sorted(r for r in contents if r in old),
                "added": sorted(r for r in contents if r not in old),
                "removed": sorted(removed),
            }
            self._refresh_model_only(None if paths is None else rels)
            if not (removed or contents or skipped != dict(snap.skipped)):
                report["seconds"] = round(time.perf_counter() - t0, 4)
                report["fingerprint"] = snap.fingerprint
                return report
            digests = {r: h for r, h in old.items() if r not in removed}
            digests.update({r: sha for r, (sha, _) in contents.items()})
            fp = fingerprint({r: bytes.fromhex(h) for r, h in digests.items()})
            per_file: dict[str, tuple[str, list[Chunk]]] = {}
            model_updates: list[ModelUpdate] = [(rel, None, None) for rel in removed]
            for rel in removed:
                self._trees.forget(rel)
                self._outlines.forget(rel)
            rechunked: list[str] = []
            for rel, (sha, data) in contents.items():
                fc, spliced = self._refresh_chunks(snap, rel, sha, data)
                if spliced:
                    rechunked.append(rel)
                if fc.error:
                    log.info("skipped %s: %s", rel, fc.error)
                    skipped[rel] = fc.error
                per_file[rel] = (sha, fc.chunks)
                model_updates.append((rel, data, fc.tree))
            # queued before the listeners hear of the snapshot: what they
            # read of the model then has this save in it
            self._defer_model(model_updates)
            self._publish(snap.updated(per_file, removed, fp, skipped), "update")
            report["fingerprint"] = fp
            report["rechunked"] = sorted(rechunked)  # in changed statements only
            report["seconds"] = round(time.perf_counter() - t0, 4)
            return report

    def _refresh_chunks(
        self, snap: Snapshot, rel: str, sha: str, data: bytes
    ) -> tuple[FileChunks, bool]:
        """The chunks of a saved file. A large module whose indexed text has
        an outline (:meth:`prepare_saves`, or its last save) is re-chunked in
        its changed statements only, reusing the index's chunks of the
        others (:func:`~pycsamt_lsp.chunking.incremental.rechunk`: no whole
        parse, whether or not an editor opened it); anything else, and a
        change that region cannot settle (a syntax error included), goes
        through ``chunk_file`` as in a build. The package model, which needs
        the whole tree, gets it when its deferred update runs
        (:meth:`_flush_model`), off save -> searchable. The flag says
        whether the file was re-chunked in its changed statements only."""
        from pycsamt_lsp.chunking import FileChunks, chunk_file
        from pycsamt_lsp.chunking.incremental import MIN_CHARS, outline_of, rechunk

        if not rel.endswith(".py") or len(data) < MIN_CHARS:
            return chunk_file(rel, data, self.profile, self._trees), False
        try:
            text: str | None = data.decode("utf-8-sig")  # as chunk_file decodes
        except UnicodeDecodeError:
            text = None
        new = outline_of(text) if text is not None and "\x00" not in text else None
        entry = snap.files.get(rel)
        old = (
            self._outlines.get(rel, entry[0])
            if new is not None and entry is not None and rel not in snap.skipped
            else None
        )
        if old is not None and new is not None and text is not None and entry:
            try:
                old_chunks = [snap.table.get(slot) for slot in entry[1]]
            except KeyError:  # pragma: no cover - a slot the table lost
                old_chunks = None
            got = (
                None
                if old_chunks is None
                else rechunk(rel, text, self.profile, old_chunks, old, new)
            )
            if got is not None:
                self._outlines.put(rel, sha, new)
                return FileChunks(got, None), True
        fc = chunk_file(rel, data, self.profile, self._trees)
        self._outlines.put(rel, sha, new)
        return fc, False

    @cached_property
    def _outlines(self) -> Outlines:
        """Per large indexed module, the outline of the text the index holds
        (:class:`~pycsamt_lsp.chunking.incremental.Outlines`)."""
        from pycsamt_lsp.chunking.incremental import Outlines

        return Outlines()

    def prepare_saves(self) -> int:
        """Outline every large indexed module (16,000 characters or more)
        that has no outline of its indexed content yet, so that the first
        save of any of them, opened in an editor or not, is re-chunked in
        its changed statements only (:meth:`_refresh_chunks`). Reads each
        such file once and checks its SHA-256 against the snapshot's (a
        file changed since is left to its refresh). No lock held: a
        refresh meanwhile outlines its own files. The server runs it off
        the event loop once the index is open; returns the number of
        modules outlined.
        """
        import hashlib

        from pycsamt_lsp.chunking.incremental import MIN_CHARS, outline_of

        snap = self.snapshot
        if snap is None:
            return 0
        done = 0
        outlines = self._outlines
        for rel, (sha, _slots) in sorted(snap.files.items()):
            if not rel.endswith(".py") or rel in snap.skipped:
                continue
            if outlines.has(rel, sha):
                continue
            path = self._abs_of(rel)
            try:
                if path.stat().st_size < MIN_CHARS:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if hashlib.sha256(data).hexdigest() != sha:
                continue  # changed on disk since: its refresh outlines it
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                continue
            got = outline_of(text) if "\x00" not in text else None
            if got is not None:
                outlines.put(rel, sha, got)
                done += 1
        return done

    def prime_tree(self, path: str | Path) -> bool:
        """Keep the parse tree of an indexed module an editor opened, so that
        its first save is re-parsed in its changed statements only, like
        the later ones (:meth:`TreeCache.prime`). Costs one ``ast.parse``
        now, off the event loop, and ~30 bytes of heap per character while
        the tree is kept (the tree cache's bound: two files, 1 M characters,
        so ~30 MB at worst). True when a tree was kept; results of every
        request are the same either way.
        """
        try:
            rel = self.rel_of(path)
        except (ValueError, OSError):
            return False
        snap = self.snapshot
        if rel is None or not rel.endswith(".py") or snap is None:
            return False
        if rel not in snap.files:  # only indexed modules are re-chunked on save
            return False
        try:
            data = self._abs_of(rel).read_bytes()
            text = data.decode("utf-8-sig")  # as chunk_file decodes
        except (OSError, UnicodeDecodeError):
            return False
        if "\x00" in text:
            return False
        kept = self._trees.prime(rel, text)
        if kept and self.long_lived:
            heap.freeze()  # as after a save: no collection walks the tree
            heap.trim()  # the parse's freed tokens and arena: ~8 MB for 245 KB
        return kept

    def release_tree(self, path: str | Path) -> bool:
        """Drop the parse tree kept for a module the editor closed
        (:meth:`prime_tree`): ~30 bytes of heap per character (7 MB for the
        245 KB ``funcutils.py``) a closed file no longer needs. Its next save
        is parsed whole for the package model, as for any file not kept.
        True when a tree was dropped."""
        trees = vars(self).get("_trees")  # never made: nothing kept
        if trees is None:
            return False
        try:
            rel = self.rel_of(path)
        except (ValueError, OSError):
            return False
        if rel is None or not trees.forget(rel):
            return False
        if self.long_lived:
            heap.trim()  # the tree's nodes were glibc-heap blocks, some of them
        return True

    # -- persistence ---------------------------------------------------------

    def persist(self) -> dict[str, Any] | None:
        """Write the current snapshot atomically; None when it fails (logged).

        The snapshot written is then served from the files (see below), and
        the card tables move to it (:meth:`_follow_cards`), so nothing keeps
        the one replaced alive."""
        manifest = self._persist()
        if manifest is not None:
            self._follow_cards()
            if self.long_lived:
                with self._lock:  # the saves' transients and that snapshot
                    heap.compact()
        return manifest

    def _follow_cards(self) -> None:
        """Derive the card maps and the symbol table of the published
        snapshot now, when the card service has derived them for an older
        one (no lock held: the service has its own).

        Why: the service holds the snapshot it derived them from; after a
        persist that is the in-memory snapshot of the saves, with its chunk
        table, BM25 arrays and ranking arrays, alive beside the reloaded one
        until the next hover (~10 MB on the sdist, issue 18). Deriving them
        here (in the persist's background job) instead of in that hover
        gives the same tables (:func:`~pycsamt_lsp.cards.card.warm`)."""
        svc = self.__dict__.get("cards")  # cached_property: made on first use
        model = self.package_model.model
        snap = self.snapshot
        if svc is None or model is None or snap is None:
            return
        svc.cache_for(model, snap)
        svc.symbol_table(snap)

    def _persist(self) -> dict[str, Any] | None:
        warm: tuple[str, Published] | None = None
        with self._lock:
            snap = self.snapshot
            if snap is None:
                return None
            try:
                manifest = save_snapshot(snap, self.index_dir, self._manifest_extra())
            except OSError as exc:
                log.warning(
                    "could not persist the index to %s: %s", self.index_dir, exc
                )
                return None
            self._state.manifest = manifest
            self._state.dirty = False
            st = self._state
            # Serve from what was just written: chunk texts then live on disk
            # (read by offset), not in memory. Same content, so no rebuild.
            try:
                from pycsamt_lsp.workspace.published import Published

                disk, _ = load_snapshot(self.index_dir, profile_name=self.profile.name)
                st.published = Published.of(disk)
                warm = (str(manifest.get("build_id") or ""), st.published)
            except IndexLoadError as exc:
                log.info("keeping the in-memory snapshot: %s", exc)
            if self._flush_model():  # the readers' model changed: tell them
                self._notify(snap)
            self.package_model.persist()
        if warm is not None:
            # the ranking arrays of the index just written, for the next start
            # to read back (``workspace.warm``); else the first open after an
            # editing session derives and saves them (two synced writes) on
            # its way to the first answer: ~0.2 s of it on the sdist
            # (benchmarks/bench_reopen.py). Outside the lock: saves need not
            # wait for them, and a file another persist wrote meanwhile is
            # keyed by its own build id (a stale one is ignored at open).
            from pycsamt_lsp.workspace.warm import save_names, save_ranks

            build_id, pub = warm
            save_names(self.index_dir, build_id, pub.aux.stages.names)
            save_ranks(self.index_dir, build_id, len(pub.snapshot.table), pub.aux)
        return manifest

    # -- the package model --------------------------------------------------

    @property
    def model(self) -> PackageModel:
        """The static package model, loaded or built on first use."""
        m = self._held_model()
        return m if m is not None else self.ensure_model()

    def ensure_model(self) -> PackageModel:
        """Load the persisted model (re-parsing changed modules) or build it.

        Module files the snapshot holds are compared by the digest it has
        for them (the content its last check or refresh hashed), not read
        again: the model is loaded as of the same files as the index, and a
        change not seen yet reaches both through the next refresh."""
        with self._lock:
            self._flush_model()
            pub = self._state.published
            known = (
                {rel: sha for rel, (sha, _slots) in pub.snapshot.files.items()}
                if pub is not None and self.package_model.model is None
                else None
            )
            return self.package_model.ensure(known)

    def _held_model(self) -> PackageModel | None:
        """The model held now (None: not loaded), saves applied to it first,
        unless a refresh or build holds the lock: then the model as it was
        (what a reader got during an update before saves were deferred)."""
        if self._model_pending and self._lock.acquire(blocking=False):
            try:
                self._flush_model()
            finally:
                self._lock.release()
        return self.package_model.model

    def _defer_model(self, updates: list[ModelUpdate]) -> None:
        """Queue the model updates of a refresh (under the lock). The refresh
        publishes its snapshot without them: re-modelling a saved module is
        most of a save of a large one (the extraction walks the whole
        tree), and nothing searchable needs it. The first use of the model
        applies them (:meth:`_held_model`; in the server, the diagnostics
        pass the new snapshot triggers), as does the next persist. A saved
        file's tree may be shifted in place by its next save (the
        incremental parser): that save's update replaces the file's entry
        in the same locked refresh, so a stale tree is never modelled."""
        model = self.package_model.model
        if model is None or not updates:
            return  # loaded later from disk, re-parsing what changed
        if self._model_pending and self._model_pending_for is not model:
            self._flush_model()
            model = self.package_model.model
        self._model_pending.update((u[0], u) for u in updates)
        self._model_pending_for = model

    def refresh_modelled(
        self, paths: Iterable[str | Path] | None = None
    ) -> dict[str, Any]:
        """:meth:`refresh`, then the model updates it deferred, in one hold
        of the lock (the server's refresh job, in its command lane).

        Why: otherwise the first reader of the model applies them, and in a
        server that is often a hover or a completion (:meth:`_held_model`
        flushes whenever the lock is free): after a 200-module save burst on
        the sdist, the hover re-modelled the burst in its own thread and
        answered empty at its 5 s budget (``bench_editor.py --load``, 4 of 4
        rounds). With the lock held across both, an editor reader takes the
        model as it was, without waiting, until the update is in, and a
        diagnostics pass (``ensure_model``) waits for it; the snapshot is
        searchable as soon as :meth:`refresh` publishes it, as before.
        """
        with self._lock:
            report = self.refresh(paths)
            self._flush_model()
            if self.long_lived:
                # what the saves' parses and the old snapshot freed, now
                # rather than at the next persist (4-5 MB a save of a large
                # module; ~1 ms)
                heap.trim()
        return report

    def _flush_model(self) -> bool:
        """Apply the queued saves (under the lock); True when the model
        changed. Dropped when a build has replaced or forgotten the model
        since: that one was made from the files on disk, as new as the
        saves or newer."""
        if not self._model_pending:
            return False
        updates = list(self._model_pending.values())
        base = self._model_pending_for
        self._model_pending.clear()
        self._model_pending_for = None
        if base is None or self.package_model.model is not base:
            return False
        return self.package_model.update(self._with_trees(updates))

    def _with_trees(self, updates: list[ModelUpdate]) -> list[ModelUpdate]:
        """*updates* with a tree for each large saved module a save
        re-chunked without one (:meth:`_refresh_chunks`), parsed through the
        tree cache: only its changed statements when the file's last tree is
        kept (an editor opened it, or it was modelled before), and kept for
        the next one. Other updates as they are (the model parses them)."""
        from pycsamt_lsp.chunking.incremental import MIN_CHARS, parse_module
        from pycsamt_lsp.model.facts import module_name_for

        out: list[ModelUpdate] = []
        pkg = self.profile.package
        for rel, data, tree in updates:
            if (
                tree is None
                and data is not None
                and len(data) >= MIN_CHARS
                and rel.endswith(".py")
                and module_name_for(rel, pkg) is not None
            ):
                try:
                    text = data.decode("utf-8-sig")
                    if "\x00" not in text:
                        tree = parse_module(text, rel, self._trees)[0]
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None  # the model records the failure as it did
            out.append((rel, data, tree))
        return out

    def _update_model(self, updates: list[ModelUpdate], *, notify: bool = True) -> bool:
        self._flush_model()  # queued saves first: the updates build on them
        if not self.package_model.update(updates):
            return False
        pub = self.published
        if notify and pub is not None:
            self._notify(pub.snapshot)
        return True

    def _refresh_model_only(self, rels: set[str] | None) -> None:
        """Apply changes to module files that the index does not hold."""
        updates = self.package_model.unindexed_updates(rels)
        if updates:
            self._update_model(updates)

    def rank_candidates(self, dotted: str, candidates: list[str]) -> list[str]:
        """Blend name similarity with retrieval over the index (quick fixes).

        Both lists are compared by what each name resolves to, so a symbol
        and its re-export count once; the shorter public path is shown. The
        score is reciprocal-rank fusion of the two orders.
        """
        pub, model = self.published, self._held_model()
        if pub is None or model is None:
            return candidates
        from pycsamt_lsp.search.retrieval import search

        snap, aux = pub.snapshot, pub.aux
        leaf = dotted.rsplit(".", 1)[-1]
        words = " ".join(p for p in re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", leaf) if p)
        try:
            hits, _ = search(
                snap,
                aux,
                self.profile,
                f"{leaf} {words}",
                k=20,
                kinds=("python_symbol",),
            )
        except Exception:  # noqa: BLE001 - ranking must never break diagnostics
            return candidates
        retrieved: list[str] = [
            sym for h in hits if (sym := snap.table.symbols[h.slot])
        ]

        def target(name: str) -> tuple[str, int] | None:
            res = model.resolve(name)
            if not res.exists:
                return None
            return res.target or name, self.profile.priority_for(res.path or "")

        score: dict[str, float] = {}
        shown: dict[str, str] = {}
        for order in (candidates, retrieved):
            for rank, name in enumerate(order):
                got = target(name)
                if got is None or name.rsplit(".", 1)[-1].startswith("_"):
                    continue
                t, prio = got
                # the profile's implementation areas are the public science API
                score[t] = score.get(t, 0.0) + (1.0 + 0.25 * (prio - 1)) / (5 + rank)
                if t not in shown or len(name) < len(shown[t]):
                    shown[t] = name
        ordered = sorted(score, key=lambda t: (-score[t], shown[t]))
        return [shown[t] for t in ordered]

    def problems(self, code: str) -> list:
        """Import problems of a buffer (validator + retrieval-ranked fixes)."""
        from pycsamt_lsp.analysis.validate import find_problems

        return find_problems(code, self.model, rank=self.rank_candidates)

    def validate(self, code: str) -> dict[str, Any]:
        """The seed's ``validate_generated_code`` report against this corpus."""
        from pycsamt_lsp.analysis.validate import validate_generated_code

        return validate_generated_code(code, self.model)

    def _manifest_extra(self) -> dict[str, Any]:
        return {
            "corpus_root": str(self.root),
            "profile": self.profile.name,
            **self.dense.manifest_extra(),
        }

    # -- requests ------------------------------------------------------------

    def query(
        self,
        query: str,
        k: int = 10,
        *,
        workflow: str | None = None,
        kinds: Collection[str] | None = None,
        disable: Collection[str] = (),
        snippets: bool = True,
        per_file: int | None = 2,
    ) -> dict[str, Any]:
        """Ranked chunks for *query* as a JSON-ready dict (the ``pycsamt.query`` result)."""
        if not isinstance(query, str) or not query.strip():
            raise QueryError("'query' must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 200:
            raise QueryError("'k' must be an integer from 1 to 200")
        return self.pool(
            query,
            k,
            workflow=workflow,
            kinds=kinds,
            disable=disable,
            snippets=snippets,
            per_file=per_file,
        )

    def pool(
        self,
        query: str,
        n: int,
        *,
        workflow: str | None = None,
        kinds: Collection[str] | None = None,
        disable: Collection[str] = (),
        snippets: bool = True,
        per_file: int | None = 2,
    ) -> dict[str, Any]:
        """:meth:`query` without its bound on the result count: the top *n*.

        For callers that rank a candidate pool of their own (dense fusion
        takes ``max(5k, 50)``): the same ranking, feedback and per-file cap
        as a query, only longer, so fusing never sees a different BM25 side.
        """
        if not isinstance(query, str) or not query.strip():
            raise QueryError("'query' must be a non-empty string")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise QueryError("the pool size must be a positive integer")
        if workflow is not None and workflow not in self.profile.workflow_names:
            raise QueryError(
                f"unknown workflow {workflow!r}; known: {', '.join(self.profile.workflow_names)}"
            )
        from pycsamt_lsp.search.retrieval import (
            SHOWN_MAX,
            load_feedback,
            search,
            snippet_of,
        )

        pub = self.require_published()
        snap, aux = pub.snapshot, pub.aux
        hits, info = search(
            snap,
            aux,
            self.profile,
            query,
            k=n,
            workflow=workflow,
            kinds=kinds,
            feedback=load_feedback(self.feedback_path),
            disable=disable,
            per_file=per_file,
        )
        t = snap.table
        results = []
        # label, snippet and URI are the same every time a slot or a path is
        # shown from this snapshot: kept on its ranking arrays (Path.resolve
        # and reading + decoding the chunk were most of a query's time)
        shown, uris = aux.shown, aux.uris
        for rank, h in enumerate(hits, 1):
            s = h.slot
            rel = t.paths[s]
            uri = uris.get(rel)
            if uri is None:
                uri = uris[rel] = self.uri_of(rel)
            item = {
                "rank": rank,
                "id": t.ids[s],
                "kind": t.kinds[s],
                "workflow": t.workflows[s],
                "symbol": t.symbols[s],
                "source_path": t.paths[s],
                "line_start": int(t.line_start[s]) or None,
                "line_end": int(t.line_end[s]) or None,
                "score": round(h.score, 4),
                "uri": uri,
            }
            if snippets:
                got = shown.get(s)
                if got is None:
                    chunk = t.get(s)
                    got = (chunk.label, snippet_of(chunk.text))
                    if len(shown) >= SHOWN_MAX:
                        shown.clear()
                    shown[s] = got
                item["label"], item["snippet"] = got
            else:
                item["label"] = t.symbols[s] or t.paths[s]
            results.append(item)
        return {
            "query": query,
            "k": n,
            "workflow": info["workflow"],
            "expansion": info["expansion"],
            "top_score": round(info["top_score"], 4),
            "n_candidates": info["n_candidates"],
            "fingerprint": snap.fingerprint,
            "results": results,
        }

    def chunk(self, chunk_id: str) -> Chunk | None:
        """The full chunk with this id in the current snapshot, or None."""
        snap = self.snapshot
        if snap is None:
            return None
        rel = chunk_id.split(":", 1)[0]
        entry = snap.files.get(rel)
        for slot in entry[1] if entry else ():
            if snap.table.ids[slot] == chunk_id:
                return snap.table.get(slot)
        return None

    def stats(self) -> dict[str, Any]:
        """Counts by kind and by workflow, fingerprint, state (``pycsamt.stats``)."""
        st = self._state
        snap = self.snapshot
        if snap is None:
            return {
                "state": "empty",
                "root": str(self.root),
                "profile": self.profile.name,
                "n_chunks": 0,
            }
        by_kind: dict[str, int] = {}
        by_wf: dict[str, int] = {}
        t = snap.table
        for s in snap.alive_slots():
            by_kind[t.kinds[s]] = by_kind.get(t.kinds[s], 0) + 1
            wf = t.workflows[s] or "none"
            by_wf[wf] = by_wf.get(wf, 0) + 1
        return {
            "state": "ready",
            "root": str(self.root),
            "profile": self.profile.name,
            "index_dir": str(self.index_dir),
            "n_chunks": snap.n_chunks,
            "n_files": len(snap.files),
            "n_terms": int((snap.bm25.df > 0).sum()),
            "by_kind": dict(sorted(by_kind.items())),
            "by_workflow": dict(sorted(by_wf.items(), key=lambda kv: (-kv[1], kv[0]))),
            "skipped": len(snap.skipped),
            "fingerprint": snap.fingerprint,
            "builds": st.builds,
            "generation": snap.generation,
            "loaded_from": st.loaded_from,
            "persisted": not (st.dirty or self.package_model.dirty),
            # parse trees kept for the next save (prime_tree); read without
            # making the cache, which a query process never needs
            "parse_trees_kept": len(tc) if (tc := vars(self).get("_trees")) else 0,
            # large modules a save re-chunks in its changed statements (prepare_saves)
            "save_outlines": len(ol) if (ol := vars(self).get("_outlines")) else 0,
            "model_modules": len(pm.modules) if (pm := self._held_model()) else None,
            "created": st.manifest.get("created"),
            "tool_version": __version__,
        }
