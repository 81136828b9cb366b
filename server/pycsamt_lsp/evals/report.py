"""The readable text rendering of eval, per-suite and ablation reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from pycsamt_lsp.evals.metrics import METRICS
from pycsamt_lsp.evals.routing_metrics import format_routing

__all__ = ["format_report"]

#: Column headers of the metrics (read-only).
_SHORT = MappingProxyType(
    {
        "symbol_recall": "sym_recall",
        "hit_at_k": "hit@k",
        "mrr_at_k": "mrr@k",
        "ndcg_at_10": "ndcg@10",
        "workflow_accuracy": "wf_acc",
        "workflow_in_topk": "wf_topk",
        "no_test_in_topk": "no_test",
        "nonempty_rate": "nonempty",
        "hallucination_violations": "violations",
        "test_pollution": "pollution",
    }
)


def _fmt_metric(name: str, value: Any, n: int | None = None) -> str:
    if value is None:
        s = "-"
    elif name == "hallucination_violations":
        s = str(int(value))
    else:
        s = f"{float(value):.3f}"
    return s if n is None else f"{s} ({n})"


def _fmt_delta(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "hallucination_violations":
        return f"{int(value):+d}"
    return f"{float(value):+.3f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return out


def _metric_row(label: str, rep: Mapping[str, Any]) -> list[str]:
    mets, ns = rep.get("metrics", {}), rep.get("n", {})
    return [label, str(rep.get("n_records", ""))] + [
        _fmt_metric(m, mets.get(m), ns.get(m)) for m in METRICS
    ]


def _failures(rep: Mapping[str, Any], limit: int) -> list[str]:
    bad = []
    for r in rep.get("records", []):
        reasons = []
        if r.get("missing_symbols"):
            reasons.append("missing " + ", ".join(r["missing_symbols"]))
        if r.get("workflow_correct") is False:
            reasons.append(
                f"workflow {r.get('inferred_workflow')} != {r.get('expected_workflow')}"
            )
        if r.get("workflow_in_topk") is False:
            target = r.get("expected_retrieval_workflow") or r.get("expected_workflow")
            got = ",".join(r.get("retrieved_workflows") or []) or "none"
            reasons.append(f"{target} not in top-k [{got}]")
        if r.get("test_hits"):
            reasons.append(f"{len(r['test_hits'])} test hit(s)")
        if r.get("violations"):
            reasons.append("guard: " + "; ".join(r["violations"]))
        if r.get("error"):
            reasons.append("error: " + r["error"])
        if reasons:
            tag = f"[{r['suite']}] " if r.get("suite") else ""
            bad.append(f"  - {tag}{r['query']!r}: " + " | ".join(reasons))
    if not bad:
        return []
    head = [f"Records with a failure ({len(bad)}):"]
    more = [f"  ... {len(bad) - limit} more"] if len(bad) > limit else []
    return head + bad[:limit] + more


def _run_notes(rep: Mapping[str, Any]) -> list[str]:
    out = []
    if rep.get("errors"):
        out.append(f"retrieval errors: {len(rep['errors'])}")
    t = rep.get("timing") or {}
    if t.get("mean_ms") is not None:
        out.append(
            f"latency: mean {t['mean_ms']:.1f} ms, p95 {t['p95_ms']:.1f} ms,"
            f" max {t['max_ms']:.1f} ms"
        )
    return out


def _repro_lines(repro: Mapping[str, Any]) -> list[str]:
    man = repro.get("manifest") or {}
    dense = repro.get("dense") or {}
    lines = [
        "Reproducibility:",
        f"  tool {repro.get('tool_version')}  commit {repro.get('git_commit') or '-'}"
        f"  python {repro.get('python')}  os {repro.get('os')}",
        f"  build: {repro.get('build_command') or '-'}",
        f"  index v{man.get('version')}  created {man.get('created')}"
        f"  chunks {man.get('n_chunks')}  fingerprint {man.get('fingerprint')}",
        f"  dense {'on' if dense.get('enabled') else 'off'}"
        + (f" ({dense.get('model')})" if dense.get("model") else ""),
    ]
    if repro.get("counts_by_kind"):
        lines.append(
            "  by kind: "
            + ", ".join(f"{k}={v}" for k, v in sorted(repro["counts_by_kind"].items()))
        )
    if repro.get("counts_by_workflow"):
        lines.append(
            "  by workflow: "
            + ", ".join(
                f"{k}={v}" for k, v in sorted(repro["counts_by_workflow"].items())
            )
        )
    for s in repro.get("suites") or []:
        sha = (s.get("sha256") or "")[:12]
        lines.append(f"  suite {s.get('path')} ({s.get('n_records')} records, {sha})")
    return lines


def format_report(report: Mapping[str, Any], *, max_failures: int = 30) -> str:
    """A readable text rendering of an ``evaluate``, ``evaluate_suites`` or
    ``ablation`` result (with ``report["reproducibility"]`` when present).
    Metric cells read ``value (n)``; ``-`` means no record had the field."""
    kind = report.get("kind")
    k = report.get("k")
    lines: list[str] = []
    headers = ["suite", "records", *(_SHORT[m] for m in METRICS)]
    if kind == "ablation":
        lines.append(f"Ablation at k={k} over {', '.join(report.get('suites', []))}")
        rows = []
        for r in report.get("rows", []):
            cells = [r["component"]]
            for m in METRICS:
                v = _fmt_metric(m, r["metrics"].get(m))
                if r.get("disabled") is not None:
                    v += f" [{_fmt_delta(m, r['delta'].get(m))}]"
                cells.append(v)
            rows.append(cells)
        lines += _table(["component", *(_SHORT[m] for m in METRICS)], rows)
        lines.append(
            "[delta] = metric with the component off (+name: that stage on) minus baseline"
        )
    elif kind == "eval_suites":
        lines.append(f"Retrieval eval at k={k}")
        rows = [_metric_row(n, r) for n, r in report.get("suites", {}).items()]
        rows.append(_metric_row("ALL", report["overall"]))
        lines += _table(headers, rows)
        lines.append("cells: value (n records scored); pollution n = hits")
        lines += _run_notes(report["overall"])
        lines += _failures(report["overall"], max_failures)
        lines += format_routing(report)
    else:
        lines.append(f"Retrieval eval at k={k}")
        lines += _table(headers, [_metric_row("records", report)])
        lines += _run_notes(report)
        lines += _failures(report, max_failures)
    repro = report.get("reproducibility")
    if repro:
        lines += ["", *_repro_lines(repro)]
    return "\n".join(lines)
