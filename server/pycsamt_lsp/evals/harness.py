"""Retrieval evals: JSONL suites, metrics, reproducibility, ablation.

Engine-independent: everything here works on two callables supplied by the
caller, so the CLI (``pycsamt-lsp eval``), the LSP command ``pycsamt.eval``
and the tests share one implementation.

* ``retrieve(query: str, k: int) -> list[hit]``: ranked hits, each a mapping
  (or an object with attributes) carrying at least ``symbol``, ``workflow``,
  ``source_path``, ``text`` and ``kind``.
* ``infer_workflow(query: str) -> str | None``: the engine's workflow
  classifier.

Suite records (one JSON object per line, the format of pyCSAMT's bundled
``pycsamt/assistant/evals/suites/*.jsonl``; ``#`` comment lines and blank
lines are skipped)::

    {"query": "...",                          # required
     "expected_workflow": "static_shift",      # classifier target
     "expected_retrieval_workflow": "qc",      # retrieval target (optional)
     "expected_symbols": ["pycsamt.a.B"],      # must appear in the top k
     "must_not_contain": ["from x import y"],  # hallucination guard
     "expected_intent": "...", "expected_line": "..."}   # carried, not scored

Metrics at ``k`` (each with its own ``n``; a record without the field a
metric needs, or with a null / empty value, is left out of that metric's
denominator):

``symbol_recall``
    Mean over records with ``expected_symbols`` of
    ``|expected & retrieved| / |expected|``. Matching is **exact** on the
    fully qualified symbol, as pyCSAMT's own harness does
    (``pycsamt/assistant/evals/harness.py``): a retrieved method
    ``pkg.mod.Class.method`` does *not* count for an expected class
    ``pkg.mod.Class``, and a re-export path does not count for the defining
    path.
``workflow_accuracy``
    ``infer_workflow(subject) == expected_workflow`` where *subject* is the
    query with code-request phrasing ("write the code for", "give me a
    script to", ...) removed; when the stripped query yields no workflow
    the original query is classified instead (so a genuine code-generation
    request is still recognised).
``workflow_in_topk``
    ``expected_retrieval_workflow`` (or else ``expected_workflow``) is among
    the workflows of the retrieved hits.
``no_test_in_topk``
    Fraction of records whose hits contain no unit-test file.
``nonempty_rate``
    Fraction of records with at least one hit.
``hallucination_violations``
    Number of records (with ``must_not_contain``) where one of those strings
    occurs inside the text of a retrieved hit.
``test_pollution``
    Fraction of all retrieved hits that are unit-test files.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pycsamt_lsp.errors import SuiteError

__all__ = [
    "ABLATION_COMPONENTS",
    "CODE_REQUEST_PHRASES",
    "METRICS",
    "SuiteError",
    "ablation",
    "default_is_test_path",
    "default_suite_paths",
    "evaluate",
    "evaluate_suites",
    "format_report",
    "git_commit",
    "load_suite",
    "load_suites",
    "reproducibility",
    "strip_code_request",
    "subject_workflow",
]

Hit = Any
Retrieve = Callable[[str, int], Sequence[Hit]]
InferWorkflow = Callable[[str], "str | None"]

#: Components the retrieval engine can switch off one at a time.
ABLATION_COMPONENTS: tuple[str, ...] = (
    "expansion",
    "workflow_boost",
    "priority",
    "recipe_boost",
    "symbol_boost",
)

#: Metric names, in report order.
METRICS: tuple[str, ...] = (
    "symbol_recall",
    "workflow_accuracy",
    "workflow_in_topk",
    "no_test_in_topk",
    "nonempty_rate",
    "hallucination_violations",
    "test_pollution",
)

#: Code-request phrasing removed before the workflow is inferred (the seed's
#: list plus common variants). Matched case-insensitively on word boundaries,
#: longest first.
CODE_REQUEST_PHRASES: tuple[str, ...] = (
    "write the code for",
    "write the code to",
    "write the code that",
    "write code for",
    "write code to",
    "write code that",
    "write me code for",
    "write me code to",
    "write me a script to",
    "write me a script for",
    "write me a script that",
    "write python code for",
    "write python code to",
    "write python code",
    "write a python script to",
    "write a python script for",
    "write a python script",
    "write a script to",
    "write a script for",
    "write a script that",
    "write a script",
    "write code",
    "give me a script to",
    "give me a script for",
    "give me a script that",
    "give me a script",
    "give me the code for",
    "give me the code to",
    "give me code for",
    "give me code to",
    "give me code that",
    "give me code",
    "show me code that",
    "show me code for",
    "show me code to",
    "show me the code for",
    "show me the code to",
    "show me the code",
    "show me code",
    "generate code for",
    "generate a script for",
    "generate a script to",
    "generate a script",
    "generate script",
    "generate code",
    "create a notebook for",
    "create notebook",
    "notebook for",
    "python script for",
    "python script to",
    "python script",
    "python code for",
    "script for",
    "script that",
    "script to",
    "code for",
    "code that",
    "code to",
)

_CODE_RE = re.compile(
    r"\b(?:"
    + "|".join(
        r"\s+".join(map(re.escape, p.split()))
        for p in sorted(CODE_REQUEST_PHRASES, key=len, reverse=True)
    )
    + r")\b",
    re.IGNORECASE,
)

_KNOWN_LIST_FIELDS = ("expected_symbols", "must_not_contain")
_KNOWN_STR_FIELDS = (
    "expected_workflow",
    "expected_retrieval_workflow",
    "expected_intent",
    "expected_line",
)


# ── suites ──────────────────────────────────────────────────────────────────


def load_suite(path: str | Path) -> list[dict[str, Any]]:
    """Load one JSONL suite.

    Blank lines and lines whose first non-blank character is ``#`` are
    skipped. Every other line must be a JSON object with a non-empty string
    ``query``; list fields (``expected_symbols``, ``must_not_contain``) must
    be lists of strings and the expectation fields strings or null.
    Anything else raises :class:`SuiteError` naming the file and line.
    """
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"{p}: cannot read suite: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{p}: suite is not UTF-8: {exc}") from exc
    out: list[dict[str, Any]] = []
    for lineno, line in enumerate(raw.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        where = f"{p}:{lineno}"
        try:
            rec = json.loads(s)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{where}: malformed JSON: {exc.msg}") from exc
        _check_record(rec, where)
        out.append(rec)
    return out


def _check_record(rec: Any, where: str) -> None:
    if not isinstance(rec, dict):
        raise SuiteError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    q = rec.get("query")
    if not isinstance(q, str) or not q.strip():
        raise SuiteError(f"{where}: record needs a non-empty string 'query'")
    for name in _KNOWN_LIST_FIELDS:
        v = rec.get(name)
        if v is None:
            continue
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise SuiteError(f"{where}: {name!r} must be a list of strings")
    for name in _KNOWN_STR_FIELDS:
        v = rec.get(name)
        if v is not None and not isinstance(v, str):
            raise SuiteError(f"{where}: {name!r} must be a string or null")


def load_suites(paths: Iterable[str | Path]) -> dict[str, list[dict[str, Any]]]:
    """Load several suites, keyed by a display name (the file name, made
    unique with its parent folder when two files share a name)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for p in map(Path, paths):
        name = p.name
        if name in out:
            name = f"{p.parent.name}/{p.name}"
        out[name] = load_suite(p)
    return out


