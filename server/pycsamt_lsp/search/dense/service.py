"""A workspace's dense retrieval state: its loaded vectors and backends.

Each :class:`~pycsamt_lsp.workspace.facade.Workspace` owns one
:class:`DenseService` for its index folder, so two workspaces in one
process never see each other's vectors or loaded models. It holds no
reference back to the workspace (a dropped workspace is freed by reference
counting, with everything it owns).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pycsamt_lsp.search.dense.backends import (
    Backends,
    EmbeddingBackend,
    backend_for,
    resolve_backend,
)
from pycsamt_lsp.search.dense.store import (
    EmbeddingStore,
    describe_store,
    load_store,
    refresh_embeddings,
    refreshable,
    store_signature,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pycsamt_lsp.index.snapshot import Snapshot
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["DenseService"]


class DenseService:
    """The vectors of one index folder (reloaded when the file changes) and
    the local embedding backends loaded for them."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        self.backends = Backends()
        self._lock = threading.Lock()
        self._loaded: tuple[tuple[int, int], EmbeddingStore] | None = None
        self._rows: (
            tuple[tuple[str, int], EmbeddingStore, np.ndarray, np.ndarray] | None
        ) = None
        self._reembedding = False
        self._again = False

    def stale(self, ws: Workspace) -> bool:
        """True when the vectors lag behind *ws*'s snapshot and a local
        backend can bring them up to date (:func:`~.store.refreshable`)."""
        return refreshable(ws, self.load_store())

    def reembed(
        self,
        ws: Workspace,
        progress: Callable[[int, str], None] | None = None,
    ) -> dict[str, Any] | None:
        """:func:`~.store.refresh_embeddings`, one run at a time.

        Why: saves come in bursts and each one asks for a re-embed. A call
        made while a run is going returns None at once and the running one
        goes round again when it is done (the snapshot it embedded may
        already be old), so there is never more than one embedding job per
        index folder and the last edit is always embedded. Returns the last
        run's report (None when nothing was to be done).
        """
        if not self.claim():
            return None
        return self.run_claimed(ws, progress)

    def claim(self) -> bool:
        """Take the one embedding run of this folder; False (and the running
        one goes round again) when a run holds it. A caller that shows
        progress claims first, so a call that only joins a run shows none;
        a claim must be followed by :meth:`run_claimed` or :meth:`release`."""
        with self._lock:
            if self._reembedding:
                self._again = True
                return False
            self._reembedding = True
            self._again = False
            return True

    def release(self) -> None:
        """Give back a claim that will not run (its caller was cancelled)."""
        with self._lock:
            self._reembedding = False

    def run_claimed(
        self,
        ws: Workspace,
        progress: Callable[[int, str], None] | None = None,
    ) -> dict[str, Any] | None:
        """The run of :meth:`reembed`, once :meth:`claim` said True."""
        report: dict[str, Any] | None = None
        try:
            while True:
                report = refresh_embeddings(ws, progress=progress) or report
                with self._lock:  # decide and release in one step: no lost call
                    if not self._again:
                        self._reembedding = False
                        return report
                    self._again = False
        except BaseException:
            with self._lock:
                self._reembedding = False
            raise

    def live_rows(
        self, snap: Snapshot, store: EmbeddingStore
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(usable, kind)`` per row of *store* against *snap*.

        A row is usable when its chunk id is live and its file is unchanged
        since it was embedded. Kept per (snapshot fingerprint and generation, store): the
        check walks every row in Python (~20 ms on the sdist), which a query
        used to pay each time; a fingerprint names one corpus state.
        """
        with self._lock:
            hit = self._rows
        key = (snap.fingerprint, snap.generation)
        if hit is not None and hit[0] == key and hit[1] is store:
            return hit[2], hit[3]
        table = snap.table
        live: dict[str, int] = {}
        for _sha, slots in snap.files.values():
            for s in slots:
                live[table.ids[s]] = s
        usable = np.zeros(len(store.ids), bool)
        kinds = np.empty(len(store.ids), dtype=object)
        for i, cid in enumerate(store.ids):
            slot = live.get(cid)
            if slot is None:
                continue
            entry = snap.files.get(store.paths[i])
            if entry is None or entry[0] != store.file_sha[i]:
                continue  # the file changed since it was embedded
            usable[i] = True
            kinds[i] = table.kinds[slot]
        with self._lock:
            self._rows = (key, store, usable, kinds)
        return usable, kinds

    def load_store(self) -> EmbeddingStore | None:
        """The persisted vectors (cached on the file's mtime and size), or None."""
        sig = store_signature(self.index_dir)
        if sig is None:
            return None
        with self._lock:
            hit = self._loaded
            if hit is not None and hit[0] == sig:
                return hit[1]
        store = load_store(self.index_dir)
        if store is not None:
            with self._lock:
                self._loaded = (sig, store)
        return store

    def manifest_extra(self) -> dict[str, Any]:
        """What the index manifest records about the vectors."""
        return describe_store(self.load_store())

    def resolve_backend(
        self,
        spec: str | None = "auto",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> EmbeddingBackend:
        """:func:`~.backends.resolve_backend` with this workspace's loaded models."""
        return resolve_backend(
            spec,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            cache=self.backends,
        )

    def backend_for(
        self,
        name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> EmbeddingBackend:
        """The backend for stored vectors named *name*, kept when local."""
        return backend_for(
            name,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            cache=self.backends,
        )
