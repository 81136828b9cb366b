"""Scoring one record and aggregating the metrics of many.

The metric definitions are in :mod:`pycsamt_lsp.evals.harness`. Scoring is
pure: it takes the caller's ``retrieve`` and ``infer_workflow`` callables,
so the CLI, the LSP command and the tests share one implementation.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pycsamt_lsp.corpus.testfiles import is_test_path as default_is_test_path

__all__ = [
    "CODE_REQUEST_PHRASES",
    "METRICS",
    "InferWorkflow",
    "Retrieve",
    "aggregate",
    "default_is_test_path",
    "score_record",
    "strip_code_request",
    "subject_workflow",
]

Hit = Any
Retrieve = Callable[[str, int], Sequence[Hit]]
InferWorkflow = Callable[[str], "str | None"]

#: Metric names, in report order.
METRICS: tuple[str, ...] = (
    "symbol_recall",
    "hit_at_k",
    "mrr_at_k",
    "ndcg_at_10",
    "workflow_accuracy",
    "workflow_in_topk",
    "no_test_in_topk",
    "nonempty_rate",
    "hallucination_violations",
    "test_pollution",
)

#: Code-request phrasing removed before the workflow is inferred (the seed's
#: list plus common variants). Matched case-insensitively on word boundaries,
#: longest first.
CODE_REQUEST_PHRASES: tuple[str, ...] = (
    "write the code for",
    "write the code to",
    "write the code that",
    "write code for",
    "write code to",
    "write code that",
    "write me code for",
    "write me code to",
    "write me a script to",
    "write me a script for",
    "write me a script that",
    "write python code for",
    "write python code to",
    "write python code",
    "write a python script to",
    "write a python script for",
    "write a python script",
    "write a script to",
    "write a script for",
    "write a script that",
    "write a script",
    "write code",
    "give me a script to",
    "give me a script for",
    "give me a script that",
    "give me a script",
    "give me the code for",
    "give me the code to",
    "give me code for",
    "give me code to",
    "give me code that",
    "give me code",
    "show me code that",
    "show me code for",
    "show me code to",
    "show me the code for",
    "show me the code to",
    "show me the code",
    "show me code",
    "generate code for",
    "generate a script for",
    "generate a script to",
    "generate a script",
    "generate script",
    "generate code",
    "create a notebook for",
    "create notebook",
    "notebook for",
    "python script for",
    "python script to",
    "python script",
    "python code for",
    "script for",
    "script that",
    "script to",
    "code for",
    "code that",
    "code to",
)

_CODE_RE = re.compile(
    r"\b(?:"
    + "|".join(
        r"\s+".join(map(re.escape, p.split()))
        for p in sorted(CODE_REQUEST_PHRASES, key=len, reverse=True)
    )
    + r")\b",
    re.IGNORECASE,
)


def strip_code_request(query: str) -> str:
    """Remove code-request phrasing ("write the code for", "give me a script
    to", "show me code that", ...) so the *subject* of the request remains.
    Case of the remaining text is kept; whitespace is collapsed."""
    return " ".join(_CODE_RE.sub(" ", query).split())


def subject_workflow(query: str, infer_workflow: InferWorkflow) -> str | None:
    """The workflow of the query's subject.

    Classifies the query with code-request phrasing stripped; falls back to
    the original query when stripping changed nothing, left nothing, or the
    stripped query has no workflow (or only ``code_gen``).
    """
    stripped = strip_code_request(query)
    if stripped and stripped != query.strip():
        wf = infer_workflow(stripped)
        if wf and wf != "code_gen":
            return wf
    return infer_workflow(query)


def _field(hit: Hit, name: str) -> Any:
    if isinstance(hit, Mapping):
        return hit.get(name)
    return getattr(hit, name, None)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


# -- scoring ------------------------------------------------------------------


def _rank_metrics(
    hits: Sequence[Hit], expected: Sequence[str]
) -> tuple[bool | None, float | None, float | None]:
    """``(hit@k, reciprocal rank@k, nDCG@10)`` of the expected symbols.

    Matching is exact, as for the recall. A hit is a rank holding an expected
    symbol (each expected symbol counts once, at its first rank); nDCG uses
    binary gains, the ideal list putting every expected symbol first. All
    ``None`` for a record without expected symbols.
    """
    if not expected:
        return None, None, None
    want = set(expected)
    ranks: list[int] = []
    for i, h in enumerate(hits, 1):
        sym = _field(h, "symbol")
        if sym in want:
            want.discard(sym)
            ranks.append(i)
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= 10)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), 10) + 1))
    return bool(ranks), (1.0 / ranks[0] if ranks else 0.0), dcg / ideal


def score_record(
    rec: Mapping[str, Any],
    retrieve: Retrieve,
    infer_workflow: InferWorkflow | None,
    k: int,
    is_test: Callable[[str], bool],
) -> dict[str, Any]:
    """Retrieve for one record and score it (one per-record detail row)."""
    q = str(rec["query"])
    t0 = time.perf_counter()
    error = None
    try:
        hits = list(retrieve(q, k) or [])[:k]
    except Exception as exc:  # noqa: BLE001 - an eval reports, never dies
        hits = []
        error = f"{type(exc).__name__}: {exc}"
    latency = (time.perf_counter() - t0) * 1000.0

    symbols = [s for s in (_field(h, "symbol") for h in hits) if s]
    workflows = [w for w in (_field(h, "workflow") for h in hits) if w]
    paths = [str(_field(h, "source_path") or "") for h in hits]
    test_paths = [p for p in paths if is_test(p)]

    # symbol recall: exact fully qualified symbols, as the seed harness
    exp_syms = list(dict.fromkeys(rec.get("expected_symbols") or []))
    recall = None
    missing: list[str] = []
    if exp_syms:
        got = set(symbols)
        missing = [s for s in exp_syms if s not in got]
        recall = (len(exp_syms) - len(missing)) / len(exp_syms)
    hit, rr, ndcg = _rank_metrics(hits, exp_syms)

    # workflow accuracy: the classifier on the subject of the request
    exp_wf = rec.get("expected_workflow")
    inferred = None
    wf_correct = None
    if infer_workflow is not None:
        inferred = subject_workflow(q, infer_workflow)
        if exp_wf:
            wf_correct = inferred == exp_wf

    # workflow in top-k: the retrieval target
    target = rec.get("expected_retrieval_workflow") or exp_wf
    in_topk = (target in set(workflows)) if target else None

    # hallucination guard
    guard = rec.get("must_not_contain") or []
    found: list[str] = []
    if guard:
        blob = "\n".join(str(_field(h, "text") or "") for h in hits)
        found = [s for s in guard if s in blob]

    row: dict[str, Any] = {
        "query": q,
        "expected_workflow": exp_wf,
        "expected_retrieval_workflow": rec.get("expected_retrieval_workflow"),
        "inferred_workflow": inferred,
        "workflow_correct": wf_correct,
        "workflow_in_topk": in_topk,
        "symbol_recall": recall,
        "hit_at_k": hit,
        "mrr_at_k": rr,
        "ndcg_at_10": ndcg,
        "missing_symbols": missing,
        "retrieved_workflows": sorted(set(workflows)),
        "retrieved_symbols_top5": symbols[:5],
        "n_hits": len(hits),
        "test_hits": test_paths,
        "guarded": bool(guard),
        "violations": found,
        "latency_ms": latency,
    }
    if "_suite" in rec:
        row["suite"] = rec["_suite"]
    if error:
        row["error"] = error
    return row


def aggregate(rows: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """Metrics, their ``n`` and the failure lists from per-record rows."""

    def frac(flags: list[bool]) -> float | None:
        return _mean([float(x) for x in flags])

    recalls = [r["symbol_recall"] for r in rows if r["symbol_recall"] is not None]
    ranked = [r for r in rows if r.get("mrr_at_k") is not None]
    wf_ok = [r["workflow_correct"] for r in rows if r["workflow_correct"] is not None]
    wf_topk = [r["workflow_in_topk"] for r in rows if r["workflow_in_topk"] is not None]
    n_hits = sum(r["n_hits"] for r in rows)
    n_test = sum(len(r["test_hits"]) for r in rows)
    violations = [
        {"query": r["query"], "found": r["violations"]} for r in rows if r["violations"]
    ]
    pollution = [
        {"query": r["query"], "paths": r["test_hits"]} for r in rows if r["test_hits"]
    ]
    errors = [
        {"query": r["query"], "error": r["error"]} for r in rows if r.get("error")
    ]
    metrics: dict[str, Any] = {
        "symbol_recall": _mean(recalls),
        "hit_at_k": frac([r["hit_at_k"] for r in ranked]),
        "mrr_at_k": _mean([r["mrr_at_k"] for r in ranked]),
        "ndcg_at_10": _mean([r["ndcg_at_10"] for r in ranked]),
        "workflow_accuracy": frac(wf_ok),
        "workflow_in_topk": frac(wf_topk),
        "no_test_in_topk": frac([not r["test_hits"] for r in rows]),
        "nonempty_rate": frac([r["n_hits"] > 0 for r in rows]),
        "hallucination_violations": len(violations),
        "test_pollution": (n_test / n_hits) if n_hits else None,
    }
    counts = {
        "symbol_recall": len(recalls),
        "hit_at_k": len(ranked),
        "mrr_at_k": len(ranked),
        "ndcg_at_10": len(ranked),
        "workflow_accuracy": len(wf_ok),
        "workflow_in_topk": len(wf_topk),
        "no_test_in_topk": len(rows),
        "nonempty_rate": len(rows),
        "hallucination_violations": sum(1 for r in rows if r["guarded"]),
        "test_pollution": n_hits,
    }
    lat = sorted(r["latency_ms"] for r in rows)
    timing = {
        "mean_ms": _mean(lat),
        "p95_ms": lat[max(0, math.ceil(0.95 * len(lat)) - 1)] if lat else None,
        "max_ms": lat[-1] if lat else None,
    }
    return {
        "kind": "eval",
        "k": k,
        "n_records": len(rows),
        "metrics": metrics,
        "n": counts,
        "violations": violations,
        "test_pollution": pollution,
        "errors": errors,
        "timing": timing,
        "records": list(rows),
    }
