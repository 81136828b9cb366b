"""Check that a change to the ranking code leaves every ranking as it was.

A speed-up of ``search/`` (retrieval, stages, fields) must not move a single
result. This tool ranks every query of every suite the eval runs by default
(the corpus's bundled suites, ``suites/``, ``suites/tuning``, ``suites/test``,
``tests/suites``) with the ranking code of a git revision (``--against``,
default ``HEAD``) and with the working tree's, on the SAME snapshot in the same
process (``index/bm25.py`` of the revision too, over the same index arrays),
so changes other people make meanwhile to chunking, tokenizing or the
profile cannot blur the comparison. Per query it compares the ids of the
returned chunks and their scores, for:

* the full engine and each ranking component switched off in turn, plus the
  seed alone (every stage off), at ``k=10`` with the per-file cap of a query;
* the opt-in stages switched on together (:data:`OPT_IN`, the frozen plan's
  R1: ``+fold,+name_cover,+head_wide``);
* the full engine at ``k=50`` (the dense fusion pool);

Each side's own stage names decide what it can run (:func:`configs`): a
configuration that names a stage one revision lacks (``-name_cover``
against a revision before it) is skipped and listed as such, and "seed"
switches off every stage each side has, so ``--against`` an older revision
compares what both know instead of stopping at the first new name.

and, with ``--update N``, the same after re-saving ``N`` files with an
appended function through ``Workspace.refresh``: the incrementally extended
ranking arrays against ranking arrays built from scratch for the updated
snapshot (both with the working tree's code).

Nothing is written into the corpus: it is copied to a temporary folder.
Exit status 1 when any ranking differs. ``--latency REPS`` also times the two
query paths in the same process, alternating which runs first (medians; the
rankings are the ids compared above, so the A/B times equal work), and
``--latency-disable A,B`` adds a row with those components off on both sides
(a stage one side runs by default and the other does not). ``--new REV``
takes the new side from a git revision too (``:`` for the staged files), so
a commit can be checked against its parent while other people's uncommitted
work sits in the tree.

Usage::

    .venv/bin/python benchmarks/rank_identity.py --root CORPUS [--against REV]
        [--new REV] [--update N] [--index-dir DIR] [--latency REPS]
        [--latency-disable A,B]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.evals.suites import default_suite_paths, load_suites
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.search import retrieval as new_retrieval
from pycsamt_lsp.workspace.facade import Workspace
from pycsamt_lsp.workspace.published import Published

PROJECT = Path(__file__).resolve().parent.parent
#: the modules whose old version is loaded side by side with the new one
#: (those a revision does not have yet are skipped)
_MODULES = ("fields", "fold", "head", "dedup", "stages", "retrieval")


def _tag(rev: str) -> str:
    """A module-name-safe tag of *rev*, stable across runs (``hash`` of a
    str is salted per process)."""
    return hashlib.sha1(rev.encode("utf-8")).hexdigest()[:10]


def _spec(rev: str, path: str) -> str:
    """``git show``'s name of *path* at *rev* (``:`` alone: the staged file)."""
    return f":{path}" if rev == ":" else f"{rev}:{path}"


