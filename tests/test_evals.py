"""Unit tests of the eval harness (``pycsamt_lsp.evals.harness``) on hand-made data.

No real-corpus quality is asserted here; the retrieval and the workflow
classifier are fakes, so every expected number is exact.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pycsamt_lsp import __version__
from pycsamt_lsp.evals.harness import (
    ABLATION_COMPONENTS,
    METRICS,
    SuiteError,
    ablation,
    default_is_test_path,
    default_suite_paths,
    evaluate,
    evaluate_suites,
    format_report,
    git_commit,
    load_suite,
    load_suites,
    reproducibility,
    strip_code_request,
    subject_workflow,
)

PROJECT = Path(__file__).resolve().parents[1]


def hit(symbol=None, workflow=None, path="pycsamt/x.py", text="", kind="python_symbol"):
    return {
        "symbol": symbol,
        "workflow": workflow,
        "source_path": path,
        "text": text,
        "kind": kind,
    }


def fake_retrieve(table):
    """A retrieve function answering from ``{query: [hits]}`` and logging calls."""
    calls: list[tuple[str, int]] = []

    def retrieve(q, k):
        calls.append((q, k))
        return table.get(q, [])

    retrieve.calls = calls
    return retrieve


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


# ── load_suite ──────────────────────────────────────────────────────────────


def test_load_suite_skips_comments_and_blank_lines(tmp_path):
    p = write(
        tmp_path / "s.jsonl",
        "# a comment\n"
        "\n"
        '{"query": "a", "expected_workflow": "qc"}\n'
        "   # an indented comment\n"
        "   \n"
        '{"query": "b", "expected_symbols": ["pycsamt.x.Y"]}\n',
    )
    recs = load_suite(p)
    assert [r["query"] for r in recs] == ["a", "b"]
    assert recs[0]["expected_workflow"] == "qc"
    assert recs[1]["expected_symbols"] == ["pycsamt.x.Y"]


def test_load_suite_malformed_line_names_file_and_line(tmp_path):
    p = write(
        tmp_path / "bad.jsonl",
        '# header\n{"query": "ok"}\n\n{"query": "broken",\n',
    )
    with pytest.raises(SuiteError) as err:
        load_suite(p)
    msg = str(err.value)
    assert "bad.jsonl:4" in msg
    assert "malformed JSON" in msg


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('["query", "x"]', "expected a JSON object"),
        ('{"expected_workflow": "qc"}', "non-empty string 'query'"),
        ('{"query": "   "}', "non-empty string 'query'"),
        ('{"query": "x", "expected_symbols": "pycsamt.a"}', "'expected_symbols'"),
        ('{"query": "x", "must_not_contain": [1]}', "'must_not_contain'"),
        ('{"query": "x", "expected_workflow": 3}', "'expected_workflow'"),
    ],
)
def test_load_suite_rejects_bad_records(tmp_path, line, fragment):
    p = write(tmp_path / "s.jsonl", '{"query": "fine"}\n' + line + "\n")
    with pytest.raises(SuiteError, match=re.escape(fragment)) as err:
        load_suite(p)
    assert "s.jsonl:2" in str(err.value)


def test_load_suite_missing_file(tmp_path):
    with pytest.raises(SuiteError, match="cannot read suite"):
        load_suite(tmp_path / "nope.jsonl")


def test_load_suite_accepts_null_expectations(tmp_path):
    p = write(
        tmp_path / "s.jsonl",
        '{"query": "x", "expected_workflow": null, "expected_intent": "meta"}\n',
    )
    assert load_suite(p) == [
        {"query": "x", "expected_workflow": None, "expected_intent": "meta"}
    ]


def test_load_suites_names_are_unique(tmp_path):
    a = write(tmp_path / "one" / "s.jsonl", '{"query": "a"}\n')
    b = write(tmp_path / "two" / "s.jsonl", '{"query": "b"}\n')
    named = load_suites([a, b])
    assert list(named) == ["s.jsonl", "two/s.jsonl"]
    assert named["two/s.jsonl"][0]["query"] == "b"


def test_default_suite_paths(tmp_path):
    corpus = tmp_path / "corpus"
    bundled = corpus / "pycsamt" / "assistant" / "evals" / "suites"
    write(bundled / "b.jsonl", "")
    write(bundled / "a.jsonl", "")
    write(bundled / "notes.txt", "")
    project = tmp_path / "project"
    write(project / "suites" / "paraphrase.jsonl", "")
    write(project / "tests" / "suites" / "extra.jsonl", "")
    got = default_suite_paths(corpus, project)
    assert [p.name for p in got] == [
        "a.jsonl",
        "b.jsonl",
        "paraphrase.jsonl",
        "extra.jsonl",
    ]
    # either root may be absent
    assert [p.name for p in default_suite_paths(None, project)] == [
        "paraphrase.jsonl",
        "extra.jsonl",
    ]
    assert [p.name for p in default_suite_paths(corpus, None)] == ["a.jsonl", "b.jsonl"]
    assert default_suite_paths(tmp_path / "empty", tmp_path / "empty") == []
    # another package name
    other = tmp_path / "c2"
    write(other / "otherpkg" / "assistant" / "evals" / "suites" / "x.jsonl", "")
    assert [p.name for p in default_suite_paths(other, None, package="otherpkg")] == [
        "x.jsonl"
    ]


# ── code-request stripping and the subject workflow ─────────────────────────


@pytest.mark.parametrize(
    ("query", "subject"),
    [
        (
            "write the code for estimating how deep each frequency sees",
            "estimating how deep each frequency sees",
        ),
        ("Give me a script to correct the static shift", "correct the static shift"),
        ("show me code that finds the strike", "finds the strike"),
        ("generate code for dimensionality", "dimensionality"),
        (
            "write the static shift code for line L18PLT",
            "write the static shift line L18PLT",
        ),
        ("Write a Python script to run QC", "run QC"),
        ("run phase tensor analysis", "run phase tensor analysis"),
        ("barcode formatting", "barcode formatting"),  # word boundaries
        ("write code", ""),
    ],
)
def test_strip_code_request(query, subject):
    assert strip_code_request(query) == subject


def test_strip_code_request_keeps_case():
    assert strip_code_request("show me code for StaticShiftAgent") == "StaticShiftAgent"


def test_subject_workflow_uses_stripped_query_then_falls_back():
    seen: list[str] = []

    def infer(q):
        seen.append(q)
        ql = q.lower()
        if "script" in ql or "code" in ql:
            return "code_gen"
        if "strike" in ql:
            return "phase_analysis"
        return None

    # the subject wins over the code-request wording
    assert (
        subject_workflow("give me a script to get the strike", infer)
        == "phase_analysis"
    )
    assert seen == ["get the strike"]
    # nothing to strip: the query itself is classified once
    seen.clear()
    assert subject_workflow("rotate to strike", infer) == "phase_analysis"
    assert seen == ["rotate to strike"]
    # the subject has no workflow: a real code request stays code_gen
    assert subject_workflow("write a script for my colleague", infer) == "code_gen"
    assert subject_workflow("write code", infer) == "code_gen"


# ── evaluate: every metric on hand-made records ─────────────────────────────

RECORDS = [
    {  # recall 1/2; workflow right; target in top-k; a guard violation
        "query": "correct static shift",
        "expected_workflow": "static_shift",
        "expected_symbols": ["pycsamt.ss.estimate", "pycsamt.agents.SSAgent"],
        "must_not_contain": ["from pycsamt import static_shift", "never there"],
    },
    {  # recall 1; code phrasing stripped -> right; retrieval target overrides
        "query": "write the code for the strike",
        "expected_workflow": "phase_analysis",
        "expected_retrieval_workflow": "rotation",
        "expected_symbols": ["pycsamt.strike.consensus"],
    },
    {  # exact matching: a method does not count for its class -> recall 0
        "query": "what is the Sites class",
        "expected_symbols": ["pycsamt.site.Sites"],
        "expected_workflow": None,
    },
    {  # wrong workflow; target missing from top-k; a test hit; guard clean
        "query": "depth of my model",
        "expected_workflow": "sensitivity",
        "must_not_contain": ["import nothing"],
    },
    {  # no hits at all; no expectations
        "query": "what can you do?",
        "expected_intent": "meta",
    },
]

TABLE = {
    "correct static shift": [
        hit("pycsamt.ss.estimate", "static_shift", text="estimate_ss_ama(...)"),
        hit(
            "pycsamt.ss.apply",
            "static_shift",
            text="bad: from pycsamt import static_shift",
        ),
        hit(None, None, "docs/a.md", kind="doc_section"),
    ],
    "write the code for the strike": [
        hit("pycsamt.strike.consensus", "rotation"),
        hit("pycsamt.rot.rotate", "rotation"),
    ],
    "what is the Sites class": [
        hit(
            "pycsamt.site.Sites.select",
            None,
            "pycsamt/site/base.py",
            kind="python_method",
        ),
        hit("pycsamt.site.Site", None, "pycsamt/site/base.py"),
    ],
    "depth of my model": [
        hit("pycsamt.csumt.bostick", "qc"),
        hit("pycsamt.tests.test_x", "qc", "pycsamt/tests/test_x.py"),
        hit("pycsamt.conftest.fx", None, "conftest.py"),
        hit("pycsamt.a1", "qc"),
        hit("pycsamt.a2", "qc"),
        hit("pycsamt.a3", "qc"),
    ],
}

WORKFLOW_OF = {
    "correct static shift": "static_shift",
    "the strike": "phase_analysis",
    "depth of my model": "qc",
}


def infer(q):
    return WORKFLOW_OF.get(q)


def run_eval(k=10, **kw):
    retrieve = fake_retrieve(TABLE)
    return evaluate(RECORDS, retrieve, infer, k=k, **kw), retrieve


def test_evaluate_metrics_exact():
    rep, retrieve = run_eval()
    m, n = rep["metrics"], rep["n"]
    assert rep["kind"] == "eval" and rep["k"] == 10 and rep["n_records"] == 5
    # symbol recall: (1/2 + 1 + 0) / 3
    assert m["symbol_recall"] == pytest.approx(0.5)
    assert n["symbol_recall"] == 3
    # workflow accuracy over records with a non-null expected_workflow: 2 of 3
    assert m["workflow_accuracy"] == pytest.approx(2 / 3)
    assert n["workflow_accuracy"] == 3
    # workflow in top-k: static_shift yes, rotation (override) yes, sensitivity no
    assert m["workflow_in_topk"] == pytest.approx(2 / 3)
    assert n["workflow_in_topk"] == 3
    # one record of five has a test file in its hits
    assert m["no_test_in_topk"] == pytest.approx(4 / 5)
    assert n["no_test_in_topk"] == 5
    # one record of five got nothing
    assert m["nonempty_rate"] == pytest.approx(4 / 5)
    assert n["nonempty_rate"] == 5
    # one violation among the two guarded records
    assert m["hallucination_violations"] == 1
    assert n["hallucination_violations"] == 2
    assert rep["violations"] == [
        {"query": "correct static shift", "found": ["from pycsamt import static_shift"]}
    ]
    # test-file pollution: 2 test hits out of 3 + 2 + 2 + 6 = 13 hits
    assert m["test_pollution"] == pytest.approx(2 / 13)
    assert n["test_pollution"] == 13
    assert rep["test_pollution"] == [
        {
            "query": "depth of my model",
            "paths": ["pycsamt/tests/test_x.py", "conftest.py"],
        }
    ]
    assert rep["errors"] == []
    assert set(m) == set(METRICS) == set(n)
    assert [c[1] for c in retrieve.calls] == [10] * 5


def test_evaluate_per_record_detail():
    rep, _ = run_eval()
    r0, r1, r2, r3, r4 = rep["records"]
    assert r0["query"] == "correct static shift"
    assert r0["symbol_recall"] == 0.5
    assert r0["missing_symbols"] == ["pycsamt.agents.SSAgent"]
    assert r0["retrieved_workflows"] == ["static_shift"]
    assert r0["retrieved_symbols_top5"] == ["pycsamt.ss.estimate", "pycsamt.ss.apply"]
    assert r0["inferred_workflow"] == "static_shift" and r0["workflow_correct"] is True
    assert r0["violations"] == ["from pycsamt import static_shift"]
    assert r0["n_hits"] == 3

    assert r1["inferred_workflow"] == "phase_analysis"  # after stripping
    assert r1["workflow_correct"] is True
    assert r1["workflow_in_topk"] is True
    assert r1["retrieved_workflows"] == ["rotation"]  # the override is the target

    assert r2["symbol_recall"] == 0.0
    assert r2["missing_symbols"] == ["pycsamt.site.Sites"]
    assert r2["workflow_correct"] is None  # expected_workflow null: not scored
    assert r2["workflow_in_topk"] is None

    assert r3["workflow_correct"] is False and r3["inferred_workflow"] == "qc"
    assert r3["workflow_in_topk"] is False
    assert r3["test_hits"] == ["pycsamt/tests/test_x.py", "conftest.py"]
    assert r3["retrieved_symbols_top5"] == [
        "pycsamt.csumt.bostick",
        "pycsamt.tests.test_x",
        "pycsamt.conftest.fx",
        "pycsamt.a1",
        "pycsamt.a2",
    ]
    assert r3["violations"] == []

    assert r4["n_hits"] == 0 and r4["symbol_recall"] is None
    json.dumps(rep)  # JSON-serialisable for the CLI and the LSP command


def test_evaluate_truncates_to_k():
    rep, retrieve = run_eval(k=2)
    r3 = rep["records"][3]
    assert r3["n_hits"] == 2
    assert r3["test_hits"] == ["pycsamt/tests/test_x.py"]
    assert rep["n"]["test_pollution"] == 2 + 2 + 2 + 2
    assert {c[1] for c in retrieve.calls} == {2}


def test_evaluate_custom_is_test_path():
    rep, _ = run_eval(is_test_path=lambda p: p.startswith("docs/"))
    assert rep["test_pollution"] == [
        {"query": "correct static shift", "paths": ["docs/a.md"]}
    ]
    assert rep["metrics"]["test_pollution"] == pytest.approx(1 / 13)


def test_evaluate_accepts_hit_objects():
    table = {
        "q": [
            SimpleNamespace(
                symbol="pycsamt.a.B",
                workflow="qc",
                source_path="pycsamt/a.py",
                text="t",
                kind="x",
            )
        ]
    }
    rep = evaluate(
        [
            {
                "query": "q",
                "expected_symbols": ["pycsamt.a.B"],
                "expected_workflow": "qc",
            }
        ],
        fake_retrieve(table),
        lambda q: "qc",
    )
    assert rep["metrics"]["symbol_recall"] == 1.0
    assert rep["metrics"]["workflow_in_topk"] == 1.0
    assert rep["metrics"]["workflow_accuracy"] == 1.0


def test_evaluate_records_retrieval_errors():
    def boom(q, k):
        raise RuntimeError("index not built")

    rep = evaluate([{"query": "x", "expected_workflow": "qc"}], boom, lambda q: "qc")
    assert rep["errors"] == [{"query": "x", "error": "RuntimeError: index not built"}]
    assert rep["records"][0]["error"] == "RuntimeError: index not built"
    assert rep["metrics"]["nonempty_rate"] == 0.0
    assert rep["metrics"]["workflow_in_topk"] == 0.0
    assert rep["metrics"]["test_pollution"] is None and rep["n"]["test_pollution"] == 0


def test_evaluate_without_classifier_and_empty_suite():
    rep, _ = run_eval()
    rep2 = evaluate(RECORDS, fake_retrieve(TABLE), None)
    assert rep2["metrics"]["workflow_accuracy"] is None
    assert rep2["n"]["workflow_accuracy"] == 0
    assert rep2["metrics"]["symbol_recall"] == rep["metrics"]["symbol_recall"]
    empty = evaluate([], fake_retrieve({}), infer)
    assert empty["n_records"] == 0
    assert all(
        empty["metrics"][m] is None for m in METRICS if m != "hallucination_violations"
    )
    assert empty["metrics"]["hallucination_violations"] == 0
    with pytest.raises(ValueError):
        evaluate(RECORDS, fake_retrieve(TABLE), infer, k=0)


def test_duplicate_expected_symbols_count_once():
    rep = evaluate(
        [{"query": "q", "expected_symbols": ["a.B", "a.B", "a.C"]}],
        fake_retrieve({"q": [hit("a.B")]}),
        None,
    )
    assert rep["metrics"]["symbol_recall"] == pytest.approx(0.5)


# ── suites, ablation, report ────────────────────────────────────────────────


def test_evaluate_suites_per_suite_and_overall(tmp_path):
    a = write(
        tmp_path / "a.jsonl", "\n".join(json.dumps(r) for r in RECORDS[:2]) + "\n"
    )
    b = write(
        tmp_path / "b.jsonl", "\n".join(json.dumps(r) for r in RECORDS[2:]) + "\n"
    )
    retrieve = fake_retrieve(TABLE)
    rep = evaluate_suites([a, b], retrieve, infer)
    assert rep["kind"] == "eval_suites"
    assert list(rep["suites"]) == ["a.jsonl", "b.jsonl"]
    assert len(retrieve.calls) == 5  # each query retrieved once
    assert rep["suites"]["a.jsonl"]["metrics"]["symbol_recall"] == pytest.approx(0.75)
    assert rep["suites"]["a.jsonl"]["n_records"] == 2
    assert "records" not in rep["suites"]["a.jsonl"]
    assert rep["suites"]["b.jsonl"]["metrics"]["symbol_recall"] == 0.0
    single, _ = run_eval()
    assert rep["overall"]["metrics"] == single["metrics"]
    assert [r["suite"] for r in rep["overall"]["records"]] == ["a.jsonl"] * 2 + [
        "b.jsonl"
    ] * 3
    # a mapping of records works too
    rep2 = evaluate_suites({"x": RECORDS}, fake_retrieve(TABLE), infer)
    assert rep2["overall"]["metrics"] == single["metrics"]


def test_ablation_table_shape():
    asked: list[str | None] = []

    def make_retrieve(disabled):
        asked.append(disabled)
        if disabled == "symbol_boost":  # this component finds the second symbol
            return fake_retrieve(
                {**TABLE, "correct static shift": TABLE["correct static shift"][:1]}
            )
        if disabled == "workflow_boost":
            return fake_retrieve({})
        return fake_retrieve(TABLE)

    table = ablation(make_retrieve, {"s": RECORDS}, infer)
    assert asked == [None, *ABLATION_COMPONENTS]
    assert table["kind"] == "ablation" and table["k"] == 10 and table["suites"] == ["s"]
    rows = table["rows"]
    assert [r["component"] for r in rows] == ["baseline", *ABLATION_COMPONENTS]
    assert [r["disabled"] for r in rows] == [None, *ABLATION_COMPONENTS]
    for r in rows:
        assert set(r) == {"component", "disabled", "metrics", "n", "delta", "by_suite"}
        assert set(r["metrics"]) == set(METRICS) == set(r["delta"])
        assert set(r["by_suite"]) == {"s"}
    base = rows[0]
    assert all(v in (0, 0.0, None) for v in base["delta"].values())
    wf = rows[1 + ABLATION_COMPONENTS.index("workflow_boost")]
    assert wf["metrics"]["nonempty_rate"] == 0.0
    assert wf["delta"]["nonempty_rate"] == pytest.approx(-0.8)
    assert wf["delta"]["test_pollution"] is None  # no hits at all: undefined
    sym = rows[1 + ABLATION_COMPONENTS.index("symbol_boost")]
    assert sym["metrics"]["hallucination_violations"] == 0
    assert sym["delta"]["hallucination_violations"] == -1
    text = format_report(table)
    assert "baseline" in text and "symbol_boost" in text and "[-0.800]" in text
    json.dumps(table)


def test_ablation_custom_components():
    table = ablation(
        lambda d: fake_retrieve(TABLE), RECORDS, infer, components=("expansion",)
    )
    assert [r["component"] for r in table["rows"]] == ["baseline", "expansion"]
    assert table["suites"] == ["records"]


def test_format_report_eval_and_suites():
    rep, _ = run_eval()
    text = format_report(rep)
    assert "k=10" in text
    for short in (
        "sym_recall",
        "wf_acc",
        "wf_topk",
        "no_test",
        "nonempty",
        "violations",
        "pollution",
    ):
        assert short in text
    assert "0.500 (3)" in text  # symbol recall and its n
    assert "0.667 (3)" in text
    assert "1 (2)" in text  # violations (records guarded)
    assert "missing pycsamt.agents.SSAgent" in text
    assert "sensitivity not in top-k [qc]" in text
    assert "workflow qc != sensitivity" in text

    suites = evaluate_suites(
        {"a": RECORDS[:2], "b": RECORDS[2:]}, fake_retrieve(TABLE), infer
    )
    text2 = format_report(suites, max_failures=1)
    lines = text2.splitlines()
    assert any(line.startswith("a ") for line in lines)
    assert any(line.startswith("ALL") for line in lines)
    assert "[a] 'correct static shift'" in text2
    assert "more" in text2  # failures were cut at max_failures


def test_format_report_with_reproducibility(tmp_path):
    rep, _ = run_eval()
    rep["reproducibility"] = reproducibility(
        tool_version="9.9",
        project_root=tmp_path,
        build_command=["pycsamt-lsp", "build"],
        manifest={
            "index_version": 3,
            "n_chunks": 42,
            "source_fingerprint": "f00d",
            "embedded": True,
            "embed_model": "m-small",
            "created": "2025-01-01",
        },
        counts_by_kind={"recipe": 2},
    )
    text = format_report(rep)
    assert "tool 9.9" in text
    assert "build: pycsamt-lsp build" in text
    assert "index v3" in text and "chunks 42" in text and "fingerprint f00d" in text
    assert "dense on (m-small)" in text
    assert "by kind: recipe=2" in text


# ── reproducibility and the git commit ──────────────────────────────────────

SHA1 = "a" * 40
SHA2 = "b" * 40


def test_git_commit_branch_ref(tmp_path):
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / ".git" / "refs" / "heads" / "main", SHA1 + "\n")
    assert git_commit(tmp_path) == SHA1
    sub = tmp_path / "server" / "pkg"
    sub.mkdir(parents=True)
    assert git_commit(sub) == SHA1  # found from a subfolder


def test_git_commit_packed_ref_and_detached(tmp_path):
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/dev\n")
    write(
        tmp_path / ".git" / "packed-refs",
        f"# pack-refs with: peeled\n{SHA1} refs/heads/main\n{SHA2} refs/heads/dev\n",
    )
    assert git_commit(tmp_path) == SHA2
    write(tmp_path / ".git" / "HEAD", SHA1 + "\n")
    assert git_commit(tmp_path) == SHA1


def test_git_commit_worktree_file(tmp_path):
    common = tmp_path / "main" / ".git"
    write(common / "refs" / "heads" / "feature", SHA2 + "\n")
    wt_git = common / "worktrees" / "wt"
    write(wt_git / "HEAD", "ref: refs/heads/feature\n")
    write(wt_git / "commondir", "../..\n")
    wt = tmp_path / "wt"
    write(wt / ".git", f"gitdir: {wt_git}\n")
    assert git_commit(wt) == SHA2


def test_git_commit_unknown(tmp_path):
    if not any((d / ".git").exists() for d in (tmp_path, *tmp_path.parents)):
        assert git_commit(tmp_path / "no" / "repo") is None
    write(tmp_path / "r" / ".git" / "HEAD", "ref: refs/heads/missing\n")
    assert git_commit(tmp_path / "r") is None


def test_reproducibility_checklist(tmp_path):
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / ".git" / "refs" / "heads" / "main", SHA1 + "\n")
    suite = write(tmp_path / "s.jsonl", '# c\n{"query": "a"}\n{"query": "b"}\n')
    bad = write(tmp_path / "bad.jsonl", "{nope\n")
    r = reproducibility(
        project_root=tmp_path,
        build_command="pycsamt-lsp build --root X",
        manifest={
            "version": 2,
            "created": "2025-06-01T00:00:00Z",
            "n_chunks": 1234,
            "fingerprint": "abc",
            "embedded": False,
            "counts_by_kind": {"recipe": 11},
            "counts_by_workflow": {"qc": 5},
        },
        suite_paths=[suite, bad],
        corpus_root="/corpus",
        profile="pycsamt",
        k=10,
    )
    assert r["tool_version"] == __version__
    assert r["git_commit"] == SHA1
    assert r["python"].count(".") == 2
    assert r["os"]
    assert r["build_command"] == "pycsamt-lsp build --root X"
    assert r["manifest"] == {
        "version": 2,
        "created": "2025-06-01T00:00:00Z",
        "n_chunks": 1234,
        "fingerprint": "abc",
        "embedded": False,
    }
    assert r["counts_by_kind"] == {"recipe": 11}
    assert r["counts_by_workflow"] == {"qc": 5}
    assert r["dense"] == {"enabled": False, "model": None}
    assert r["corpus_root"] == "/corpus" and r["profile"] == "pycsamt" and r["k"] == 10
    assert r["suites"][0]["n_records"] == 2 and len(r["suites"][0]["sha256"]) == 64
    assert r["suites"][1]["n_records"] is None  # unreadable suite: recorded, not fatal
    json.dumps(r)


def test_reproducibility_explicit_arguments_win():
    r = reproducibility(
        tool_version="1.2.3",
        manifest={"embedded": False, "counts_by_kind": {"recipe": 1}},
        counts_by_kind={"recipe": 7},
        dense=True,
        dense_model="text-embedding-3-small",
    )
    assert r["tool_version"] == "1.2.3"
    assert r["counts_by_kind"] == {"recipe": 7}
    assert r["dense"] == {"enabled": True, "model": "text-embedding-3-small"}
    assert r["suites"] == []


# ── test-path rule ──────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("pycsamt/tests/test_ss.py", True),
        ("pycsamt/emtools/tests/helpers.py", True),
        ("tests/conftest.py", True),
        ("pycsamt/test_thing.py", True),
        ("pycsamt/thing_test.py", True),
        ("conftest.py", True),
        ("pycsamt\\tests\\x.py", True),
        ("pycsamt/emtools/ss.py", False),
        ("pycsamt/testing/latest.py", False),
        ("docs/source/tests.rst", False),
        ("", False),
        (None, False),
    ],
)
def test_default_is_test_path(path, is_test):
    assert default_is_test_path(path) is is_test


# ── the project's own paraphrase suite and recipes (structure only) ────────

WORKFLOWS = {
    "static_shift",
    "qc",
    "phase_analysis",
    "denoise",
    "tipper",
    "sensitivity",
    "rotation",
    "ai_inversion",
    "inv2d",
    "inv3d",
    "pre_inversion",
    "modem",
    "mare2dem",
    "forward",
    "report",
    "code_gen",
}


def test_paraphrase_suite_structure():
    recs = load_suite(PROJECT / "suites" / "tuning" / "paraphrase.jsonl")
    assert len(recs) >= 40
    for r in recs:
        assert r["expected_workflow"] in WORKFLOWS
        assert r.get("expected_retrieval_workflow", "qc") in WORKFLOWS
        # plain language: no API identifiers (snake_case, CamelCase, dotted)
        assert not re.search(
            r"\b[a-z]+_[a-z_]+\b|\b[A-Z][a-z]+[A-Z]\w*|\bpycsamt\.", r["query"]
        ), r
    covered = {r["expected_workflow"] for r in recs}
    assert covered == WORKFLOWS
    per = {w: sum(r["expected_workflow"] == w for r in recs) for w in WORKFLOWS}
    for main in ("static_shift", "qc", "phase_analysis", "denoise", "sensitivity"):
        assert per[main] >= 4, per


RECIPES = sorted((PROJECT / "assistant_recipes").glob("*.md"))


def test_recipes_exist():
    names = {p.stem for p in RECIPES}
    for needed in (
        "static_shift",
        "data_qc",
        "phase_tensor_strike",
        "load_edi_sites",
        "occam2d_preparation",
        "ai_inversion",
        "tipper_induction_arrows",
        "sensitivity_depth_of_investigation",
        "denoising",
        "full_workflow",
    ):
        assert needed in names


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_recipe_structure(path):
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    assert 40 <= len(lines) <= 120, len(lines)
    m = re.search(r"^Workflow: ([a-z0-9_]+)$", text, re.M)
    assert m and m.group(1) in WORKFLOWS
    heads = [ln for ln in lines if ln.startswith("## ")]
    assert len(heads) >= 4
    assert any("review" in h.lower() for h in heads)
    fences = re.findall(r"```python\n(.*?)```", text, re.S)
    assert fences, "a python snippet is required"
    for code in fences:
        ast.parse(code)
    # every dotted name is fully qualified in the package (the validator
    # test checks existence against the real corpus)
    assert re.search(r"`pycsamt\.[A-Za-z_]\w*(\.\w+)+`", text)
    # the hallucination guard of the bundled suites must never match a recipe
    assert "from pycsamt import static_shift" not in text
