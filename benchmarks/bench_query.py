"""Query latency in process (issue 14): ``search`` and ``Workspace.query``.

Every query of the suites the eval runs by default (the corpus's bundled
suites too; the project's as of ``--suites-at REV``, by default
:data:`SUITES_AT`, the fixed list of the latency rule in
``ranking_frozen_plan.md``, so a new suite does not move the figure; ``tree``
for the working tree's), on a copy of the corpus, timed one call at a time:

* **core**: ``retrieval.search`` (k=10, per-file cap 2), what ranking costs;
* **api**: ``Workspace.query`` (k=10, snippets), what a ``pycsamt.query``
  command costs in process (labels, snippets, URIs included);
* **first pass**: the first run over the suite right after the index is
  opened, every per-index cache empty (BM25 term weights, the stages' name
  and head caches, shown snippets and URIs, the chunk reader's); then
  **warm**: the best of ``--reps`` further passes (the suite repeats its
  terms, so these are the cached figures).

``--rev REV`` also runs the same measurement with the package as of git
revision *REV* (exported to a temporary folder, in its own process, the two
processes alternating ``--rounds`` times), and prints both with ratios.
Medians over the rounds; the machine's load average is printed, since other
processes on a shared machine move every figure. ``--disable A,B`` switches
ranking components off on both sides (a stage one revision runs by default
and the other does not: like for like).

Usage::

    .venv/bin/python benchmarks/bench_query.py --root CORPUS [--rev REV]
        [--reps 3] [--rounds 2] [--index-dir DIR] [--disable A,B] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent


#: The latency rule's query list (benchmarks/ranking_frozen_plan.md, session
#: 10): the project's suites as of this revision, nothing added later
#: (1,787 queries with the pyCSAMT corpora's bundled suites).
SUITES_AT = "1cda22d"


def _suite_queries(copy: Path, suites_at: str = "tree") -> list[str]:
    """The corpus's bundled suites' queries, then the project's: the working
    tree's (*suites_at* ``"tree"``, what ``rank_identity`` ranks) or those
    of git revision *suites_at*."""
    sys.path.insert(0, str(PROJECT / "benchmarks"))
    import rank_identity as ri  # the same query list rank_identity ranks

    if suites_at == "tree":
        return [q for _, q in ri.corpus_queries(copy) + ri.queries()]
    from pycsamt_lsp.evals.suites import default_suite_paths, load_suites

    with tempfile.TemporaryDirectory(prefix="bench-query-suites-") as tmpd:
        paths = default_suite_paths(
            None, _export(suites_at, Path(tmpd), "suites").parent
        )
        own = [r["query"] for recs in load_suites(paths).values() for r in recs]
    return [q for _, q in ri.corpus_queries(copy)] + own


def _times(fn: Callable[[str], object], qs: list[str]) -> tuple[float, float]:
    t: list[float] = []
    for q in qs:
        t0 = time.perf_counter()
        fn(q)
        t.append(time.perf_counter() - t0)
    t.sort()
    return statistics.median(t) * 1e3, t[int(0.95 * len(t))] * 1e3


def measure(
    root: Path,
    index_dir: Path,
    reps: int,
    disable: tuple[str, ...] = (),
    suites_at: str = SUITES_AT,
) -> dict[str, Any]:
    """One process's figures (ms) for the package it imports."""
    from pycsamt_lsp.corpus.profile import load_profile
    from pycsamt_lsp.search import retrieval
    from pycsamt_lsp.workspace.facade import Workspace

    with tempfile.TemporaryDirectory(prefix="bench-query-") as tmpd:
        copy = Path(tmpd) / "corpus"
        shutil.copytree(
            root, copy, ignore=shutil.ignore_patterns(".pycsamt_rag", "__pycache__")
        )
        ws = Workspace(copy, load_profile(), index_dir=index_dir)
        ws.open(persist=True)
        qs = _suite_queries(copy, suites_at)
        snap = ws.snapshot
        assert snap is not None
        out: dict[str, Any] = {"queries": len(qs), "chunks": len(snap.table)}

        def api(q: str) -> object:
            return ws.query(q, 10, disable=disable)

        out["api_first"] = _times(api, qs)
        out["api_warm"] = min(
            (_times(api, qs) for _ in range(reps)), key=lambda x: x[0]
        )
        # core on a fresh BM25 object and fresh ranking arrays: empty caches
        fresh = dataclasses.replace(snap, bm25=dataclasses.replace(snap.bm25))
        aux = retrieval.RankAux.of(fresh)

        def core(q: str) -> object:
            return retrieval.search(
                fresh, aux, ws.profile, q, k=10, per_file=2, disable=disable
            )

        out["core_first"] = _times(core, qs)
        out["core_warm"] = min(
            (_times(core, qs) for _ in range(reps)), key=lambda x: x[0]
        )
        return out