def default_suite_paths(
    corpus_root: str | Path | None,
    project_root: str | Path | None,
    *,
    package: str = "pycsamt",
) -> list[Path]:
    """The suites to run by default.

    The corpus's bundled ``<package>/assistant/evals/suites/*.jsonl`` when
    present, then this project's ``suites/*.jsonl``, ``suites/tuning/*.jsonl``,
    ``suites/test/*.jsonl`` and ``tests/suites/*.jsonl``
    (each group sorted by name, duplicates removed).
    """
    dirs: list[Path] = []
    if corpus_root is not None:
        dirs.append(Path(corpus_root) / package / "assistant" / "evals" / "suites")
    if project_root is not None:
        suites = Path(project_root) / "suites"
        # issue 14: the project's own suites are split into tuning/ and test/
        dirs += [suites, suites / "tuning", suites / "test"]
        dirs.append(Path(project_root) / "tests" / "suites")
    seen: set[Path] = set()
    out: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.jsonl")):
            key = f.resolve()
            if f.is_file() and key not in seen:
                seen.add(key)
                out.append(f)
    return out


# ── helpers ─────────────────────────────────────────────────────────────────


def strip_code_request(query: str) -> str:
    """Remove code-request phrasing ("write the code for", "give me a script
    to", "show me code that", ...) so the *subject* of the request remains.
    Case of the remaining text is kept; whitespace is collapsed."""
    return " ".join(_CODE_RE.sub(" ", query).split())


