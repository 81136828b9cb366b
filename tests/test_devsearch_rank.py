"""Developer search ranks with ``index/bm25.py``'s arithmetic and its own
parameters (k1 = 1.2, b = 0.5), pinned here by hand-computed scores."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.devsearch import rank
from pycsamt_lsp.devsearch.search import search_source
from pycsamt_lsp.index.bm25 import BM25Index, idf, term_score

PROFILE = load_profile("pycsamt")

FILES = {
    "pycsamt/one.py": "# notes\n# frobnicate the data\n",
    "pycsamt/two.py": "# frobnicate frobnicate frobnicate and then some more words here\n",
    "pycsamt/three.py": "# nothing relevant in this file at all, only filler text\n",
}


def _bm25(tf: int, dl: int, avgdl: float, n: int, df: int, k1: float, b: float):
    i = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return i * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def test_scores_are_bm25_with_k1_1_2_and_b_0_5(tmp_path: Path):
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    res = search_source(tmp_path, "frobnicate", profile=PROFILE)
    got = {r["path"]: r["score"] for r in res["results"]}
    assert set(got) == {"pycsamt/one.py", "pycsamt/two.py"}
    n = res["counts"]["files_scanned"]
    assert n == 3
    lens = {rel: len(FILES[rel].encode()) for rel in got}
    avgdl = sum(lens.values()) / len(lens)  # over the matching files
    tfs = {"pycsamt/one.py": 1, "pycsamt/two.py": 3}
    for rel, score in got.items():
        want = _bm25(tfs[rel], lens[rel], avgdl, n, 2, 1.2, 0.5)
        other = _bm25(tfs[rel], lens[rel], avgdl, n, 2, 1.5, 0.75)
        assert score == round(want, 3)
        assert round(other, 3) != score  # the parameters are what is pinned
    assert (rank.K1, rank.B) == (1.2, 0.5)


def test_the_index_and_devsearch_share_one_formula():
    docs = [{"a": 2, "b": 1}, {"a": 1}, {"c": 4}]
    idx = BM25Index.build(docs)
    scores = idx.scores(["a"])
    n, df, avgdl = 3, 2, (3 + 1 + 4) / 3
    for slot, tf, dl in ((0, 2, 3), (1, 1, 1)):
        assert scores[slot] == term_score(idf(n, df), float(tf), dl, avgdl)
        assert math.isclose(scores[slot], _bm25(tf, dl, avgdl, n, df, 1.5, 0.75))
    assert scores[2] == 0.0
    arr = idf(3, np.array([1, 2]))
    assert np.allclose(arr, [idf(3, 1), idf(3, 2)])
