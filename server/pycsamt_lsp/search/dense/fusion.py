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

Named fusion stages (``docs/ranking.md``, "Dense fusion"): departures from
DESIGN 5's fusion, each switched off by name in *disable* (``"+name"``
switches on one that is off by default); with ``disable=("bm25_first",
"dense_depth")`` the fusion is DESIGN 5's exactly.

- ``bm25_first`` (on): BM25's first result keeps rank 1; RRF orders the
  rest. Why: RRF demotes a BM25 first hit the dense list does not rank high
  (a chunk both lists put second and third outscores it), and on the
  package's own questions BM25's first hit is usually the answer (bundled
  suites MRR@10 1.0): fused without it, "read the EDI directory and build a
  Sites object" fell from rank 1 to 4.
- ``dense_depth`` (on): the dense ranking enters with its top *k* (the
  results asked for) instead of ``max(5k, 50)``; the BM25 side keeps
  ``max(5k, 50)``. Why: the dense list's ranks 10-50 are mostly chunks
  that are only near the question's topic; through RRF, each of them that
  BM25 also ranks somewhere in its 50 outscores a chunk only one list
  ranks near the top. With the top k, the first page is BM25's best and
  the dense list's best, interleaved, and a chunk only the vectors find
  reaches it.
- ``first_margin`` (on, session 5): ``bm25_first`` holds only when BM25's
  first result leads its second clearly, by a score ratio of at least
  :data:`FIRST_MARGIN` (1.05); on a near tie RRF decides rank 1 as well.
  Why: a BM25 first hit only a hair above the second is a coin toss that
  ``bm25_first`` froze, and there the dense list's vote is worth having;
  a clear BM25 winner (the bundled questions' usual case) stays first.
  Switched off, the fusion is session 4's (``bm25_first`` unconditional).
- ``first_page`` (on since session 7's split-5 run): on a near tie (``first_margin`` let RRF
  decide), rank 1 goes to the best-fused of BM25's first page (its top
  *k*), not to any chunk of the fusion. Why: RRF gives a chunk both lists
  rank somewhere more than BM25's first result gets alone, so on the
  checkout "read the EDI directory and build a Sites object" (BM25's
  first score 1.048 times its second's) went to ``SiteMixin.edi``, which
  BM25 ranks 11th (bundled loading MRR@10 0.625). A near tie is a tie
  between results BM25 ranks high; the dense vote should break it among
  them. The rest of the page is RRF's order.
- ``dense_no_docs`` (on since session 7's split-5 run): the dense list ranks no
  ``doc_section`` chunk; prose reaches the page through BM25 only. Why: on
  the checkout, doc sections were 44% of the dense top 10s on the tuning
  questions (the sdist's: 1%) and 54% of the chunks the dense list
  brought onto a first page; a section's head is prose close to any prose
  question, so it crowded out the code chunks the questions ask for
  (tuning wf@10 0.886 -> 0.877 fused, 0.895 without them).

``first_page`` and ``dense_no_docs`` were chosen together in session 7 on
``suites/tuning`` and the bundled suites only (``benchmarks/dense_eval.py
--dense-disable +first_page,+dense_no_docs``, MiniLM head/256): fused - BM25
MRR@10 on the 258 / 238 tuning questions +0.024 [+0.008, +0.040] (sdist)
and +0.022 [+0.004, +0.040] (checkout), against +0.026 and +0.023 with the
default fusion (paired difference -0.002 [-0.006, +0.000] and -0.001
[-0.007, +0.005]); every bundled metric 1.0 on both corpora (the default:
checkout loading MRR@10 0.625); checkout paraphrase wf@10 0.774 -> 0.806
(BM25 0.790). Of their neighbours, rank 1 among BM25's top 2 or 3 instead
of its first page cost 0.004-0.009 on tuning; a dense list without recipes
too lowered tuning wf@10 (0.851 checkout). On the blind split 5 and the
pooled frozen splits 1-5 (``benchmarks/ranking_frozen_plan.md``) fused -
BM25 MRR@10 was +0.025 [+0.014, +0.037] (sdist) and +0.024 [+0.010,
+0.038] (checkout) with them, +0.026 and +0.014 [-0.003, +0.030] without,
so they are on.
- ``prf`` (off): the query vector pulled a quarter of the way
  (:data:`PRF_WEIGHT`) toward BM25's first result,
  ``q' = norm(norm(q) + 0.25 * v(top1))`` (pseudo-relevance feedback). It
  was chosen (before the two stages above) to stop swings at rank 1, which
  ``bm25_first`` now prevents outright; with both stages on, the bare query
  lets the dense list add what BM25 missed instead of chunks like its first
  hit.

``first_margin`` was chosen in session 5 on ``suites/tuning/dense_tuning.jsonl``
(198 questions written for it, none sharing an answer with frozen splits 1
and 2), fresh_tuning and the bundled suites only: fused - BM25 MRR@10 on
dense_tuning +0.036 [+0.017, +0.058] (sdist) and +0.026 [+0.007, +0.046]
(checkout), against +0.013 [+0.003, +0.024] and +0.009 [-0.004, +0.022]
with an unconditional ``bm25_first``; fresh_tuning +0.039 / +0.047 against
+0.021 / +0.030; every bundled metric 1.0. Ratios of 1.03-1.05 and dense
depths 10-20 score alike; 1.1 and above lose bundled questions on the
checkout. Its one frozen-split evaluation (``benchmarks/dense_frozen_plan.md``,
session 5, decided in advance on the pooled splits 1-3): +0.020 [+0.003,
+0.036] on the sdist (418 questions) and +0.018 [-0.001, +0.038] on the
checkout (379), no split lower than BM25: measurable on the sdist only, so
the issue's goal is not met (session 4's fusion: +0.015 / +0.007).

The session-4 stages were chosen on the tuning split and the bundled suites only (MiniLM head/256,
``benchmarks/dense_tune.py``): fused minus BM25 MRR@10 on fresh_tuning
+0.021 [+0.003, +0.043] (sdist) and +0.030 [+0.010, +0.056] (checkout),
7 / 1 and 8 / 0 questions better / worse, hit@10 0.900 -> 0.967 and
0.881 -> 0.966, every bundled metric 1.0; DESIGN 5's fusion (then with the
anchor): +0.027 [-0.011, +0.068] and +0.013 [-0.029, +0.055], bundled
MRR@10 0.917 and wf@10 0.972 (a loading question and an adversarial
workflow lost). The frozen splits, evaluated once afterwards
(``benchmarks/dense_frozen_plan.md``), do not confirm a gain on split 1:
+0.004 [-0.011, +0.019] (sdist) and +0.001 [-0.015, +0.017] (checkout);
split 2 +0.025 [+0.006, +0.044] and +0.014 [-0.012, +0.040], where the
session-3 fusion (``disable=("bm25_first", "dense_depth", "+prf")``) had
+0.054 and +0.065 but MRR@10 0.625 on the bundled loading questions.
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
from pycsamt_lsp.search.retrieval import check_disable, snippet_of

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "COSINE_FLOOR",
    "DENSE_SKIP_KINDS",
    "FIRST_MARGIN",
    "FUSION_OFF_BY_DEFAULT",
    "FUSION_STAGES",
    "PRF_WEIGHT",
    "RRF_K",
    "bm25_margin",
    "dense_query",
    "dense_ranking",
    "fused_order",
    "fusion_stages",
    "pool_size",
    "rrf_fuse",
]

