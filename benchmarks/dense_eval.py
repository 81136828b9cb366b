"""Fused - BM25 on built, embedded corpus copies: MRR@10, hit@10, nDCG@10.

Why this exists: issue 14's dense goal is decided on paired differences
between ``pycsamt.query`` (BM25) and ``pycsamt.query`` with ``dense: true``
(RRF fusion with the stored vectors), per question. ``bench_quality.py
--dense`` computes MRR@10 and hit@10 that way but keeps only the top 3 of
each ranking, so nDCG@10 (which needs every expected symbol's rank) cannot be
derived from its JSON; and it rebuilds and re-embeds copies each run. This
script ranks, on copies that ``pycsamt-lsp build --embed minilm`` already
built, both sides through bench_quality's own child driver (the same
command handler, the same process layout), scores each record with
bench_quality's ``score_record`` (so MRR@10 and hit@10 are the figures of
sessions 4 and 5) plus nDCG@10 with the same symbol matching, and gives the
paired bootstrap CI (``paired_ci``: 2000 resamples, seed 0) per suite and
over every ``suites/test/`` split pooled.

It does not refuse frozen splits: it is the instrument of the one
pre-registered frozen run (``benchmarks/dense_frozen_plan.md``). Tuning goes
through ``dense_tune.py``, which refuses them.

usage: dense_eval.py --corpus NAME=ROOT [...] --questions F [...] [--with-bundled]
                     --out OUT.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from bench_quality import (
    BUNDLED,
    K,
    _our_driver,
    load_records,
    paired_ci,
    score_record,
    symbol_matches,
)
from measure import git_state

POOLED = "test/POOLED"
METRICS = (("mrr@10", "rr"), ("hit@10", "hit"), ("ndcg@10", "ndcg"))


def ndcg_at_10(hits: list[dict[str, Any]], expected: list[str]) -> float:
    """nDCG@10 with binary gains: each expected symbol counts once, at the
    first rank whose symbol matches it (``symbol_matches``, as MRR@10); the
    ideal list has every expected symbol (at most 10) first."""
    want = list(dict.fromkeys(expected))
    ranks: list[int] = []
    for i, h in enumerate(hits[:K], 1):
        for e in want:
            if symbol_matches(h.get("symbol"), e):
                want.remove(e)
                ranks.append(i)
                break
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks)
    n_ideal = min(len(dict.fromkeys(expected)), K)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, n_ideal + 1))
    return dcg / ideal if ideal else 0.0


def scored(rec: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
    """bench_quality's per-record figures plus ``ndcg`` (records with symbols)."""
    s = score_record(rec, hits)
    if "rr" in s:
        s["ndcg"] = ndcg_at_10(hits, rec["expected_symbols"])
        s["hit"] = float(s["hit"])
    return s


def groups(rows: list[tuple[dict, dict]]) -> dict[str, list[tuple[dict, dict]]]:
    """Pairs by suite, ``ALL``, and ``test/POOLED`` (every frozen split)."""
    out: dict[str, list[tuple[dict, dict]]] = {}
    for b, f in rows:
        if "rr" not in b:
            continue
        suite = b["suite"] or "?"
        out.setdefault(suite, []).append((b, f))
        out.setdefault("ALL", []).append((b, f))
        if suite.startswith("test/"):
            out.setdefault(POOLED, []).append((b, f))
    return dict(sorted(out.items()))


