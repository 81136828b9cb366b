"""Session 6's tuning protocol: 3 folds of ``suites/tuning`` by record, per configuration.

Why: a ranking change is kept only when it holds on questions it was not
looked at with (docs/ranking.md, "Fresh questions, session 6"). This tool
makes the folds and scores configurations on them, so the protocol can be
run again without ad-hoc code: the tuning records (fresh_tuning,
dense_tuning, paraphrase) grouped by ``category``, each group ordered by
the SHA-1 of the query and dealt round robin into 3 folds; the same folds
on every corpus (the checkout leaves out ``in_checkout: false``). Each
configuration (a ``disable`` spec, ``A,+B``) is ranked through
``Workspace.query`` (k = 10, the eval's retriever) and scored per fold:
MRR@10 / hit@10 of the first expected symbol (the eval's metrics), wf@10
(the expected workflow in the top 10), and the corpus's bundled suites.

It never reads ``suites/test/``: the paths are fixed here, and a path under
``suites/test`` is refused.

Usage::

    .venv/bin/python benchmarks/rank_folds.py --root CORPUS_COPY \\
        [--index-dir DIR] [--checkout] --config "" --config "+fold,+name_cover"
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.evals.metrics import aggregate, score_record
from pycsamt_lsp.evals.service import _retriever
from pycsamt_lsp.evals.suites import load_suite
from pycsamt_lsp.workspace.facade import Workspace

PROJECT = Path(__file__).resolve().parent.parent
TUNING = ("fresh_tuning", "dense_tuning", "paraphrase")
N_FOLDS = 3


def tuning_records() -> list[dict[str, Any]]:
    """The tuning split's records (never anything under suites/test)."""
    out: list[dict[str, Any]] = []
    for name in TUNING:
        path = PROJECT / "suites" / "tuning" / f"{name}.jsonl"
        if "test" in path.relative_to(PROJECT / "suites").parts:
            raise SystemExit("rank_folds: refuses suites/test")
        out += [{**r, "_suite": name} for r in load_suite(path)]
    return out


def folds(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """3 folds by record, stratified by category (SHA-1 order, round robin)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(str(r.get("category")), []).append(r)
    out: list[list[dict[str, Any]]] = [[] for _ in range(N_FOLDS)]
    for cat in sorted(groups):
        recs = sorted(
            groups[cat],
            key=lambda r: hashlib.sha1(str(r["query"]).encode("utf-8")).hexdigest(),
        )
        for i, r in enumerate(recs):
            out[i % N_FOLDS].append(r)
    return out


def bundled(root: Path) -> dict[str, list[dict[str, Any]]]:
    d = root / "pycsamt" / "assistant" / "evals" / "suites"
    return {p.stem: load_suite(p) for p in sorted(d.glob("*.jsonl"))}


def rows_of(ws: Workspace, recs: list[dict[str, Any]], disable: str) -> list[dict]:
    """The eval's per-record rows of *recs* under the ``disable`` spec."""
    base = tuple(x for x in disable.split(",") if x)
    retrieve = _retriever(ws, None, base)
    return [score_record(r, retrieve, None, 10, lambda _p: False) for r in recs]


def summary(rows: list[dict]) -> dict[str, Any]:
    """MRR@10, hit@10, wf@10 and n of per-record *rows*."""
    m = aggregate(rows, 10)
    return {
        "mrr": m["metrics"]["mrr_at_k"],
        "hit": m["metrics"]["hit_at_k"],
        "wf": m["metrics"]["workflow_in_topk"],
        "n": m["n"]["mrr_at_k"],
        "rows": [(r["query"], r["mrr_at_k"], r["hit_at_k"]) for r in rows],
    }


def score(ws: Workspace, recs: list[dict[str, Any]], disable: str) -> dict[str, Any]:
    """:func:`summary` of *recs* ranked under the ``disable`` spec."""
    return summary(rows_of(ws, recs, disable))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="a corpus COPY")
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--checkout", action="store_true", help="drop in_checkout false")
    ap.add_argument("--config", action="append", default=[], help="disable spec")
    ap.add_argument("--json", type=Path, help="write per-record rows here")
    args = ap.parse_args(argv)
    ws = Workspace(args.root, load_profile(), index_dir=args.index_dir)
    ws.open(persist=args.index_dir is not None)
    recs = tuning_records()
    fs = folds(recs)
    if args.checkout:
        fs = [[r for r in f if r.get("in_checkout") is not False] for f in fs]
    bund = bundled(args.root)
    report: dict[str, Any] = {}
    for cfg in args.config or [""]:
        fold_rows = [rows_of(ws, f, cfg) for f in fs]
        per = [summary(r) for r in fold_rows]
        allr = summary([x for r in fold_rows for x in r])
        bun = {n: score(ws, rs, cfg) for n, rs in bund.items()}
        report[cfg] = {"folds": per, "all": allr, "bundled": bun}
        cells = " | ".join(
            f"{p['mrr']:.3f} / {p['hit']:.3f} / {p['wf']:.3f} (n {p['n']})" for p in per
        )
        b = ", ".join(
            f"{n} {v['mrr'] if v['mrr'] is not None else 1:.3f}/"
            f"{v['hit'] if v['hit'] is not None else 1:.3f}/"
            f"{v['wf'] if v['wf'] is not None else 1:.3f}"
            for n, v in bun.items()
        )
        print(
            f"[{cfg or 'default'}] folds {cells} | all {allr['mrr']:.3f} / "
            f"{allr['hit']:.3f} / {allr['wf']:.3f} | bundled {b}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
