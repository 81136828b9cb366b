"""Routing accuracy on JSONL records, scored the way the reference scores it.

``intent`` / ``workflow`` / ``line`` accuracy is over the records whose
``expected_*`` is not null (pyCSAMT's own harness does the same, so the
figures compare). The ``*_strict`` figures also count the null expectations:
a router that guesses a workflow or line where there is none loses there.
``scope`` accuracy is over records carrying ``expected_scope``.

Run ``python -m pycsamt_lsp.routing.score FILE... --registry-root ROOT`` for a
table (and ``--json``), with the per-request routing time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["load_records", "score_routing"]

FIELDS = (
    ("intent", "expected_intent"),
    ("workflow", "expected_workflow"),
    ("line", "expected_line"),
)


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """JSONL records, skipping blank and ``#`` comment lines."""
    out = []
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        raw = raw.strip()
        if raw and not raw.startswith("#"):
            out.append(json.loads(raw))
    return out


def score_routing(
    records: list[dict[str, Any]], decide: Callable[[str], Any]
) -> dict[str, Any]:
    """Accuracies of ``decide(query)`` (a RouteDecision or a dict) on *records*."""
    pairs: dict[str, list[bool]] = {f: [] for f, _ in FIELDS}
    strict: dict[str, list[bool]] = {"workflow": [], "line": []}
    scope: list[bool] = []
    misses = []
    for rec in records:
        d = decide(rec["query"])
        got = d if isinstance(d, dict) else d.to_dict()
        wrong = {}
        for f, ef in FIELDS:
            if ef not in rec:
                continue
            ok = got.get(f) == rec[ef]
            if rec[ef] is not None:
                pairs[f].append(ok)
            if f in strict:
                strict[f].append(ok)
            if not ok:
                wrong[f] = {"got": got.get(f), "expected": rec[ef]}
        if "expected_scope" in rec:
            ok = got.get("scope", "science") == rec["expected_scope"]
            scope.append(ok)
            if not ok:
                wrong["scope"] = {
                    "got": got.get("scope"),
                    "expected": rec["expected_scope"],
                }
        if wrong:
            misses.append({"query": rec["query"], **wrong})

    def acc(xs: list[bool]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    out: dict[str, Any] = {"n_records": len(records)}
    for f, _ in FIELDS:
        out[f"{f}_accuracy"] = acc(pairs[f])
        out[f"n_{f}"] = len(pairs[f])
    for f, xs in strict.items():
        out[f"{f}_accuracy_strict"] = acc(xs)
    out["scope_accuracy"] = acc(scope)
    out["misses"] = misses
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: score our router on JSONL files (see the module doc)."""
    from pycsamt_lsp.corpus.profile import load_profile
    from pycsamt_lsp.routing.registry import load_line_registry
    from pycsamt_lsp.routing.router import Router

    ap = argparse.ArgumentParser(description="routing accuracy on JSONL records")
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--registry-root", action="append", default=[], type=Path)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--no-descriptors", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    profile = load_profile(a.profile)
    registry = load_line_registry(*a.registry_root)
    router = Router(profile, descriptors=not a.no_descriptors)
    results = {}
    for f in a.files:
        recs = load_records(f)
        res = score_routing(recs, lambda q: router.route(q, registry))
        queries = [r["query"] for r in recs]
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for q in queries:
                router.route(q, registry)
            best = min(best, (time.perf_counter() - t0) / max(len(queries), 1))
        res["route_us_per_request"] = round(best * 1e6, 1)
        results[str(f)] = res
    if a.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    for f, res in results.items():
        print(f"{f}: n={res['n_records']}")
        for key in (
            "intent_accuracy",
            "workflow_accuracy",
            "line_accuracy",
            "workflow_accuracy_strict",
            "line_accuracy_strict",
            "scope_accuracy",
        ):
            v = res[key]
            print(f"  {key:<26}{'-' if v is None else f'{v:.3f}'}")
        print(f"  route time: {res['route_us_per_request']} us/request (best of 5)")
        for m in res["misses"]:
            print("   miss:", json.dumps(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
