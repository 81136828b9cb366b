"""The engine on the real pyCSAMT 2.6.4 sdist (read, never imported or written).

The ranking asserts are the product's spec: when one fails, the profile or
the recipes need tuning, not the test.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
from pathlib import Path, PurePosixPath

import numpy as np
import pytest

from pycsamt_lsp.workspace.facade import Workspace

pytestmark = pytest.mark.corpus


def is_test_file(rel: str) -> bool:
    p = PurePosixPath(rel)
    return (
        "tests" in p.parts[:-1]
        or "test" in p.parts[:-1]
        or fnmatch.fnmatch(p.name, "test_*.py")
        or fnmatch.fnmatch(p.name, "*_test.py")
        or p.name == "conftest.py"
    )


@pytest.fixture(scope="module")
def ws(real_corpus, pycsamt_profile, tmp_path_factory) -> Workspace:
    w = Workspace(
        real_corpus, pycsamt_profile, index_dir=tmp_path_factory.mktemp("real") / "idx"
    )
    w.build()
    return w


def top(ws: Workspace, q: str, k: int = 10) -> list[dict]:
    return ws.query(q, k=k)["results"]


def test_build_has_thousands_of_chunks_of_every_kind(ws):
    st = ws.stats()
    assert st["n_chunks"] >= 3000
    assert st["n_files"] >= 300
    for kind in ("module_doc", "python_symbol", "python_method", "recipe"):
        assert st["by_kind"].get(kind, 0) > 0, kind
    # the profile's workflows show up
    for wf in ("static_shift", "qc", "phase_analysis", "denoise", "tipper"):
        assert st["by_workflow"].get(wf, 0) > 0, wf
    assert st["skipped"] == 0 or st["skipped"] < st["n_files"] // 20


def test_static_shift_correction_ranks_the_agent_or_ss_module(ws):
    res = top(ws, "static shift correction", k=5)
    symbols = [r["symbol"] or "" for r in res]

    def good(sym: str) -> bool:
        return (
            sym == "pycsamt.agents.static_shift.StaticShiftAgent"
            or sym.startswith("pycsamt.agents.static_shift.StaticShiftAgent.")
            or sym == "pycsamt.emtools.ss"
            or sym.startswith("pycsamt.emtools.ss.")
        )

    assert any(good(s) for s in symbols), [
        (r["rank"], r["kind"], r["label"], r["score"]) for r in res
    ]


def test_phase_tensor_strike_direction_is_phase_analysis_first(ws):
    res = top(ws, "phase tensor strike direction", k=5)
    assert res[0]["workflow"] == "phase_analysis", [
        (r["rank"], r["workflow"], r["label"]) for r in res
    ]


def test_no_chunk_comes_from_a_test_file_or_excluded_path(ws, pycsamt_profile):
    paths = set(ws.snapshot.files)
    assert not [p for p in paths if is_test_path_like(p)]
    for chunk_path in {ws.snapshot.table.paths[s] for s in ws.snapshot.alive_slots()}:
        assert not is_test_file(chunk_path), chunk_path
        assert not pycsamt_profile.is_excluded(chunk_path), chunk_path
        assert chunk_path.endswith((".py", ".rst", ".md")), chunk_path
    for excluded in (
        "pycsamt/app/",
        "pycsamt/assistant/rag/",
        "pycsamt/assistant/evals/",
    ):
        assert not [p for p in paths if p.startswith(excluded)], excluded


def is_test_path_like(rel: str) -> bool:
    return is_test_file(rel) or "/tests/" in "/" + rel


def test_fingerprint_recomputed_from_the_files(ws, real_corpus):
    h = hashlib.sha256()
    for rel in sorted(ws.snapshot.files):
        path = ws._abs_of(rel)
        h.update(rel.encode() + b":" + hashlib.sha256(path.read_bytes()).digest())
    assert ws.stats()["fingerprint"] == h.hexdigest()


def test_exact_symbol_queries(ws):
    res = top(ws, "estimate_ss_ama", k=3)
    assert res[0]["symbol"] == "pycsamt.emtools.ss.estimate_ss_ama"
    res = top(ws, "StaticShiftAgent", k=5)
    assert "pycsamt.agents.static_shift.StaticShiftAgent" in [r["symbol"] for r in res]


def test_bundled_suite_queries_all_answer(ws, real_corpus):
    suites = sorted((real_corpus / "pycsamt/assistant/evals/suites").glob("*.jsonl"))
    assert suites
    n = 0
    for suite in suites:
        for line in suite.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                q = json.loads(line)["query"]
                res = ws.query(q, k=10)
                assert isinstance(res["results"], list)
                n += 1
    assert n >= 40


def test_persisted_index_loads_and_answers_the_same(ws, real_corpus, pycsamt_profile):
    manifest = ws.persist()
    assert manifest and manifest["n_chunks"] == ws.stats()["n_chunks"]
    again = Workspace(real_corpus, pycsamt_profile, index_dir=ws.index_dir)
    report = again.open()
    assert report["action"] == "load"
    for q in ("static shift correction", "phase tensor strike direction", "tipper"):
        assert again.query(q) == ws.query(q)


@pytest.fixture(scope="module")
def corpus_copy(real_corpus, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("realcopy") / "pycsamt-2.6.4"
    shutil.copytree(
        real_corpus, dest, ignore=shutil.ignore_patterns(".pycsamt_rag", "__pycache__")
    )
    return dest


def test_incremental_update_on_a_copy_equals_full_build(
    corpus_copy, pycsamt_profile, tmp_path
):
    ws = Workspace(corpus_copy, pycsamt_profile, index_dir=tmp_path / "inc")
    ws.build()
    pys = [
        p
        for p in (corpus_copy / "pycsamt").rglob("*.py")
        if ws.rel_of(p) in ws.snapshot.files
    ]
    biggest = max(pys, key=lambda p: p.stat().st_size)
    with open(biggest, "a", encoding="utf-8") as fh:
        fh.write(
            "\n\ndef zz_freshly_added_resampler(data, rate=2):\n"
            '    """Resample magnetotelluric impedance onto a brand new grid."""\n'
            "    return data\n"
        )
    # test files added to the copy never reach the index
    (corpus_copy / "pycsamt/tests").mkdir(exist_ok=True)
    t1 = corpus_copy / "pycsamt/tests/test_fresh.py"
    t1.write_text("def test_zz_freshly_added_resampler():\n    pass\n")
    t2 = corpus_copy / "pycsamt/emtools/test_more.py"
    t2.write_text("def test_more():\n    pass\n")
    t3 = corpus_copy / "pycsamt/conftest.py"
    t3.write_text("import pytest\n")
    report = ws.refresh([biggest, t1, t2, t3])
    assert report["changed"] == [ws.rel_of(biggest)]
    assert report["added"] == []
    res = ws.query("zz_freshly_added_resampler", k=3)["results"]
    assert res[0]["symbol"].endswith(".zz_freshly_added_resampler")

    full = Workspace(corpus_copy, pycsamt_profile, index_dir=tmp_path / "full")
    full.build()
    for key in (
        "n_chunks",
        "n_files",
        "by_kind",
        "by_workflow",
        "fingerprint",
        "n_terms",
    ):
        assert ws.stats()[key] == full.stats()[key], key
    queries = [
        "static shift correction",
        "phase tensor strike direction",
        "zz_freshly_added_resampler",
        "remove spikes from noisy data",
        "occam2d mesh",
    ]
    for q in queries:
        a = ws.query(q, k=20, snippets=False)["results"]
        b = full.query(q, k=20, snippets=False)["results"]
        assert [r["id"] for r in a] == [r["id"] for r in b], q
        assert np.allclose([r["score"] for r in a], [r["score"] for r in b]), q
    assert not [p for p in ws.snapshot.files if is_test_path_like(p)]
    os.utime(biggest)  # a touch afterwards changes nothing
    assert ws.refresh([biggest])["changed"] == []
