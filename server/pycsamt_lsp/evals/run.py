"""Running suites: one evaluation, per-suite and overall, and the ablation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pycsamt_lsp.corpus.testfiles import is_test_path as default_is_test_path
from pycsamt_lsp.evals.metrics import (
    METRICS,
    InferWorkflow,
    Retrieve,
    aggregate,
    score_record,
)
from pycsamt_lsp.evals.suites import load_suites
from pycsamt_lsp.search.retrieval import COMPONENTS
from pycsamt_lsp.search.stages import OFF_BY_DEFAULT, STAGES

__all__ = ["ABLATION_COMPONENTS", "ablation", "evaluate", "evaluate_suites"]

#: Components the retrieval engine can switch off one at a time (the seed's,
#: then the ranking stages of search/stages.py that are on by default),
#: ``+name`` for each stage that is off by default (that stage switched on),
#: and ``seed``: every stage off at once, i.e. the seed's composition alone
#: (DESIGN 5).
ABLATION_COMPONENTS: tuple[str, ...] = (
    *(x for x in COMPONENTS if x not in OFF_BY_DEFAULT),
    *(f"+{x}" for x in STAGES if x in OFF_BY_DEFAULT),
    "seed",
)


def evaluate(
    records: Sequence[Mapping[str, Any]],
    retrieve: Retrieve,
    infer_workflow: InferWorkflow | None,
    *,
    k: int = 10,
    is_test_path: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Score *records* against *retrieve* and *infer_workflow* at *k*.

    Returns ``{"kind": "eval", "k", "n_records", "metrics", "n",
    "violations", "test_pollution", "errors", "timing", "records"}``:
    ``metrics[name]`` is a float, or ``None`` when its ``n`` is 0 (the
    violation count is an int); ``records`` holds the per-record detail
    (query, expected / inferred workflow, missing symbols, retrieved
    workflows, top-5 retrieved symbols, test hits, guard hits). A retrieve
    call that raises is recorded as an error with no hits. *infer_workflow*
    may be ``None`` (workflow accuracy then has ``n = 0``).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    is_test = is_test_path or default_is_test_path
    rows = [score_record(r, retrieve, infer_workflow, k, is_test) for r in records]
    return aggregate(rows, k)


def _as_suites(
    suites: Mapping[str, Sequence[Mapping[str, Any]]]
    | Sequence[str | Path]
    | Sequence[Mapping[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Normalise the accepted suite inputs to ``{name: records}``."""
    if isinstance(suites, Mapping):
        return {str(n): [dict(r) for r in recs] for n, recs in suites.items()}
    items = list(suites)
    if items and all(isinstance(x, (str, Path)) for x in items):
        return load_suites(items)  # type: ignore[arg-type]
    return {"records": [dict(r) for r in items]}  # type: ignore[arg-type]


def evaluate_suites(
    suites: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[str | Path],
    retrieve: Retrieve,
    infer_workflow: InferWorkflow | None,
    *,
    k: int = 10,
    is_test_path: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Evaluate each suite separately and all of them together.

    *suites* is a list of suite paths or a mapping ``name -> records``. Each
    query is retrieved once. Returns ``{"kind": "eval_suites", "k",
    "suites": {name: report without records}, "overall": report}``; the
    per-record rows live in ``overall["records"]``, tagged with ``suite``.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    is_test = is_test_path or default_is_test_path
    named = _as_suites(suites)
    per: dict[str, Any] = {}
    every: list[dict[str, Any]] = []
    for name, recs in named.items():
        rows = [
            score_record({**r, "_suite": name}, retrieve, infer_workflow, k, is_test)
            for r in recs
        ]
        rep = aggregate(rows, k)
        rep.pop("records")
        per[name] = rep
        every += rows
    return {
        "kind": "eval_suites",
        "k": k,
        "suites": per,
        "overall": aggregate(every, k),
    }


# -- ablation -----------------------------------------------------------------


def ablation(
    make_retrieve: Callable[[str | None], Retrieve],
    suites: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[str | Path],
    infer_workflow: InferWorkflow | None,
    *,
    k: int = 10,
    is_test_path: Callable[[str], bool] | None = None,
    components: Sequence[str] = ABLATION_COMPONENTS,
) -> dict[str, Any]:
    """Run the suites with the full engine and with each component off.

    ``make_retrieve(None)`` is the baseline; ``make_retrieve(name)`` returns a
    retrieve function with that one component switched off. Returns
    ``{"kind": "ablation", "k", "suites": [names], "rows": [...]}``; one row
    per configuration: ``{"component": "baseline" | name, "disabled":
    None | name, "metrics": overall metrics, "n": counts, "delta": metric -
    baseline metric, "by_suite": {suite: metrics}}``.
    """
    named = _as_suites(suites)
    rows: list[dict[str, Any]] = []
    base_metrics: dict[str, Any] | None = None
    for disabled in (None, *components):
        retrieve = make_retrieve(disabled)
        rep = evaluate_suites(
            named, retrieve, infer_workflow, k=k, is_test_path=is_test_path
        )
        metrics = rep["overall"]["metrics"]
        if base_metrics is None:
            base_metrics = metrics
        delta = {
            m: (metrics[m] - base_metrics[m])
            if metrics.get(m) is not None and base_metrics.get(m) is not None
            else None
            for m in METRICS
        }
        rows.append(
            {
                "component": disabled or "baseline",
                "disabled": disabled,
                "metrics": metrics,
                "n": rep["overall"]["n"],
                "delta": delta,
                "by_suite": {n: r["metrics"] for n, r in rep["suites"].items()},
            }
        )
    return {"kind": "ablation", "k": k, "suites": list(named), "rows": rows}
