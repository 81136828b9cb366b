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

from pycsamt_lsp.errors import SuiteError
from pycsamt_lsp.evals.metrics import (
    CODE_REQUEST_PHRASES,
    METRICS,
    default_is_test_path,
    strip_code_request,
    subject_workflow,
)
from pycsamt_lsp.evals.report import format_report
from pycsamt_lsp.evals.reproducibility import git_commit, reproducibility
from pycsamt_lsp.evals.run import (
    ABLATION_COMPONENTS,
    ablation,
    evaluate,
    evaluate_suites,
)
from pycsamt_lsp.evals.suites import default_suite_paths, load_suite, load_suites

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
