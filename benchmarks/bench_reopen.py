"""The first start after an editing session (issue 18: warm start).

A server that saved files persists a new index (a new build id) when the
saves settle. What the next start pays depends on what that persist left
beside the index: the ranking arrays (``names.npz``, ``ranks.npz``) are
keyed by build id, so without them the first reader derives and saves them
on its way to the first answer. Measured here as a user meets it, in fresh
processes on a copy of the corpus:

1. ``pycsamt-lsp build`` (the CLI, whole process);
2. an editing session in one long-lived workspace: open, a function
   appended to ``pycsamt/emtools/ss.py``, refresh, persist;
3. a fresh process: open (no persist) + one query, then a second one the
   same way; CPU and wall of each (after the imports).

``--variant NAME:PYTHONPATH`` (repeatable) runs the same steps with another
checkout's ``server/`` folder (the code before a change); variants
alternate ``--rounds`` times. Medians are printed; nothing is asserted.

Usage::

    .venv/bin/python benchmarks/bench_reopen.py [--root DIR] [--rounds 3]
        [--variant base:/path/to/old/server] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
EDITED = "pycsamt/emtools/ss.py"

#: the child's body: ``edit`` runs step 2, ``open`` one process of step 3
_CHILD = r"""
import json, sys, time
from pathlib import Path
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace
root, mode, edited = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
idx = root / ".pycsamt_rag"
if mode == "edit":
    ws = Workspace(root, load_profile(), index_dir=idx, long_lived=True)
    ws.open()
    p = root / edited
    p.write_text(p.read_text() + "\n\ndef reopen_probe(x):\n    return x\n")
    ws.refresh([p])
    ws.persist()
else:
    c0, w0 = time.process_time(), time.perf_counter()
    ws = Workspace(root, load_profile(), index_dir=idx)
    ws.open(persist=False)
    ws.query("static shift correction", k=10)
    print(json.dumps({"cpu_ms": 1000 * (time.process_time() - c0),
                      "wall_ms": 1000 * (time.perf_counter() - w0)}))
"""


def _run(pythonpath: str | None, *args: str) -> str:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [sys.executable, *args], env=env, check=True, capture_output=True, text=True
    )
    return out.stdout


def one_round(src: Path, pythonpath: str | None, tmp: Path) -> dict[str, float]:
    """Steps 1-3 on a fresh copy of *src*; the two opens' figures."""
    copy = tmp / "corpus"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(
        src, copy, ignore=shutil.ignore_patterns(".pycsamt_rag", "__pycache__")
    )
    cli = "from pycsamt_lsp.cli import run; import sys; sys.exit(run())"
    _run(pythonpath, "-c", cli, "build", "--root", str(copy))
    _run(pythonpath, "-c", _CHILD, str(copy), "edit", EDITED)
    got: dict[str, float] = {}
    for which in ("first", "second"):
        fig = json.loads(_run(pythonpath, "-c", _CHILD, str(copy), "open", EDITED))
        got[f"{which}_cpu_ms"] = fig["cpu_ms"]
        got[f"{which}_wall_ms"] = fig["wall_ms"]
    return got


def main(argv: list[str] | None = None) -> int:
    from pycsamt_lsp.corpus.discovery import fetch_corpus
    from pycsamt_lsp.corpus.profile import load_profile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=None, help="corpus (default: sdist)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[], help="NAME:PYTHONPATH")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    src = args.root or fetch_corpus(load_profile())
    variants: list[tuple[str, str | None]] = [("this", str(PROJECT / "server"))]
    for v in args.variant:
        name, _, path = v.partition(":")
        variants.append((name, path or None))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in variants}
    with tempfile.TemporaryDirectory(prefix="bench-reopen-") as tmpd:
        for _ in range(args.rounds):
            for name, path in variants:
                runs[name].append(one_round(Path(src), path, Path(tmpd)))
    out = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        for name, rs in runs.items()
    }
    if args.json:
        print(json.dumps({"corpus": str(src), "rounds": args.rounds, "medians": out}))
        return 0
    print(f"open + 1 query after an editing session's persist, {src}")
    print(
        f"{'variant':>10} {'first cpu':>10} {'first wall':>11} {'2nd cpu':>9} {'2nd wall':>9}  (ms)"
    )
    for name, m in out.items():
        print(
            f"{name:>10} {m['first_cpu_ms']:10.1f} {m['first_wall_ms']:11.1f}"
            f" {m['second_cpu_ms']:9.1f} {m['second_wall_ms']:9.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