def summary(pairs: list[tuple[dict, dict]]) -> dict[str, Any]:
    """Means of both sides and the paired CI of fused - BM25, per metric."""
    res: dict[str, Any] = {"n": len(pairs)}
    for name, key in METRICS:
        bm = [b[key] for b, _ in pairs]
        fu = [f[key] for _, f in pairs]
        res[name] = {
            "bm25": sum(bm) / len(bm),
            "fused": sum(fu) / len(fu),
            "diff": paired_ci([x - y for x, y in zip(fu, bm, strict=True)]),
        }
    return res


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_corpus(
    name: str,
    root: Path,
    files: list[Path],
    *,
    bundled: bool = False,
    dense_disable: list[str] | None = None,
) -> dict[str, Any]:
    """Both rankings of every question on *root*; per-record and per-group
    figures. *bundled*: the corpus's own suites too (``bundled/...``).
    *dense_disable*: fusion (and ranking) stage names for the fused side,
    ``dense_query(disable=...)`` (``+name`` switches one on)."""
    checkout = not (root / "PKG-INFO").exists()
    if bundled:
        files = sorted((root / BUNDLED).glob("*.jsonl")) + list(files)
    records = load_records(files, checkout=checkout)
    queries = list(dict.fromkeys(r["query"] for r in records))
    print(f"[{name}] {len(records)} records, {len(queries)} questions", flush=True)
    t0 = time.perf_counter()
    bm = _our_driver(root, queries)
    fu = _our_driver(root, queries, dense=True, dense_disable=dense_disable)
    paths = {r.get("retrieval") for r in fu["results"]}
    if paths != {"dense+bm25"}:
        errs = {r.get("dense_error") for r in fu["results"]} - {None}
        raise RuntimeError(f"dense did not run on {name}: {paths} {errs}")
    b_hits = {r["query"]: r["hits"] for r in bm["results"]}
    f_hits = {r["query"]: r["hits"] for r in fu["results"]}
    rows = [
        (scored(r, b_hits[r["query"]]), scored(r, f_hits[r["query"]])) for r in records
    ]
    wf: dict[str, list[tuple[bool, bool]]] = {}
    for b, f in rows:  # workflow-in-top-10 means (records with a workflow)
        if "wf_in_top" in b:
            wf.setdefault(b["suite"] or "?", []).append(
                (b["wf_in_top"], f["wf_in_top"])
            )
    return {
        "root": str(root),
        "checkout_filter": checkout,
        "wf@10": {
            g: {
                "n": len(v),
                "bm25": sum(x for x, _ in v) / len(v),
                "fused": sum(y for _, y in v) / len(v),
            }
            for g, v in sorted(wf.items())
        },
        "n_records": len(records),
        "seconds": time.perf_counter() - t0,
        "groups": {g: summary(p) for g, p in groups(rows).items()},
        "records": [
            {
                "query": b["query"],
                "suite": b["suite"],
                **{f"bm25_{k}": b.get(k) for _, k in METRICS},
                **{f"fused_{k}": f.get(k) for _, k in METRICS},
                "bm25_top": b["top"],
                "fused_top": f["top"],
            }
            for b, f in rows
        ],
    }


def _ci(d: dict[str, Any]) -> str:
    c = d["diff"]
    return f"{c['mean']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}] ({c['better']}/{c['worse']})"


def table(results: dict[str, Any]) -> str:
    """Markdown: per corpus and group, BM25 -> fused and the paired CIs."""
    lines = [
        "| corpus | suite (n) | BM25 MRR@10 | fused MRR@10 | MRR@10 fused - BM25 "
        "| hit@10 fused - BM25 | nDCG@10 fused - BM25 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, res in results["corpora"].items():
        for g, s in res["groups"].items():
            m = s["mrr@10"]
            lines.append(
                f"| {name} | {g} ({s['n']}) | {m['bm25']:.3f} | {m['fused']:.3f} "
                f"| {_ci(m)} | {_ci(s['hit@10'])} | {_ci(s['ndcg@10'])} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--corpus",
        action="append",
        required=True,
        metavar="NAME=ROOT",
        help="a copy already built with `pycsamt-lsp build --embed minilm`",
    )
    ap.add_argument("--questions", type=Path, nargs="+", required=True)
    ap.add_argument(
        "--with-bundled", action="store_true", help="also each corpus's own suites"
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--dense-disable",
        default="",
        metavar="NAMES",
        help="comma-separated stages for the fused side (+name: on), e.g. "
        "+first_page,+dense_no_docs",
    )
    a = ap.parse_args(argv)
    disable = [n for n in a.dense_disable.split(",") if n]
    corpora = dict(c.split("=", 1) for c in a.corpus)
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": git_state(),
        "questions": {str(f): sha256(f) for f in a.questions},
        "dense_disable": disable,
        "corpora": {},
    }
    for name, root in corpora.items():
        results["corpora"][name] = run_corpus(
            name,
            Path(root),
            a.questions,
            bundled=a.with_bundled,
            dense_disable=disable or None,
        )
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