def _export(rev: str, into: Path, part: str = "server") -> Path:
    """The folder *part* of *rev* unpacked under *into* (``server/``: for
    ``PYTHONPATH``; ``suites/``: the suites of that revision)."""
    blob = subprocess.run(
        ["git", "archive", rev, part], cwd=PROJECT, capture_output=True, check=True
    ).stdout
    tar = into / f"{part}.tar"
    tar.write_bytes(blob)
    with tarfile.open(tar) as tf:
        tf.extractall(into, filter="data")
    return into / part


def _child(args: argparse.Namespace, server: Path | None, index_dir: Path) -> dict:
    env = dict(os.environ)
    if server is not None:
        env["PYTHONPATH"] = str(server)
    cmd = [
        sys.executable,
        __file__,
        "--root",
        str(args.root),
        "--reps",
        str(args.reps),
        "--index-dir",
        str(index_dir),
        "--disable",
        args.disable,
        "--suites-at",
        args.suites_at,
        "--child",
    ]
    got = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if got.returncode:  # e.g. a stage the revision does not know: its last line
        last = (got.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"bench_query: error: {server or 'tree'}: {last}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def _median(runs: list[dict], key: str) -> tuple[float, float]:
    return (
        statistics.median(r[key][0] for r in runs),
        statistics.median(r[key][1] for r in runs),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="corpus root (copied)")
    ap.add_argument("--rev", help="also measure the package as of this git revision")
    ap.add_argument("--reps", type=int, default=3, help="warm passes (best kept)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating processes")
    ap.add_argument("--index-dir", type=Path, help="persisted index (reused)")
    ap.add_argument("--disable", default="", help="components off on both sides")
    ap.add_argument(
        "--suites-at",
        default=SUITES_AT,
        metavar="REV",
        help="the project's suites as of this git revision (default: the "
        "latency rule's fixed list); 'tree': the working tree's",
    )
    ap.add_argument("--json", action="store_true", help="print JSON only")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    root = args.root.expanduser().resolve()
    off = tuple(x for x in args.disable.split(",") if x)
    if args.child:
        print(json.dumps(measure(root, args.index_dir, args.reps, off, args.suites_at)))
        return 0
    from pycsamt_lsp.errors import QueryError
    from pycsamt_lsp.search.retrieval import check_disable

    try:  # a misspelt stage: one line, as the CLI says it (not a traceback)
        check_disable(off)
    except QueryError as exc:
        ap.error(str(exc))
    with tempfile.TemporaryDirectory(prefix="bench-query-") as tmpd:
        tmp = Path(tmpd)
        base = args.index_dir or tmp / "index"
        sides: dict[str, tuple[Path | None, Path]] = {"tree": (None, base / "tree")}
        if args.rev:
            sides[args.rev] = (_export(args.rev, tmp), base / "rev")
        runs: dict[str, list[dict]] = {k: [] for k in sides}
        loads = []
        for _ in range(args.rounds):
            for name, (server, idx) in sides.items():
                loads.append(os.getloadavg()[0])
                runs[name].append(_child(args, server, idx))
    keys = ("core_first", "core_warm", "api_first", "api_warm")
    report = {
        "root": str(root),
        "disable": args.disable,
        "load_average_1min": loads,
        "sides": {n: {k: _median(r, k) for k in keys} for n, r in runs.items()},
        "queries": runs["tree"][0]["queries"],
        "suites_at": args.suites_at,
        "chunks": runs["tree"][0]["chunks"],
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{root}: {report['chunks']} chunks, {report['queries']} queries "
        f"(suites at {args.suites_at}), "
        f"{args.rounds} rounds; load average {min(loads):.1f}-{max(loads):.1f}"
        + (f"; off: {args.disable}" if args.disable else "")
    )
    print(f"{'ms':18s}" + "".join(f"{n[:12]:>22s}" for n in sides) + "   ratio")
    for k in keys:
        cells = [report["sides"][n][k] for n in sides]
        line = f"{k + ' p50 / p95':18s}" + "".join(
            f"{p50:>13.3f} / {p95:6.3f}" for p50, p95 in cells
        )
        if len(cells) == 2:
            line += f"   {cells[0][0] / cells[1][0]:.2f}"
        print(line)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