def old_search(rev: str, into: Path) -> ModuleType:
    """``retrieval`` as of *rev*, with its ``fields``/``head``/``dedup``/
    ``stages`` of *rev* too, loaded under a private package name next to the
    working tree's modules.
    """
    pkg = f"_rank_identity_{_tag(rev)}"
    d = into / pkg
    d.mkdir(parents=True, exist_ok=True)
    (d / "__init__.py").write_text("", encoding="utf-8")
    for name in _MODULES:
        got = subprocess.run(
            ["git", "show", _spec(rev, f"server/pycsamt_lsp/search/{name}.py")],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            check=name in ("stages", "retrieval"),
        )
        if got.returncode:
            continue
        src = got.stdout
        for other in _MODULES:
            src = src.replace(f"pycsamt_lsp.search.{other}", f"{pkg}.{other}")
        (d / f"{name}.py").write_text(src, encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{pkg}.retrieval")


def old_bm25(rev: str, into: Path, snap: Snapshot) -> Snapshot:
    """*snap* with its BM25 index scored by ``index/bm25.py`` as of *rev*
    (the same arrays in the old class), so the old side is old end to end."""
    name = f"_rank_identity_bm25_{_tag(rev)}"
    src = subprocess.run(
        ["git", "show", _spec(rev, "server/pycsamt_lsp/index/bm25.py")],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    (into / f"{name}.py").write_text(src, encoding="utf-8")
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    mod = importlib.import_module(name)
    b = snap.bm25
    old = mod.BM25Index(**{f.name: getattr(b, f.name) for f in dataclasses.fields(b)})
    return dataclasses.replace(snap, bm25=old)


def queries() -> list[tuple[str, str]]:
    """``(suite, query)`` of every suite the eval runs by default."""
    return [
        (name, rec["query"])
        for name, recs in load_suites(default_suite_paths(None, PROJECT)).items()
        for rec in recs
    ]


def corpus_queries(root: Path) -> list[tuple[str, str]]:
    """The corpus's bundled suites (its own assistant's), when it has them."""
    d = root / "pycsamt" / "assistant" / "evals" / "suites"
    if not d.is_dir():
        return []
    paths = sorted(d.glob("*.jsonl"))
    return [
        (f"corpus/{name}", rec["query"])
        for name, recs in load_suites(paths).items()
        for rec in recs
    ]


Ranker = Callable[[str, dict[str, Any]], list[tuple[str, float]]]


def ranker(
    mod: ModuleType, ws: Workspace, aux: Any, snap: Snapshot | None = None
) -> Ranker:
    snap = snap or ws.snapshot
    assert snap is not None

    def rank(q: str, kw: dict[str, Any]) -> list[tuple[str, float]]:
        hits, _ = mod.search(snap, aux, ws.profile, q, **kw)
        return [(snap.table.ids[h.slot], h.score) for h in hits]

    return rank


#: opt-in stages compared switched on together (each ``+name``), when both
#: sides know them: session 6's three, the frozen plan's R1
OPT_IN: tuple[tuple[str, ...], ...] = (("+fold", "+name_cover", "+head_wide"),)

#: ``(name, keyword arguments of the old side's search, of the new side's)``
Config = tuple[str, dict[str, Any], dict[str, Any]]


def accepts(mod: ModuleType, names: tuple[str, ...]) -> bool:
    """Whether retrieval module *mod* (of some revision) knows every name of
    a ``disable`` (``+name`` included): its own ``check_disable`` says so,
    else (a revision before it) plain names of its ``COMPONENTS``."""
    check = getattr(mod, "check_disable", None)
    if check is not None:
        try:
            check(list(names))
        except ValueError:  # QueryError is one
            return False
        return True
    known = set(getattr(mod, "COMPONENTS", ()))
    return all(n in known for n in names)


def configs(old: ModuleType, new: ModuleType) -> tuple[list[Config], list[str]]:
    """The configurations both revisions' ranking code can run, and the
    names of those skipped because one side does not know a stage in them.

    The components switched off one at a time are the new side's (then the
    old side's it lacks), each kept only if both accept it; "seed" is every
    stage of each side off (each side's own list: the seed's ranking on
    both); :data:`OPT_IN` on together where both know the stages.
    """
    base = {"k": 10, "per_file": 2}
    out: list[Config] = [("full", base, base)]
    skipped: list[str] = []
    names = dict.fromkeys((*new.COMPONENTS, *getattr(old, "COMPONENTS", ())))
    groups: list[tuple[str, tuple[str, ...]]] = [(f"-{c}", (c,)) for c in names]
    groups += [(",".join(g), g) for g in OPT_IN]
    for label, disable in groups:
        if accepts(old, disable) and accepts(new, disable):
            kw = {**base, "disable": disable}
            out.append((label, kw, kw))
        else:
            skipped.append(label)
    out.append(
        (
            "seed",
            {**base, "disable": tuple(getattr(old, "STAGES", ()))},
            {**base, "disable": tuple(new.STAGES)},
        )
    )
    k50 = {"k": 50, "per_file": 2}
    out.append(("full k=50", k50, k50))
    out.append(("full k=10 no cap", {"k": 10}, {"k": 10}))
    return out, skipped


def report(
    head: str, result: tuple[int, int, float, list[str]], note: str = ""
) -> bool:
    """Print one :func:`compare` result under *head* (then *note*, then the
    differing examples); True when any ranking differs."""
    n, bad, worst, ex = result
    print(
        f"{head}: {n} rankings, {bad} differ; max relative score difference {worst:.2e}"
    )
    if note:
        print(note)
    for e in ex:
        print("  differs:", e)
    return bad > 0


def compare(
    a: Ranker, b: Ranker, qs: list[tuple[str, str]], cfgs: list[Config]
) -> tuple[int, int, float, list[str]]:
    """``(rankings, differing id lists, max |score diff|, examples)``."""
    n = bad = 0
    worst = 0.0
    examples: list[str] = []
    for cname, kw_a, kw_b in cfgs:
        bad_here = 0
        for suite, q in qs:
            ra, rb = a(q, kw_a), b(q, kw_b)
            n += 1
            if [x for x, _ in ra] != [x for x, _ in rb]:
                bad += 1
                bad_here += 1
                if len(examples) < 10:
                    examples.append(f"[{cname}] {suite}: {q!r}")
                continue
            for (_, sa), (_, sb) in zip(ra, rb, strict=True):
                worst = max(worst, abs(sa - sb) / max(abs(sa), 1e-12))
        if bad_here:
            examples.append(f"configuration {cname}: {bad_here} of {len(qs)} differ")
    return n, bad, worst, examples


def latency(
    a: Ranker,
    b: Ranker,
    qs: list[tuple[str, str]],
    reps: int,
    stages: tuple[tuple[str, ...], tuple[str, ...]],
    off: tuple[str, ...] = (),
) -> list[str]:
    """Same-process A/B of the query path (old *a*, new *b*), alternating
    which goes first per query; p50/p95 of ``search`` alone, ms. *stages*:
    each side's own stage names (the seed alone row); *off*: a row of the
    full engine with those components off too."""
    import statistics
    import time

    full = {"k": 10, "per_file": 2}
    rows: list[Config] = [("full engine", full, full)]
    if off:
        kw = {**full, "disable": off}
        rows.append((f"full -{',-'.join(off)}", kw, kw))
    rows.append(
        (
            "seed alone",
            {**full, "disable": stages[0]},
            {**full, "disable": stages[1]},
        )
    )
    lines = []
    for name, kw_a, kw_b in rows:
        for _, q in qs[:50]:
            a(q, kw_a), b(q, kw_b)
        ta: list[float] = []
        tb: list[float] = []
        for r in range(reps):
            for i, (_, q) in enumerate(qs):
                sa, sb = (a, ta, kw_a), (b, tb, kw_b)
                for fn, acc, kw in (sa, sb) if (i + r) % 2 else (sb, sa):
                    t0 = time.perf_counter()
                    fn(q, kw)
                    acc.append(time.perf_counter() - t0)
        pa, pb = statistics.median(ta) * 1e3, statistics.median(tb) * 1e3
        qa, qb = (sorted(t)[int(0.95 * len(t))] * 1e3 for t in (ta, tb))
        lines.append(
            f"latency {name}: {len(qs)} queries x {reps}: p50 old {pa:.3f} ms, "
            f"new {pb:.3f} ms (new/old {pb / pa:.2f}); p95 old {qa:.3f}, new {qb:.3f}"
        )
    return lines


def copy_corpus(root: Path, tmp: Path) -> Path:
    """*root* copied to ``tmp/corpus`` without its index and byte code: the
    rankings are compared on a copy, never in the corpus itself."""
    copy = tmp / "corpus"
    shutil.copytree(
        root, copy, ignore=shutil.ignore_patterns(".pycsamt_rag", "__pycache__")
    )
    return copy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="corpus root (copied)")
    ap.add_argument("--against", default="HEAD", help="git revision of the old code")
    ap.add_argument(
        "--new",
        help="git revision of the new code (':' = the staged files); "
        "default: the working tree",
    )
    ap.add_argument(
        "--latency-disable",
        default="",
        metavar="A,B",
        help="with --latency: also time the full engine with these off",
    )
    ap.add_argument("--update", type=int, default=3, help="files re-saved (0: none)")
    ap.add_argument(
        "--index-dir", type=Path, help="reuse (or create) a persisted index here"
    )
    ap.add_argument(
        "--latency",
        type=int,
        default=0,
        metavar="REPS",
        help="also time old vs new query path (same process, alternating)",
    )
    args = ap.parse_args(argv)
    profile = load_profile()
    status = 0
    with tempfile.TemporaryDirectory(prefix="rank-identity-") as tmpd:
        tmp = Path(tmpd)
        copy = copy_corpus(args.root, tmp)
        ws = Workspace(copy, profile, index_dir=args.index_dir or tmp / "index")
        ws.open(persist=True)
        qs = corpus_queries(copy) + queries()
        old = old_search(args.against, tmp / "old")
        snap = ws.snapshot
        assert snap is not None
        snap_old = old_bm25(args.against, tmp / "old", snap)
        a = ranker(old, ws, old.RankAux.of(snap_old), snap_old)
        new: ModuleType = new_retrieval
        if args.new:
            new = old_search(args.new, tmp / "new")
            snap_new = old_bm25(args.new, tmp / "new", snap)
            b = ranker(new, ws, new.RankAux.of(snap_new), snap_new)
        else:
            # the arrays the workspace published: read back from ranks.npz
            # when --index-dir holds this index's (workspace/warm.py)
            pub = ws.require_published()
            slots = pub.aux.symbol_slots
            read_back = getattr(slots, "_ptr", None) is not None
            print(
                f"working tree's ranking arrays: {'read back' if read_back else 'built'}"
            )
            b = ranker(new_retrieval, ws, pub.aux)
        cfgs, skipped = configs(old, new)
        side = args.new or "working tree"
        note = (
            f"  skipped ({len(skipped)}, a stage one side does not know): "
            + "; ".join(skipped)
            if skipped
            else ""
        )
        status |= report(
            f"{args.against} vs {side}, {len(qs)} queries x {len(cfgs)} configurations",
            compare(a, b, qs, cfgs),
            note,
        )
        if args.latency:
            off = tuple(x for x in args.latency_disable.split(",") if x)
            stages = (tuple(getattr(old, "STAGES", ())), tuple(new.STAGES))
            for line in latency(a, b, qs, args.latency, stages, off):
                print(line)
        if args.update:
            rels = sorted(r for r in snap.files if r.endswith(".py"))
            step = max(1, len(rels) // args.update)
            for i, rel in enumerate(rels[::step][: args.update]):
                with open(copy / rel, "a", encoding="utf-8") as fh:
                    fh.write(
                        f"\n\ndef rank_identity_fresh_{i}(data, rate={i + 2}):\n"
                        '    """Resample impedance data onto a new grid."""\n'
                        "    return data\n"
                    )
                ws.refresh([copy / rel])
            pub = ws.require_published()
            inc = ranker(new_retrieval, ws, pub.aux)
            full = ranker(new_retrieval, ws, Published.of(pub.snapshot).aux)
            status |= report(
                f"after {args.update} saves, incremental vs from-scratch ranking arrays",
                compare(inc, full, qs, configs(new_retrieval, new_retrieval)[0]),
            )
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
