"""``rank_identity`` for the opt-in stages: R1 and each off-by-default stage.

Why: ``benchmarks/rank_identity.py`` compares the default configuration
and each component switched off; a stage that is off by default (``fold``,
``name_cover``, ``head_wide``) is then never run, so a speed-up of one of
them could move R1's rankings (``benchmarks/ranking_frozen_plan.md``)
unseen. This ranks every query rank_identity ranks with the ranking code
of ``--against`` and with the working tree's, on the same snapshot in one
process (rank_identity's loaders), under R0, R1 (``+fold,+name_cover,
+head_wide`` at k = 10 with the per-file cap, at k = 50, without the cap)
and each of the three alone, twice (the second pass on warm caches: a
cache must not move a score). Exit status 1 when any ranking differs.

Usage::

    .venv/bin/python benchmarks/rank_identity_r1.py --root CORPUS [--against REV]
        [--index-dir DIR] [--also A,+B]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import rank_identity as ri  # benchmarks/ is the script's folder: on sys.path
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.search import retrieval as new_retrieval
from pycsamt_lsp.workspace.facade import Workspace

R1 = ("+fold", "+name_cover", "+head_wide")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="corpus root (copied)")
    ap.add_argument("--against", default="main", help="git revision of the old code")
    ap.add_argument("--index-dir", type=Path, help="reuse (or create) an index here")
    ap.add_argument("--also", default="", help="one more disable spec, A,+B")
    args = ap.parse_args(argv)
    cap = {"k": 10, "per_file": 2}
    cfgs: list[tuple[str, dict]] = [
        ("R0", cap),
        ("R1", {**cap, "disable": R1}),
        ("R1 k=50", {"k": 50, "per_file": 2, "disable": R1}),
        ("R1 no cap", {"k": 10, "disable": R1}),
        *((s, {**cap, "disable": (s,)}) for s in R1),
    ]
    if args.also:
        cfgs.append((args.also, {**cap, "disable": tuple(args.also.split(","))}))
    # rank_identity.compare takes (name, old side's kwargs, new side's kwargs)
    both = [(name, kw, kw) for name, kw in cfgs]
    with tempfile.TemporaryDirectory(prefix="rank-identity-r1-") as tmpd:
        tmp = Path(tmpd)
        copy = ri.copy_corpus(args.root, tmp)
        ws = Workspace(copy, load_profile(), index_dir=args.index_dir or tmp / "index")
        ws.open(persist=True)
        qs = ri.corpus_queries(copy) + ri.queries()
        old = ri.old_search(args.against, tmp / "old")
        snap = ws.snapshot
        assert snap is not None
        snap_old = ri.old_bm25(args.against, tmp / "old", snap)
        a = ri.ranker(old, ws, old.RankAux.of(snap_old), snap_old)
        b = ri.ranker(new_retrieval, ws, new_retrieval.RankAux.of(snap))
        status = 0
        for p in ("cold", "warm"):
            status |= ri.report(
                f"{p}: {args.against} vs working tree, {len(qs)} queries x "
                f"{len(cfgs)} configurations",
                ri.compare(a, b, qs, both),
            )
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
