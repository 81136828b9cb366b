"""Dense + BM25 fusion for ``pycsamt.query`` with ``dense: true`` (DESIGN 5).

Cosine on L2-normalised vectors with a floor of 0.20, the top ``max(5k,
50)`` of the BM25 and of the dense ranking, combined by reciprocal rank
fusion ``sum 1 / (60 + rank)`` with 0-based ranks; a chunk missing from one
ranking contributes nothing from it. The BM25 side is the workspace's own
ranking (:meth:`Workspace.pool`: same feedback, same per-file cap as a
query), only longer.

Dense retrieval is opt-in and never required: every failure on the query
path (no vectors, backend missing, network error, dimension mismatch)
degrades silently to BM25 and the result says which path ran
(``"retrieval": "bm25"`` with ``dense_error``, or ``"dense+bm25"``).

Which dense ranking is fused (the candidate list; the fusion itself is
DESIGN 5's): the query vector is pulled a quarter of the way
(:data:`PRF_WEIGHT`) toward the stored vector of BM25's first result,
``q' = norm(norm(q) + 0.25 * v(top1))``, when that chunk has a fresh vector
(pseudo-relevance feedback). Why: with the bare query the dense list often
disagrees with a BM25 ranking that was right at rank 1, and RRF then puts a
chunk both rank second above it; anchored on BM25's best hit the dense list
still brings in chunks BM25 missed, with fewer such swings. Chosen on the
tuning split only (fresh_tuning, 60 questions, MiniLM head/256): MRR@10 of
the fused ranking over BM25 +0.020 (sdist) / +0.013 (checkout) at 0.25,
+0.002 / +0.014 with the bare query, and 6 questions better / 2 worse on
each corpus instead of 7 / 5 (``benchmarks/bench_quality.py --dense``).
``prf=0`` is the bare query (the ablation).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pycsamt_lsp.search.dense.backends import (
    EmbeddingBackend,
    EmbeddingError,
    l2_normalize,
    scrub,
)
from pycsamt_lsp.search.dense.store import VECTOR_FILENAME, EmbeddingStore
from pycsamt_lsp.search.retrieval import snippet_of

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "COSINE_FLOOR",
    "PRF_WEIGHT",
    "RRF_K",
    "dense_query",
    "dense_ranking",
    "fused_order",
    "pool_size",
    "rrf_fuse",
]

log = logging.getLogger(__name__)

COSINE_FLOOR = 0.20
RRF_K = 60
#: Weight of BM25's first result's vector added to the query vector (see the
#: module docstring); 0 embeds the bare query.
PRF_WEIGHT = 0.25


def pool_size(k: int) -> int:
    """How many of each ranking enter the fusion: ``max(5k, 50)``."""
    return max(5 * int(k), 50)


def rrf_fuse(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: ``id -> sum over rankings of 1 / (k + rank)``.

    Ranks are 0-based; an id absent from a ranking gets nothing from it.
    A duplicate id within one ranking counts at its best rank only.
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, item in enumerate(ranking):
            if item in seen:
                continue
            seen.add(item)
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return fused


def fused_order(fused: dict[str, float]) -> list[str]:
    """Ids by fused score, ties broken by id (deterministic)."""
    return sorted(fused, key=lambda i: (-fused[i], i))


def _item_for(ws: Workspace, cid: str) -> dict[str, Any] | None:
    chunk = ws.chunk(cid)
    if chunk is None:
        return None
    return {
        "id": chunk.id,
        "kind": chunk.kind,
        "workflow": chunk.workflow,
        "symbol": chunk.symbol,
        "source_path": chunk.source_path,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "score": 0.0,
        "uri": ws.uri_of(chunk.source_path),
        "label": chunk.label,
        "snippet": snippet_of(chunk.text),
    }


def dense_ranking(
    ws: Workspace,
    store: EmbeddingStore,
    qvec: np.ndarray,
    n: int,
    *,
    kinds: Collection[str] | None = None,
) -> list[tuple[str, float]]:
    """Top *n* ``(chunk id, cosine)`` of the live, fresh rows at or above the floor."""
    snap = ws.require_published().snapshot
    q = l2_normalize(qvec)[0]
    if q.shape[0] != store.dim:
        raise EmbeddingError(
            f"query vector has dimension {q.shape[0]}, the index {store.dim}"
        )
    if n <= 0:
        return []
    valid, kinds_of = ws.dense.live_rows(snap, store)
    if kinds:
        valid = valid & np.isin(kinds_of, list(kinds))
    cos = store.vectors @ q
    idx = np.flatnonzero(valid & (cos >= COSINE_FLOOR))
    if len(idx) > n:  # only the top n are sorted (ties at the cut kept)
        cut = np.partition(-cos[idx], n - 1)[n - 1]
        idx = idx[-cos[idx] <= cut]
    order = sorted(idx.tolist(), key=lambda i: (-float(cos[i]), store.ids[i]))[:n]
    return [(store.ids[i], float(cos[i])) for i in order]


def feedback_query(
    ws: Workspace,
    store: EmbeddingStore,
    qvec: np.ndarray,
    anchor: str | None,
    weight: float = PRF_WEIGHT,
) -> tuple[np.ndarray, str | None]:
    """``norm(norm(q) + weight * v(anchor))`` and the anchor used, or the
    normalised query and None when *anchor* has no fresh vector (or
    *weight* is 0)."""
    q = l2_normalize(qvec)
    if not anchor or weight <= 0 or q.shape[1] != store.dim:
        return q, None
    row = store.row_of().get(anchor)
    if row is None:
        return q, None
    usable, _ = ws.dense.live_rows(ws.require_published().snapshot, store)
    if not usable[row]:
        return q, None  # stale (its file changed) or no longer live
    return l2_normalize(q[0] + np.float32(weight) * store.vectors[row]), anchor


def dense_query(
    ws: Workspace,
    query: str,
    k: int = 10,
    *,
    workflow: str | None = None,
    kinds: Collection[str] | None = None,
    backend: EmbeddingBackend | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 30.0,
    prf: float = PRF_WEIGHT,
) -> dict[str, Any]:
    """``pycsamt.query`` with dense fusion; BM25 alone when dense fails.

    The result has the shape of :meth:`Workspace.query` plus ``retrieval``
    (``"dense+bm25"`` or ``"bm25"``) and, on the BM25 path, ``dense_error``.
    ``top_score`` stays the BM25 ``s_max`` (the confidence proxy); in fused
    results ``score`` is the RRF score, with ``bm25_score`` and ``cosine``
    (against the query vector the dense list was ranked by: with *prf* > 0
    pulled toward BM25's first result, named by ``dense_anchor``).
    """
    n = pool_size(k)
    pool = ws.pool(query, n, workflow=workflow, kinds=kinds)
    bm_results = pool["results"]
    try:
        store = ws.dense.load_store()
        if store is None:
            raise EmbeddingError(
                f"no {VECTOR_FILENAME} in {ws.index_dir} (run `pycsamt-lsp build --embed`)"
            )
        be = backend or ws.dense.backend_for(
            store.model, api_key=api_key, base_url=base_url, timeout=timeout
        )
        if be.name != store.model:
            raise EmbeddingError(
                f"backend {be.name!r} does not match the stored model {store.model!r}"
            )
        qvec = be.embed([query])
        top1 = bm_results[0]["id"] if bm_results else None
        qvec, anchor = feedback_query(ws, store, qvec, top1, prf)
        ranked = dense_ranking(ws, store, qvec, n, kinds=kinds)
    except Exception as exc:  # noqa: BLE001 - any failure: BM25 alone, silently
        reason = scrub(f"{exc}", api_key or os.environ.get("OPENAI_API_KEY"))
        log.info("dense retrieval unavailable, using BM25: %s", reason)
        out = dict(pool)
        out["k"] = k
        out["results"] = bm_results[:k]
        out["retrieval"] = "bm25"
        out["dense_error"] = reason
        return out
    bm_ids = [r["id"] for r in bm_results]
    dense_ids = [cid for cid, _ in ranked]
    cosine = dict(ranked)
    fused = rrf_fuse([bm_ids, dense_ids])
    by_id = {r["id"]: r for r in bm_results}
    results: list[dict[str, Any]] = []
    for cid in fused_order(fused):
        if len(results) >= k:
            break
        base = by_id.get(cid)
        item = dict(base) if base is not None else _item_for(ws, cid)
        if item is None:
            continue
        item["bm25_score"] = base["score"] if base is not None else None
        item["cosine"] = round(cosine[cid], 4) if cid in cosine else None
        item["score"] = round(fused[cid], 6)
        item["rank"] = len(results) + 1
        results.append(item)
    out = dict(pool)
    out.update(
        k=k,
        results=results,
        retrieval="dense+bm25",
        embed_model=store.model,
        n_dense=len(dense_ids),
        dense_anchor=anchor,
    )
    return out
