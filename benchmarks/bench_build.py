"""Whole processes side by side: ``pycsamt-lsp`` against pyCSAMT 2.6.4's assistant.

What a user waits for, measured the same way for both (``measure.run_measured``):

- build: ``pycsamt-lsp build --root COPY`` (whole process, persisted, package
  model included) against ``python -m pycsamt.assistant.rag --root COPY build``
  (the reference venv, see ``reference.py``), each on its own copy of the
  corpus, index removed before every repetition;
- fresh process, load + 1 query: ``pycsamt-lsp query --root COPY QUERY``
  against ``python -m pycsamt.assistant.rag --root COPY query QUERY -k 10``;
- our language server's settled RSS (index + package model loaded, warm start
  on the persisted index; ``bench_server.Client``), sdist corpus only.

Runs alternate (ours, reference, reference, ours, ...) so machine load is
shared; medians of N repetitions (default 3, ``--quick`` 1). Ratios are ours /
reference. ``--rev REV`` also builds with the package as of a git revision
(its ``server/`` and ``assistant_recipes/`` exported and compiled), in the
same rotation, so a change is reported before and after in one run; the
table then gives each side's ratio to the reference and per-repetition wall
ratios. Prints a table and writes JSON (``benchmarks/results/bench_build.json``).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from measure import git_state, offline_env, run_measured
from reference import (
    REF_VERSION,
    copy_corpus,
    ensure_ref_venv,
    ref_build,
    ref_query_cli,
)

HOME_CACHE = Path.home() / ".cache/pycsamt-lsp"
PROJECT = Path(__file__).resolve().parents[1]
CORPORA = {
    "sdist": HOME_CACHE / "pycsamt-2.6.4/pycsamt-2.6.4",
    "checkout-docs": HOME_CACHE / "checkout/pycsamt-checkout",
}
QUERY = "rotate impedance tensor to strike"
DEFAULT_OUT = Path(__file__).with_name("results") / "bench_build.json"
FIGS = (
    "wall_s",
    "cpu_s",
    "root_cpu_s",
    "child_cpu_s",
    "maxrss_mb",
    "tree_peak_rss_mb",
    "tree_peak_pss_mb",
)
#: row names where the field name says too little
LABELS = {
    "root_cpu_s": "cpu, main process",
    "child_cpu_s": "cpu, its children",
}


def our_cli() -> list[str]:
    """Our console script next to this interpreter (else ``-m pycsamt_lsp``)."""
    exe = Path(sys.executable).with_name("pycsamt-lsp")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pycsamt_lsp"]


def export_rev(rev: str, into: Path) -> Path:
    """The package as of git *rev* (``server/`` and the bundled
    ``assistant_recipes/``) unpacked and byte-compiled under *into*; returns
    the folder to put on ``PYTHONPATH``."""
    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(
        ["git", "archive", rev, "server", "assistant_recipes"],
        cwd=PROJECT,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(into / "server")],
        capture_output=True,
        check=False,
    )
    return into / "server"


def our_build(root: Path, pythonpath: Path | None = None) -> dict[str, Any]:
    """``pycsamt-lsp build --root ROOT --json`` from scratch (index removed);
    *pythonpath*: import the package from there (``--rev``)."""
    shutil.rmtree(root / ".pycsamt_rag", ignore_errors=True)
    env = offline_env()
    cli = our_cli()
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
        # the revision's own entry point: the installed console script names
        # a function of today's cli.py, which an older revision may lack
        cli = [sys.executable, "-m", "pycsamt_lsp"]
    res = run_measured(
        [*cli, "build", "--root", str(root), "--json"],
        cwd=tempfile.gettempdir(),
        env=env,
    )
    try:
        res["report"] = json.loads(res["stdout"])
        res["n_chunks"] = res["report"].get("n_chunks")
    except json.JSONDecodeError:
        res["n_chunks"] = None
    return res


def our_query(root: Path, text: str) -> dict[str, Any]:
    """A fresh ``pycsamt-lsp query --root ROOT --json -k 10 TEXT`` process."""
    res = run_measured(
        [*our_cli(), "query", "--root", str(root), "--json", "-k", "10", text],
        cwd=tempfile.gettempdir(),
        env=offline_env(),
    )
    try:
        hits = json.loads(res["stdout"])["results"]
        res["top"] = hits[0]["label"] if hits else None
    except (json.JSONDecodeError, KeyError):
        res["top"] = None
    return res


def ref_query(root: Path, text: str) -> dict[str, Any]:
    """The reference CLI's fresh ``query`` process (its text output parsed)."""
    res = ref_query_cli(root, text, k=10)
    res["top"] = res["hits"][0]["label"] if res["hits"] else None
    return res


