"""The reference: pyCSAMT 2.6.4's own assistant, run in its own venv.

Everything here runs the reference as a *subprocess* of the reference venv's
Python; pycsamt is never imported into this process (it is data for the
project, and its import would also pollute our timings and memory).

- :func:`ensure_ref_venv` creates or locates ``~/.cache/pycsamt-lsp/ref-venv``
  (``PYCSAMT_LSP_REF_VENV`` overrides) and installs ``pycsamt==2.6.4`` when
  missing; idempotent and serialised by a lock file.
- :func:`copy_corpus` copies a corpus to a temp dir, because the reference
  writes its index into ``ROOT/.pycsamt_rag``.
- :func:`ref_build` / :func:`ref_query_cli`: the reference's CLI as a user runs
  it (``python -m pycsamt.assistant.rag --root COPY build|query``).
- :func:`ref_batch_query`: one process, ``build_retriever(root)`` once, then
  ``Retriever.search(q, k)`` for every query; ranked hits as JSON.
- :func:`ref_route`: one process, the reference's own eval harness
  (``pycsamt.assistant.evals.harness.evaluate``) on a list of records, giving
  its intent / workflow / line decision per record and its own accuracies.

Run as a script for a quick look::

    python benchmarks/reference.py ensure
    python benchmarks/reference.py build --root COPY
    python benchmarks/reference.py query --root COPY "rotate impedance tensor"
    python benchmarks/reference.py route --root COPY records.jsonl
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from measure import offline_env, run_measured

REF_VERSION = "2.6.4"
REF_VENV = Path(
    os.environ.get("PYCSAMT_LSP_REF_VENV", Path.home() / ".cache/pycsamt-lsp/ref-venv")
)
RAG_MODULE = "pycsamt.assistant.rag"

# The driver runs inside the reference venv. It only calls the reference's
# public entry points (the same ones its CLI and eval harness call) and writes
# JSON to the file named in the payload, so anything the package prints on
# stdout cannot corrupt the result.
DRIVER = r"""
import json, sys, time
t_start = time.perf_counter()
payload = json.loads(sys.stdin.read())
root = payload["root"]
k = int(payload.get("k", 10))
out = {}
from pycsamt.assistant.rag.retriever import build_retriever
t0 = time.perf_counter()
retr = build_retriever(root)
out["load_s"] = time.perf_counter() - t0
out["import_s"] = t0 - t_start
def hits(ctx):
    return [
        {"rank": i, "id": c.id, "symbol": c.symbol, "kind": c.kind,
         "workflow": c.workflow, "title": c.title, "module": c.module,
         "source_path": c.source_path}
        for i, c in enumerate(ctx.chunks, 1)
    ]
if payload["mode"] == "batch":
    results = []
    for q in payload["queries"]:
        t = time.perf_counter()
        ctx = retr.search(q, k=k)
        results.append({"query": q, "seconds": time.perf_counter() - t,
                        "hits": hits(ctx)})
    out["results"] = results
elif payload["mode"] == "route":
    from pathlib import Path
    from pycsamt.assistant.evals.harness import evaluate
    from pycsamt.assistant.tools.project_registry import ProjectRegistry
    registry = ProjectRegistry.from_default(Path(root))
    out["registry"] = str(registry.path) if registry else None
    t = time.perf_counter()
    report = evaluate(payload["records"], retriever=retr, registry=registry, k=k)
    out["route_s"] = time.perf_counter() - t
    out["metrics"] = report.metrics
    out["decisions"] = [
        {"query": r["query"], "intent": r["got_intent"],
         "workflow": r["got_workflow"], "line": r["got_line"]}
        for r in report.records
    ]
with open(payload["out"], "w", encoding="utf-8") as fh:
    json.dump(out, fh)
"""


def ref_python() -> Path:
    """The reference venv's interpreter (may not exist yet)."""
    return REF_VENV / "bin" / "python"


def installed_version(py: Path) -> str | None:
    """pycsamt's installed version in ``py``'s env, read from metadata only."""
    if not py.exists():
        return None
    proc = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m; print(m.version('pycsamt'))"],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def ensure_ref_venv(*, quiet: bool = True) -> Path:
    """Create/locate the reference venv with pycsamt==2.6.4; return its python.

    Idempotent: a venv that already has the right version is used as is. A
    lock file keeps two benchmark runs from installing at the same time.
    """
    REF_VENV.parent.mkdir(parents=True, exist_ok=True)
    lock_path = REF_VENV.parent / (REF_VENV.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        py = ref_python()
        if installed_version(py) == REF_VERSION:
            return py
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(REF_VENV)], check=True)
        cmd = [str(py), "-m", "pip", "install", f"pycsamt=={REF_VERSION}"]
        subprocess.run(cmd + (["-q"] if quiet else []), check=True)
        if installed_version(py) != REF_VERSION:
            raise RuntimeError(
                f"could not install pycsamt=={REF_VERSION} in {REF_VENV}"
            )
        return py


_IGNORE = shutil.ignore_patterns(".pycsamt_rag", ".git", "__pycache__", "*.pyc")


def copy_corpus(src: Path | str, parent: Path | str | None = None) -> Path:
    """Copy corpus ``src`` (without any index, .git or bytecode) under ``parent``.

    Returns the copy's root. Both engines write their index into the root they
    are given, so each benchmark works on copies and never on the corpus.
    """
    src = Path(src).expanduser().resolve()
    parent = (
        Path(parent)
        if parent is not None
        else Path(tempfile.mkdtemp(prefix="refcorpus-"))
    )
    dest = parent / src.name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=_IGNORE, symlinks=True)
    return dest


