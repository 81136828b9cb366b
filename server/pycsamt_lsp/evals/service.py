"""``pycsamt.eval`` over a workspace: the suites, the retrieval, the record.

The harness modules are engine-independent (they take callables); this is
the one place that binds them to a :class:`~pycsamt_lsp.workspace.facade.Workspace`:
which suites run by default, how a query is retrieved (with one ranking
component switched off for the ablation) and what the reproducibility
record says about the index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pycsamt_lsp import __version__
from pycsamt_lsp.errors import ArgumentError
from pycsamt_lsp.evals.reproducibility import reproducibility
from pycsamt_lsp.evals.routing_metrics import add_workspace_routing
from pycsamt_lsp.evals.run import ablation, evaluate_suites
from pycsamt_lsp.evals.suites import default_suite_paths
from pycsamt_lsp.search.stages import STAGES
from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["PROJECT_ROOT", "run_eval", "suite_paths"]

#: This project's checkout (its ``suites/`` and ``.git``), three levels up.
PROJECT_ROOT = Path(__file__).resolve().parents[3]

Retrieve = Callable[[str, int], list[dict[str, Any]]]


def suite_paths(ws: Workspace, suite_dir: str | None) -> list[Path]:
    """The suites of one run: *suite_dir*'s ``*.jsonl``, or the default set."""
    if suite_dir:
        d = Path(suite_dir).expanduser()
        if not d.is_dir():
            raise ArgumentError(f"suite folder {d} does not exist")
        # regular files only: a FIFO named x.jsonl would block the read (issue 19)
        paths = sorted(p for p in d.glob("*.jsonl") if p.is_file())
    else:
        paths = default_suite_paths(ws.root, PROJECT_ROOT, package=ws.profile.package)
    if not paths:
        raise ArgumentError("no JSONL suites found (pass suiteDir)")
    return paths


def _retriever(
    ws: Workspace, disabled: str | None, base: tuple[str, ...] = ()
) -> Retrieve:
    # "seed": every ranking stage off, the seed's composition alone; "a,b":
    # components a and b off together; "+name": a stage that is off by
    # default switched on (search/stages.py OFF_BY_DEFAULT); *base*: the
    # eval's own ``disable``, under every configuration
    if disabled == "seed":
        disable: tuple[str, ...] = (*base, *STAGES)
    else:
        disable = (*base, *(disabled.split(",") if disabled else ()))

    def retrieve(query: str, k: int) -> list[dict[str, Any]]:
        res = ws.query(query, k, disable=disable, snippets=False)
        out = []
        for r in res["results"]:
            chunk = ws.chunk(r["id"])
            out.append({**r, "text": chunk.text if chunk else ""})
        return out

    return retrieve


def run_eval(
    ws: Workspace,
    *,
    suite_dir: str | None = None,
    k: int = 10,
    ablate: bool = False,
    disable: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Retrieval metrics on the JSONL suites, with the reproducibility record.

    *disable*: ranking components off (``+name`` on) in every run, checked
    before any suite runs: a retrieval that raises only counts as an error
    of its record, so a misspelt stage would score every record 0."""
    from pycsamt_lsp.search.retrieval import check_disable

    check_disable(disable)
    paths = suite_paths(ws, suite_dir)
    infer = ws.profile.query_workflow
    if ablate:
        report = ablation(
            lambda disabled: _retriever(ws, disabled, disable),
            paths,
            infer,
            k=k,
            is_test_path=ws.profile.is_test_path,
        )
    else:
        report = evaluate_suites(
            paths,
            _retriever(ws, None, disable),
            infer,
            k=k,
            is_test_path=ws.profile.is_test_path,
        )
        add_workspace_routing(report, ws, paths)  # intent / workflow / line (issue 15)
    if disable:
        report["disable"] = list(disable)
    stats = ws.stats()
    report["reproducibility"] = reproducibility(
        tool_version=__version__,
        project_root=PROJECT_ROOT,
        build_command="pycsamt-lsp build",
        manifest=ws.manifest,
        counts_by_kind=stats.get("by_kind"),
        counts_by_workflow=stats.get("by_workflow"),
        dense=False,
        suite_paths=paths,
        corpus_root=ws.root,
        profile=ws.profile.name,
    )
    return report
