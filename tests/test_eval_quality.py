"""Retrieval quality on the real suites: a regression fails CI (issue 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pycsamt_lsp.commands.catalog import run_command
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

REPO = Path(__file__).resolve().parents[1]
# The project's own suites (tuning and frozen test splits, issue 14) are not
# held to the bundled suites' 1.0.
PROJECT_SUITES = {p.name for p in (REPO / "suites").rglob("*.jsonl")}


@pytest.fixture(scope="module")
def report(real_corpus, tmp_path_factory):
    ws = Workspace(
        real_corpus, load_profile(), index_dir=tmp_path_factory.mktemp("idx")
    )
    ws.open()
    return run_command("pycsamt.eval", ws, {})


@pytest.mark.corpus
def test_bundled_suites_are_perfect(report):
    bundled = {n: r for n, r in report["suites"].items() if n not in PROJECT_SUITES}
    assert len(bundled) >= 5
    for name, suite in bundled.items():
        m = suite["metrics"]
        # mrr_at_k too: a stage that moves the answer to second place on the
        # package's own questions is a regression (field_head without its
        # plural fold did, on loading.jsonl: docs/ranking.md)
        for key in ("symbol_recall", "mrr_at_k", "workflow_in_topk", "no_test_in_topk"):
            if m.get(key) is not None:
                assert m[key] == 1.0, (name, key, m)
        assert m["hallucination_violations"] == 0, (name, m)


@pytest.mark.corpus
def test_paraphrase_suite_finds_the_workflow(report):
    m = report["suites"]["paraphrase.jsonl"]["metrics"]
    # 0.855 on the sdist once the recipes stopped quoting this suite and the
    # expansions tuned on it were removed (issue 14); the old 0.9 floor was
    # measured on leaked content. The suite is a tuning split now.
    # 0.823 with the ranking stages of search/stages.py, which put the symbol
    # before prose (seed 0.855, the package's own assistant 0.742); stage
    # workflow_keep holds it up (0.790 without it, tests/test_ranking_stages.py).
    assert m["workflow_in_topk"] >= 0.80, m


@pytest.mark.corpus
def test_report_is_reproducible(report):
    rep = report["reproducibility"]
    for key in ("tool_version", "python", "manifest", "suites", "counts_by_kind"):
        assert rep.get(key), key
    assert rep["manifest"]["n_chunks"] > 3000