def drop_index(root: Path) -> None:
    """Remove the reference's persisted index under ``root`` (a fresh build)."""
    shutil.rmtree(Path(root) / ".pycsamt_rag", ignore_errors=True)


def ref_build(root: Path, *, fresh: bool = True) -> dict[str, Any]:
    """Whole-process ``python -m pycsamt.assistant.rag --root ROOT build``.

    Returns :func:`measure.run_measured`'s figures plus ``n_chunks`` (parsed from
    the CLI's "Built index: N chunks" line).
    """
    py = ensure_ref_venv()
    if fresh:
        drop_index(root)
    res = run_measured(
        [str(py), "-m", RAG_MODULE, "--root", str(root), "build"],
        cwd=tempfile.gettempdir(),
        env=offline_env(),
    )
    m = re.search(r"Built index: (\d+) chunks", res["stdout"])
    res["n_chunks"] = int(m.group(1)) if m else None
    return res


_CLI_HIT = re.compile(r"^\s*(\d+)\. \[(\S+)\s+wf=(\S+)\] (.*)\n\s+(\S.*)$", re.M)


def parse_cli_hits(text: str) -> list[dict[str, Any]]:
    """Parse the reference CLI's text ranking (it has no JSON output).

    Lines look like ``" 5. [python_symbol wf=phase_analysis] LABEL"`` followed by
    the source path; LABEL is the chunk's symbol, else its title, else its path.
    """
    return [
        {
            "rank": int(r),
            "kind": kind,
            "workflow": None if wf == "None" else wf,
            "label": label.strip(),
            "source_path": path.strip(),
        }
        for r, kind, wf, label, path in _CLI_HIT.findall(text)
    ]


def ref_query_cli(root: Path, text: str, *, k: int = 10) -> dict[str, Any]:
    """Fresh process: ``... --root ROOT query TEXT -k K`` (load + one query)."""
    py = ensure_ref_venv()
    res = run_measured(
        [str(py), "-m", RAG_MODULE, "--root", str(root), "query", text, "-k", str(k)],
        cwd=tempfile.gettempdir(),
        env=offline_env(),
    )
    res["hits"] = parse_cli_hits(res["stdout"])
    return res


def _run_driver(payload: dict[str, Any]) -> dict[str, Any]:
    py = ensure_ref_venv()
    with tempfile.TemporaryDirectory(prefix="refdrv-") as tmp:
        out_file = Path(tmp) / "out.json"
        payload = {**payload, "out": str(out_file)}
        res = run_measured(
            [str(py), "-c", DRIVER],
            cwd=tmp,
            env=offline_env(),
            stdin_text=json.dumps(payload),
        )
        if res["returncode"] != 0 or not out_file.exists():
            raise RuntimeError(f"reference driver failed:\n{res['stderr'][-3000:]}")
        out = json.loads(out_file.read_text(encoding="utf-8"))
    out["process"] = {
        k: v for k, v in res.items() if k not in ("stdout", "stderr", "cmd")
    }
    return out


def ref_batch_query(root: Path, queries: list[str], *, k: int = 10) -> dict[str, Any]:
    """Load the reference's persisted index once and rank every query.

    Returns ``{"load_s", "import_s", "results": [{"query", "seconds", "hits":
    [{rank, id, symbol, kind, workflow, title, module, source_path}]}],
    "process": {...}}``. Build first (:func:`ref_build`), or the reference
    ingests the tree in memory instead of loading its index.
    """
    return _run_driver({"mode": "batch", "root": str(root), "queries": queries, "k": k})


def ref_route(
    root: Path, records: list[dict[str, Any]], *, k: int = 10
) -> dict[str, Any]:
    """The reference harness's intent / workflow / line decision per record.

    Records need a ``query``; ``expected_*`` fields are passed through so the
    reference's own ``metrics`` (intent_accuracy, workflow_accuracy,
    line_accuracy, symbol_recall, ...) come back too, beside ``decisions``:
    ``[{"query", "intent", "workflow", "line"}]`` in record order. The line
    registry is ``ProjectRegistry.from_default(root)`` (``root/projects/*.yml``).
    """
    recs = [{k2: v for k2, v in r.items() if not k2.startswith("_")} for r in records]
    return _run_driver({"mode": "route", "root": str(root), "records": recs, "k": k})


def load_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """JSONL records, skipping blank and ``#`` comment lines."""
    out: list[dict[str, Any]] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(json.loads(line))
    return out


def main(argv: list[str] | None = None) -> int:
    """Small CLI over the functions above (prints JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("ensure", help="create/locate the venv, print its python")
    b = sub.add_parser("build", help="reference build on ROOT (a copy!)")
    b.add_argument("--root", type=Path, required=True)
    q = sub.add_parser("query", help="ranked hits for queries, one process")
    q.add_argument("--root", type=Path, required=True)
    q.add_argument("-k", type=int, default=10)
    q.add_argument("queries", nargs="+")
    r = sub.add_parser("route", help="intent/workflow/line for a JSONL of records")
    r.add_argument("--root", type=Path, required=True)
    r.add_argument("records", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "ensure":
        print(ensure_ref_venv(quiet=False))
        return 0
    if a.cmd == "build":
        res = ref_build(a.root)
        res.pop("stdout")
        print(json.dumps(res, indent=1))
        return 0 if res["returncode"] == 0 else 1
    if a.cmd == "query":
        print(json.dumps(ref_batch_query(a.root, a.queries, k=a.k), indent=1))
        return 0
    print(json.dumps(ref_route(a.root, load_jsonl(a.records)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