log = logging.getLogger(__name__)

COSINE_FLOOR = 0.20
RRF_K = 60
#: Weight of BM25's first result's vector added to the query vector when the
#: ``prf`` stage is on (see the module docstring).
PRF_WEIGHT = 0.25
#: BM25's first score over its second's at or above which ``bm25_first``
#: keeps the first result first while ``first_margin`` is on.
FIRST_MARGIN = 1.05
#: The fusion's named stages, in the order they act (module docstring).
FUSION_STAGES: tuple[str, ...] = (
    "prf",
    "dense_no_docs",
    "dense_depth",
    "bm25_first",
    "first_margin",
    "first_page",
)
#: Fusion stages that run only when switched on with ``"+name"``.
#: ``first_page`` and ``dense_no_docs`` were off until session 7's
#: pre-registered split-5 run (benchmarks/ranking_frozen_plan.md, DF) met
#: the dense rule on both corpora where the fusion without them did not.
FUSION_OFF_BY_DEFAULT: frozenset[str] = frozenset({"prf"})
#: Chunk kinds the dense list leaves to BM25 while ``dense_no_docs`` is on.
DENSE_SKIP_KINDS: frozenset[str] = frozenset({"doc_section"})


def fusion_stages(disable: Collection[str] = ()) -> frozenset[str]:
    """The fusion stages that run under *disable* (names off, ``+name`` on).

    Names that are not fusion stages are left to the BM25 ranking
    (``Workspace.pool``'s *disable*), which switches its own stages.
    """
    on = set(FUSION_STAGES) - FUSION_OFF_BY_DEFAULT
    for name in disable:
        if name[:1] == "+" and name[1:] in FUSION_STAGES:
            on.add(name[1:])
        elif name in FUSION_STAGES:
            on.discard(name)
    if "bm25_first" not in on:  # first_margin only refines bm25_first
        on.discard("first_margin")
    if "first_margin" not in on:  # first_page only refines first_margin
        on.discard("first_page")
    return frozenset(on)