def _slim(run: dict[str, Any]) -> dict[str, Any]:
    if "cpu_s" in run and "root_cpu_s" in run:  # a build's workers (ours)
        run["child_cpu_s"] = max(run["cpu_s"] - run["root_cpu_s"], 0.0)
    keep = (*FIGS, "user_s", "sys_s", "returncode", "n_chunks", "top")
    out = {k: run[k] for k in keep if k in run}
    if run.get("returncode"):
        out["stderr_tail"] = run.get("stderr", "")[-2000:]
    return out


def rotate(reps: int, sides: dict[str, Any]) -> dict[str, list[dict]]:
    """Run each of *sides* (name -> zero-argument function) ``reps`` times,
    rotating which goes first in each round."""
    names = list(sides)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for i in range(reps):
        k = i % len(names)
        for n in names[k:] + names[:k]:
            runs[n].append(_slim(sides[n]()))
    return runs


def alternate(reps: int, ours, ref) -> tuple[list[dict], list[dict]]:
    """Run ``ours()`` and ``ref()`` ``reps`` times each, alternating the order."""
    a: list[dict] = []
    b: list[dict] = []
    for i in range(reps):
        pair = (ours, ref) if i % 2 == 0 else (ref, ours)
        for fn in pair:
            (a if fn is ours else b).append(_slim(fn()))
    return a, b


def medians(runs: list[dict]) -> dict[str, float]:
    """Median of each figure over successful runs."""
    ok = [r for r in runs if r.get("returncode") == 0] or runs
    return {f: statistics.median(r[f] for r in ok) for f in FIGS}


def server_rss(root: Path) -> dict[str, float] | None:
    """Our server's settled RSS, warm start on ROOT's persisted index."""
    try:
        from bench_server import Client
    except ImportError as exc:  # pygls client missing: report, do not fail
        return {"error": f"bench_server unavailable: {exc}"}

    async def go() -> dict[str, float]:
        c = Client()
        with tempfile.TemporaryDirectory() as tmp:
            start = await c.start(root, root / ".pycsamt_rag")
            rss, peak = await c.settled_rss_mb(Path(tmp))
            await c.stop()
        return {"init_to_first_query_s": start, "rss_mb": rss, "peak_rss_mb": peak}

    return asyncio.run(go())


def bench_corpus(
    name: str,
    src: Path,
    tmp: Path,
    reps: int,
    server: bool,
    query: bool = True,
    rev: tuple[str, Path] | None = None,
) -> dict:
    """Build and fresh-query figures for one corpus, ours and the reference
    (and ours as of *rev*: ``(name, PYTHONPATH)``, builds only)."""
    ours_copy = copy_corpus(src, tmp / f"{name}-ours")
    ref_copy = copy_corpus(src, tmp / f"{name}-ref")
    print(f"[{name}] build x{reps} each, alternating ...", flush=True)
    sides: dict[str, Any] = {
        "ours": lambda: our_build(ours_copy),
        "ref": lambda: ref_build(ref_copy),
    }
    if rev is not None:
        rev_copy = copy_corpus(src, tmp / f"{name}-rev")
        sides = {"rev": lambda: our_build(rev_copy, rev[1]), **sides}
    runs = rotate(reps, sides)
    ob, rb = runs["ours"], runs["ref"]
    res: dict[str, Any] = {
        "source": str(src),
        "n_chunks": {"ours": ob[-1].get("n_chunks"), "ref": rb[-1].get("n_chunks")},
        "build": {
            "ours": medians(ob),
            "ref": medians(rb),
            "runs_ours": ob,
            "runs_ref": rb,
        },
    }
    if rev is not None:
        res["build"].update(
            rev=rev[0], rev_ours=medians(runs["rev"]), runs_rev=runs["rev"]
        )
    if query:
        print(f"[{name}] fresh process load + 1 query x{reps} each ...", flush=True)
        oq, rq = alternate(
            reps,
            lambda: our_query(ours_copy, QUERY),
            lambda: ref_query(ref_copy, QUERY),
        )
        res["fresh_query"] = {
            "ours": medians(oq),
            "ref": medians(rq),
            "runs_ours": oq,
            "runs_ref": rq,
            "query": QUERY,
        }
    if server:
        print(f"[{name}] our server settled RSS ...", flush=True)
        res["server"] = server_rss(ours_copy)
    return res


def ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def table(results: dict[str, Any]) -> str:
    """The side-by-side table: ours, reference, ours / reference."""
    rows = [
        f"{'corpus':<14}{'measure':<30}{'ours':>12}{'reference':>12}{'ratio':>8}",
        "-" * 76,
    ]
    units = {
        "wall_s": "s",
        "cpu_s": "s",
        "root_cpu_s": "s",
        "child_cpu_s": "s",
        "maxrss_mb": "MB",
        "tree_peak_rss_mb": "MB",
        "tree_peak_pss_mb": "MB",
    }
    for name, res in results["corpora"].items():
        n = res["n_chunks"]
        rows.append(f"{name:<14}{'chunks':<30}{n['ours']!s:>12}{n['ref']!s:>12}")
        for part, label in (("build", "build"), ("fresh_query", "load + 1 query")):
            if part not in res:
                continue
            o, r = res[part]["ours"], res[part]["ref"]
            old = res[part].get("rev_ours")
            for f in FIGS:
                name = LABELS.get(f) or f.rsplit("_", 1)[0].replace("_", " ")
                what = f"{label} {name}"
                q = ratio(o[f], r[f])
                row = (
                    f"{'':<14}{what:<30}{o[f]:>9.2f} {units[f]:<2}{r[f]:>9.2f} "
                    f"{units[f]:<2}{(f'{q:.2f}x' if q else '-'):>8}"
                )
                if old is not None:
                    qo = ratio(old[f], r[f])
                    row += f"   {res[part]['rev'][:10]}: {old[f]:.2f} ({qo:.2f}x)"
                rows.append(row)
            if old is not None:
                for side in ("rev", "ours"):
                    per = [
                        round(a["wall_s"] / b["wall_s"], 2)
                        for a, b in zip(
                            res[part][f"runs_{side}"],
                            res[part]["runs_ref"],
                            strict=False,
                        )
                    ]
                    rows.append(f"{'':<14}wall ratio per repetition, {side}: {per}")
                # the same round's new / old (ours / rev): the A/B itself,
                # for wall and for CPU (CPU shifts less with the load)
                for fig in ("wall_s", "cpu_s", "root_cpu_s"):
                    per = [
                        round(a[fig] / b[fig], 3) if b.get(fig) else None
                        for a, b in zip(
                            res[part]["runs_ours"], res[part]["runs_rev"], strict=False
                        )
                    ]
                    rows.append(f"{'':<14}ours / rev per repetition, {fig}: {per}")
        srv = res.get("server")
        if srv and "rss_mb" in srv:
            rows.append(
                f"{'':<14}{'our server settled RSS':<30}{srv['rss_mb']:>9.1f} MB"
                f"{'':>12}{'':>8}  (peak {srv['peak_rss_mb']:.1f} MB; goal < 100 MB)"
            )
        elif srv:
            rows.append(f"{'':<14}our server: {srv.get('error')}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 repetition")
    ap.add_argument("--reps", type=int, help="repetitions (default 3, --quick 1)")
    ap.add_argument(
        "--corpus",
        action="append",
        metavar="NAME=PATH",
        help="corpus to measure (repeatable; default: sdist and checkout-docs)",
    )
    ap.add_argument("--no-server", action="store_true", help="skip our server's RSS")
    ap.add_argument(
        "--build-only",
        action="store_true",
        help="only the builds (no fresh-query processes, no server)",
    )
    ap.add_argument(
        "--rev",
        help="also build with the package as of this git revision (same rotation)",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    a = ap.parse_args(argv)
    reps = a.reps or (1 if a.quick else 3)
    corpora = (
        {k: Path(v).expanduser() for k, v in (c.split("=", 1) for c in a.corpus)}
        if a.corpus
        else CORPORA
    )
    ensure_ref_venv()
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "reps": reps,
        "git": git_state(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_start": os.getloadavg(),
        },
        "reference": f"pycsamt {REF_VERSION} (python -m pycsamt.assistant.rag)",
        "corpora": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        rev = None
        if a.rev:
            rev = (a.rev, export_rev(a.rev, Path(tmp) / "rev"))
            results["rev"] = a.rev
        for i, (name, src) in enumerate(corpora.items()):
            server = not (a.no_server or a.build_only) and i == 0
            results["corpora"][name] = bench_corpus(
                name, src, Path(tmp), reps, server, query=not a.build_only, rev=rev
            )
    results["machine"]["loadavg_end"] = os.getloadavg()
    print()
    g = results["git"]
    print(f"commit {g['commit']}, {g['server_dirty_files']} uncommitted server file(s)")
    la, lb = results["machine"]["loadavg_start"], results["machine"]["loadavg_end"]
    print(f"load average (1/5/15 min) at start {la}, at end {lb}")
    if os.environ.get("PYTHONPATH"):
        print(f"ours imported from PYTHONPATH={os.environ['PYTHONPATH']}")
    print(table(results))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(results, indent=1))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