def subject_workflow(query: str, infer_workflow: InferWorkflow) -> str | None:
    """The workflow of the query's subject.

    Classifies the query with code-request phrasing stripped; falls back to
    the original query when stripping changed nothing, left nothing, or the
    stripped query has no workflow (or only ``code_gen``).
    """
    stripped = strip_code_request(query)
    if stripped and stripped != query.strip():
        wf = infer_workflow(stripped)
        if wf and wf != "code_gen":
            return wf
    return infer_workflow(query)


def default_is_test_path(path: str | None) -> bool:
    """Unit-test file: under a ``tests`` folder, ``test_*.py``, ``*_test.py``
    or ``conftest.py`` (the seed's rule, plus ``*_test.py``)."""
    if not path:
        return False
    p = PurePosixPath(str(path).replace("\\", "/"))
    if "tests" in p.parts[:-1]:
        return True
    name = p.name
    return (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


def _field(hit: Hit, name: str) -> Any:
    if isinstance(hit, Mapping):
        return hit.get(name)
    return getattr(hit, name, None)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


# ── evaluate ────────────────────────────────────────────────────────────────


def _score_record(
    rec: Mapping[str, Any],
    retrieve: Retrieve,
    infer_workflow: InferWorkflow | None,
    k: int,
    is_test: Callable[[str], bool],
) -> dict[str, Any]:
    """Retrieve for one record and score it (one per-record detail row)."""
    q = str(rec["query"])
    t0 = time.perf_counter()
    error = None
    try:
        hits = list(retrieve(q, k) or [])[:k]
    except Exception as exc:  # noqa: BLE001 - an eval reports, never dies
        hits = []
        error = f"{type(exc).__name__}: {exc}"
    latency = (time.perf_counter() - t0) * 1000.0

    symbols = [s for s in (_field(h, "symbol") for h in hits) if s]
    workflows = [w for w in (_field(h, "workflow") for h in hits) if w]
    paths = [str(_field(h, "source_path") or "") for h in hits]
    test_paths = [p for p in paths if is_test(p)]

    # symbol recall: exact fully qualified symbols, as the seed harness
    exp_syms = list(dict.fromkeys(rec.get("expected_symbols") or []))
    recall = None
    missing: list[str] = []
    if exp_syms:
        got = set(symbols)
        missing = [s for s in exp_syms if s not in got]
        recall = (len(exp_syms) - len(missing)) / len(exp_syms)

    # workflow accuracy: the classifier on the subject of the request
    exp_wf = rec.get("expected_workflow")
    inferred = None
    wf_correct = None
    if infer_workflow is not None:
        inferred = subject_workflow(q, infer_workflow)
        if exp_wf:
            wf_correct = inferred == exp_wf

    # workflow in top-k: the retrieval target
    target = rec.get("expected_retrieval_workflow") or exp_wf
    in_topk = (target in set(workflows)) if target else None

    # hallucination guard
    guard = rec.get("must_not_contain") or []
    found: list[str] = []
    if guard:
        blob = "\n".join(str(_field(h, "text") or "") for h in hits)
        found = [s for s in guard if s in blob]

    row: dict[str, Any] = {
        "query": q,
        "expected_workflow": exp_wf,
        "expected_retrieval_workflow": rec.get("expected_retrieval_workflow"),
        "inferred_workflow": inferred,
        "workflow_correct": wf_correct,
        "workflow_in_topk": in_topk,
        "symbol_recall": recall,
        "missing_symbols": missing,
        "retrieved_workflows": sorted(set(workflows)),
        "retrieved_symbols_top5": symbols[:5],
        "n_hits": len(hits),
        "test_hits": test_paths,
        "guarded": bool(guard),
        "violations": found,
        "latency_ms": latency,
    }
    if "_suite" in rec:
        row["suite"] = rec["_suite"]
    if error:
        row["error"] = error
    return row


def _aggregate(rows: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """Metrics, their ``n`` and the failure lists from per-record rows."""

    def frac(flags: list[bool]) -> float | None:
        return _mean([float(x) for x in flags])

    recalls = [r["symbol_recall"] for r in rows if r["symbol_recall"] is not None]
    wf_ok = [r["workflow_correct"] for r in rows if r["workflow_correct"] is not None]
    wf_topk = [r["workflow_in_topk"] for r in rows if r["workflow_in_topk"] is not None]
    n_hits = sum(r["n_hits"] for r in rows)
    n_test = sum(len(r["test_hits"]) for r in rows)
    violations = [
        {"query": r["query"], "found": r["violations"]} for r in rows if r["violations"]
    ]
    pollution = [
        {"query": r["query"], "paths": r["test_hits"]} for r in rows if r["test_hits"]
    ]
    errors = [
        {"query": r["query"], "error": r["error"]} for r in rows if r.get("error")
    ]
    metrics: dict[str, Any] = {
        "symbol_recall": _mean(recalls),
        "workflow_accuracy": frac(wf_ok),
        "workflow_in_topk": frac(wf_topk),
        "no_test_in_topk": frac([not r["test_hits"] for r in rows]),
        "nonempty_rate": frac([r["n_hits"] > 0 for r in rows]),
        "hallucination_violations": len(violations),
        "test_pollution": (n_test / n_hits) if n_hits else None,
    }
    counts = {
        "symbol_recall": len(recalls),
        "workflow_accuracy": len(wf_ok),
        "workflow_in_topk": len(wf_topk),
        "no_test_in_topk": len(rows),
        "nonempty_rate": len(rows),
        "hallucination_violations": sum(1 for r in rows if r["guarded"]),
        "test_pollution": n_hits,
    }
    lat = sorted(r["latency_ms"] for r in rows)
    timing = {
        "mean_ms": _mean(lat),
        "p95_ms": lat[max(0, math.ceil(0.95 * len(lat)) - 1)] if lat else None,
        "max_ms": lat[-1] if lat else None,
    }
    return {
        "kind": "eval",
        "k": k,
        "n_records": len(rows),
        "metrics": metrics,
        "n": counts,
        "violations": violations,
        "test_pollution": pollution,
        "errors": errors,
        "timing": timing,
        "records": list(rows),
    }


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
    rows = [_score_record(r, retrieve, infer_workflow, k, is_test) for r in records]
    return _aggregate(rows, k)


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
            _score_record({**r, "_suite": name}, retrieve, infer_workflow, k, is_test)
            for r in recs
        ]
        rep = _aggregate(rows, k)
        rep.pop("records")
        per[name] = rep
        every += rows
    return {
        "kind": "eval_suites",
        "k": k,
        "suites": per,
        "overall": _aggregate(every, k),
    }


# ── ablation ────────────────────────────────────────────────────────────────


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


# ── reproducibility ─────────────────────────────────────────────────────────


def _find_git_dir(start: Path) -> Path | None:
    for d in (start, *start.parents):
        g = d / ".git"
        if g.is_dir():
            return g
        if g.is_file():  # worktree / submodule: "gitdir: <path>"
            try:
                line = g.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if line.startswith("gitdir:"):
                p = Path(line.split(":", 1)[1].strip())
                return p if p.is_absolute() else (d / p).resolve()
            return None
    return None


def _read_ref(git_dir: Path, ref: str) -> str | None:
    roots = [git_dir]
    common = git_dir / "commondir"
    if common.is_file():
        try:
            c = Path(common.read_text(encoding="utf-8").strip())
            roots.append(c if c.is_absolute() else (git_dir / c).resolve())
        except OSError:
            pass
    for root in roots:
        f = root / ref
        if f.is_file():
            try:
                return f.read_text(encoding="utf-8").strip() or None
            except OSError:
                return None
    for root in roots:
        packed = root / "packed-refs"
        if packed.is_file():
            try:
                for line in packed.read_text(encoding="utf-8").splitlines():
                    parts = line.strip().split(" ", 1)
                    if len(parts) == 2 and parts[1] == ref and not line.startswith("#"):
                        return parts[0]
            except OSError:
                return None
    return None


def git_commit(project_root: str | Path | None = None) -> str | None:
    """The commit checked out at *project_root* (or the folder holding this
    file), read from ``.git`` without running git; ``None`` when unknown."""
    start = Path(project_root) if project_root is not None else Path(__file__).parent
    git_dir = _find_git_dir(start.resolve())
    if git_dir is None:
        return None
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        return _read_ref(git_dir, head.split(":", 1)[1].strip())
    return head if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else None


def _sha256_file(p: Path) -> str | None:
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return None


def reproducibility(
    *,
    tool_version: str | None = None,
    project_root: str | Path | None = None,
    build_command: str | Sequence[str] | None = None,
    manifest: Mapping[str, Any] | None = None,
    counts_by_kind: Mapping[str, int] | None = None,
    counts_by_workflow: Mapping[str, int] | None = None,
    dense: bool | None = None,
    dense_model: str | None = None,
    suite_paths: Iterable[str | Path] = (),
    corpus_root: str | Path | None = None,
    profile: str | None = None,
    k: int | None = None,
) -> dict[str, Any]:
    """The reproducibility checklist of an eval run.

    Fills what it can itself (tool version, git commit of this project read
    from ``.git``, Python, OS, suite file hashes) and takes the rest from the
    caller. Manifest fields are read from *manifest* under their usual names
    (``version``/``index_version``, ``created``, ``n_chunks``,
    ``fingerprint``/``source_fingerprint``, ``embedded``, ``embed_model``,
    ``counts_by_kind``, ``counts_by_workflow``); explicit arguments win.
    """
    if tool_version is None:
        try:
            from pycsamt_lsp import __version__ as tool_version
        except ImportError:  # pragma: no cover - package always has it
            tool_version = None
    m = dict(manifest or {})

    def pick(*names: str) -> Any:
        for n in names:
            if m.get(n) is not None:
                return m[n]
        return None

    if isinstance(build_command, (list, tuple)):
        build_command = " ".join(map(str, build_command))
    embedded = pick("embedded")
    suites = []
    for p in map(Path, suite_paths):
        n = None
        try:
            n = len(load_suite(p))
        except SuiteError:
            n = None
        suites.append({"path": str(p), "sha256": _sha256_file(p), "n_records": n})
    return {
        "tool_version": tool_version,
        "git_commit": git_commit(project_root),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "platform": sys.platform,
        "build_command": build_command,
        "manifest": {
            "version": pick("version", "index_version"),
            "created": pick("created"),
            "n_chunks": pick("n_chunks"),
            "fingerprint": pick("fingerprint", "source_fingerprint"),
            "embedded": embedded,
        },
        "counts_by_kind": dict(counts_by_kind or pick("counts_by_kind") or {}),
        "counts_by_workflow": dict(
            counts_by_workflow or pick("counts_by_workflow") or {}
        ),
        "dense": {
            "enabled": bool(dense if dense is not None else embedded),
            "model": dense_model or pick("embed_model", "embedding_model"),
        },
        "corpus_root": str(corpus_root)
        if corpus_root is not None
        else pick("corpus_root"),
        "profile": profile or pick("profile"),
        "k": k,
        "suites": suites,
        "run_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# ── text report ─────────────────────────────────────────────────────────────

_SHORT = {
    "symbol_recall": "sym_recall",
    "workflow_accuracy": "wf_acc",
    "workflow_in_topk": "wf_topk",
    "no_test_in_topk": "no_test",
    "nonempty_rate": "nonempty",
    "hallucination_violations": "violations",
    "test_pollution": "pollution",
}


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
        lines.append("[delta] = metric with the component off minus baseline")
    elif kind == "eval_suites":
        lines.append(f"Retrieval eval at k={k}")
        rows = [_metric_row(n, r) for n, r in report.get("suites", {}).items()]
        rows.append(_metric_row("ALL", report["overall"]))
        lines += _table(headers, rows)
        lines.append("cells: value (n records scored); pollution n = hits")
        lines += _run_notes(report["overall"])
        lines += _failures(report["overall"], max_failures)
    else:
        lines.append(f"Retrieval eval at k={k}")
        lines += _table(headers, [_metric_row("records", report)])
        lines += _run_notes(report)
        lines += _failures(report, max_failures)
    repro = report.get("reproducibility")
    if repro:
        lines += ["", *_repro_lines(repro)]
    return "\n".join(lines)
