"""Routing accuracy of the eval: intent, workflow and survey line (issue 15).

A suite record may carry ``expected_intent``, ``expected_workflow`` and
``expected_line``. Each is scored over the records where it is given and
not null (the definition the package's own eval harness uses), per suite
and overall, beside the retrieval metrics. The decision is whatever
*decide* returns for the query (the offline router with the workspace's
survey-line registry in ``pycsamt.eval``); a record whose decision raises
counts as a miss with the error noted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "ROUTING_FIELDS",
    "add_routing",
    "add_workspace_routing",
    "format_routing",
    "routing_metrics",
]

#: (metric, record field, decision field)
ROUTING_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("intent_accuracy", "expected_intent", "intent"),
    ("workflow_accuracy", "expected_workflow", "workflow"),
    ("line_accuracy", "expected_line", "line"),
)

Decide = Callable[[str], Mapping[str, Any]]


def _decision(decide: Decide, query: str) -> tuple[Mapping[str, Any], str | None]:
    try:
        d = decide(query)
    except Exception as exc:  # noqa: BLE001 - one bad record is a miss, not a crash
        return {}, f"{type(exc).__name__}: {exc}"
    if hasattr(d, "to_dict"):
        d = d.to_dict()
    return d, None


def routing_metrics(
    records: Sequence[Mapping[str, Any]],
    decide: Decide,
    *,
    cache: dict[str, tuple[Mapping[str, Any], str | None]] | None = None,
) -> dict[str, Any]:
    """``{"metrics": {name: acc | None}, "n": {name: count}, "misses": [...]}``."""
    right = {m: 0 for m, _, _ in ROUTING_FIELDS}
    n = {m: 0 for m, _, _ in ROUTING_FIELDS}
    misses: list[dict[str, Any]] = []
    for rec in records:
        q = str(rec.get("query") or "")
        fields = [(m, f, k) for m, f, k in ROUTING_FIELDS if rec.get(f) is not None]
        if not fields or not q:
            continue
        if cache is not None and q in cache:
            d, err = cache[q]
        else:
            d, err = _decision(decide, q)
            if cache is not None:
                cache[q] = (d, err)
        for metric, field, key in fields:
            n[metric] += 1
            if d.get(key) == rec[field]:
                right[metric] += 1
            else:
                miss = {
                    "query": q,
                    "metric": metric,
                    "expected": rec[field],
                    "got": d.get(key),
                }
                if rec.get("_suite"):
                    miss["suite"] = rec["_suite"]
                if err:
                    miss["error"] = err
                misses.append(miss)
    return {
        "metrics": {m: (right[m] / n[m] if n[m] else None) for m in n},
        "n": n,
        "misses": misses,
    }


def add_routing(
    report: dict[str, Any],
    suites: Mapping[str, Sequence[Mapping[str, Any]]],
    decide: Decide,
    *,
    registry_lines: Sequence[str] = (),
) -> dict[str, Any]:
    """Put ``routing`` beside the retrieval metrics of an ``eval_suites`` report.

    Each suite's report gets its own ``routing``; ``overall`` gets the
    figures over every record (each query decided once).
    """
    cache: dict[str, tuple[Mapping[str, Any], str | None]] = {}
    every: list[dict[str, Any]] = []
    for name, recs in suites.items():
        tagged = [{**r, "_suite": name} for r in recs]
        every += tagged
        rep = routing_metrics(tagged, decide, cache=cache)
        if name in report.get("suites", {}):
            report["suites"][name]["routing"] = {
                "metrics": rep["metrics"],
                "n": rep["n"],
            }
    overall = routing_metrics(every, decide, cache=cache)
    overall["registry_lines"] = list(registry_lines)
    report.setdefault("overall", {})["routing"] = overall
    return report


def format_routing(report: Mapping[str, Any]) -> list[str]:
    """Text lines for the eval's readable report (empty when nothing was scored)."""
    overall = (report.get("overall") or {}).get("routing")
    if not overall or not any(overall["n"].values()):
        return []

    def cell(rep: Mapping[str, Any], m: str) -> str:
        v, k = rep["metrics"].get(m), rep["n"].get(m, 0)
        return "-" if v is None else f"{v:.3f} (n={k})"

    names = [m for m, _, _ in ROUTING_FIELDS]
    rows = [["suite", "intent", "workflow", "line"]]
    for name, srep in (report.get("suites") or {}).items():
        r = srep.get("routing")
        if r and any(r["n"].values()):
            rows.append([name, *(cell(r, m) for m in names)])
    rows.append(["overall", *(cell(overall, m) for m in names)])
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    out = ["", "routing accuracy (over records that give the field):"]
    out += [
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True))
        for r in rows
    ]
    if not overall.get("registry_lines") and overall["n"].get("line_accuracy"):
        out.append(
            "  note: no survey-line registry found (.pycsamt/projects.toml or "
            "projects/*registry*.yml), so lines cannot resolve"
        )
    for miss in overall["misses"][:20]:
        out.append(
            f"  miss [{miss.get('suite', '')}] {miss['metric']}: {miss['query']!r} "
            f"expected {miss['expected']!r}, got {miss['got']!r}"
        )
    return out


def add_workspace_routing(
    report: dict[str, Any], ws: Workspace, paths: Sequence[str | Path]
) -> dict[str, Any]:
    """:func:`add_routing` with the offline router of *ws*: its profile and the
    survey-line registry ``pycsamt.ask`` uses (editor folder / corpus root)."""
    from pycsamt_lsp.evals.suites import load_suites

    registry = ws.answers.registry(ws.root, ws.answers.settings)
    router = ws.answers.router(ws.profile)
    return add_routing(
        report,
        load_suites(paths),
        lambda q: router.route(q, registry).to_dict(),
        registry_lines=registry.names() if registry else (),
    )