def bm25_margin(results: Sequence[dict[str, Any]]) -> float:
    """BM25's first score over its second's (``inf`` with fewer than two
    results or a second score of 0): how clearly the first result leads."""
    if len(results) < 2 or not results[1]["score"]:
        return float("inf")
    return float(results[0]["score"]) / float(results[1]["score"])


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
    skip_kinds: Collection[str] = (),
) -> list[tuple[str, float]]:
    """Top *n* ``(chunk id, cosine)`` of the live, fresh rows at or above the
    floor (of *kinds* when given, none of *skip_kinds*)."""
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
    if skip_kinds:
        valid = valid & ~np.isin(kinds_of, list(skip_kinds))
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
    prf: float | None = None,
    disable: Collection[str] = (),
) -> dict[str, Any]:
    """``pycsamt.query`` with dense fusion; BM25 alone when dense fails.

    The result has the shape of :meth:`Workspace.query` plus ``retrieval``
    (``"dense+bm25"`` or ``"bm25"``) and, on the BM25 path, ``dense_error``.
    ``top_score`` stays the BM25 ``s_max`` (the confidence proxy); in fused
    results ``score`` is the RRF score (BM25's first result, kept first by
    ``bm25_first``, gets the best fused score when its own is lower), with
    ``bm25_score`` and ``cosine`` (against the query vector the dense list
    was ranked by: with the ``prf`` stage pulled toward BM25's first result,
    named by ``dense_anchor``). *disable*: fusion stage names (module
    docstring) and ranking stage names, which go to the BM25 side (any
    other name: :class:`~pycsamt_lsp.errors.QueryError`). *prf*:
    the anchor's weight, overriding the ``prf`` stage (0 is the bare query).
    """
    check_disable(  # a misspelt stage is an error, not the default ranking
        disable,
        more=FUSION_STAGES,
        more_off=FUSION_OFF_BY_DEFAULT,
        what="ranking or fusion",
    )
    stages = fusion_stages(disable)
    rank_disable = tuple(
        d
        for d in disable
        if d not in FUSION_STAGES and not (d[:1] == "+" and d[1:] in FUSION_STAGES)
    )
    if prf is None:
        prf = PRF_WEIGHT if "prf" in stages else 0.0
    n = pool_size(k)
    n_dense = k if "dense_depth" in stages else n
    pool = ws.pool(query, n, workflow=workflow, kinds=kinds, disable=rank_disable)
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
        skip = DENSE_SKIP_KINDS if "dense_no_docs" in stages else ()
        ranked = dense_ranking(ws, store, qvec, n_dense, kinds=kinds, skip_kinds=skip)
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
    order = fused_order(fused)
    keep_first = "bm25_first" in stages and bool(bm_ids)
    if keep_first and "first_margin" in stages:
        keep_first = bm25_margin(bm_results) >= FIRST_MARGIN
    first = bm_ids[0] if keep_first else None
    if not keep_first and bm_ids and "first_page" in stages:
        # a near tie: the dense vote picks rank 1 among BM25's first page
        page = bm_ids[:k]
        first = max(page, key=lambda c: (fused[c], -page.index(c)))
    if first is not None:
        fused[first] = max(fused[first], fused[order[0]])
        order = [first, *(c for c in order if c != first)]
    results: list[dict[str, Any]] = []
    for cid in order:
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
        fusion_stages=sorted(stages),
    )
    return out
