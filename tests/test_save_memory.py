"""What a long-lived workspace keeps resident after saves and a persist
(issue 18; the figures are ``benchmarks/bench_save_memory.py``'s).

- A persist serves the snapshot it wrote from the files; the card service's
  maps and symbol table move to that snapshot in the persist itself
  (``Workspace._follow_cards``), so the in-memory snapshot of the saves is
  freed, not held until the next hover. The tables are those of a full pass.
- The first update of a loaded index copies its mapped row arrays; the
  mapped pages that copy read are dropped (``index.mapped.release``), and
  the arrays of the old index still read the same bytes.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np

from pycsamt_lsp.cards.card import warm
from pycsamt_lsp.index.mapped import load_npz, release
from test_cards_incremental import assert_like_full, ws  # noqa: F401 - fixture
from test_store import FILES, make_ws, results, write_tree


def test_persist_frees_the_snapshot_of_the_saves(ws) -> None:
    warm(ws)
    target = ws.root / "pkg/phase.py"
    target.write_text(target.read_text() + "\n\ndef saved_fn():\n    return 1\n")
    ws.refresh([target])
    warm(ws)  # what the server's card warm-up does after the save
    saved = ws.published
    assert saved is not None
    gone = weakref.ref(saved.snapshot.bm25)  # the saves' BM25 arrays
    del saved
    assert ws.persist() is not None
    gc.collect()
    assert gone() is None, "the snapshot of the saves is still referenced"
    assert_like_full(ws)  # the tables moved to the reloaded snapshot


def test_release_drops_mapped_pages_and_keeps_the_bytes(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_tree(root, FILES)
    idx = tmp_path / "idx"
    assert make_ws(root, idx).open()["action"] == "build"
    arrays = load_npz(idx / "index.npz")
    before = {k: arrays[k].copy() for k in ("doc_terms", "doc_tfs", "main_doc")}
    for name, want in before.items():
        assert release(arrays[name]) is True
        assert np.array_equal(arrays[name], want)  # read back from the file
    assert release(np.arange(10)) is False  # not mapped: nothing to drop


def test_updates_of_a_loaded_index_answer_the_same(tmp_path: Path) -> None:
    """The first update copies (and releases) the mapped rows: the old index
    and the updated one answer as before."""
    root = tmp_path / "corpus"
    write_tree(root, FILES)
    idx = tmp_path / "idx"
    assert make_ws(root, idx).open()["action"] == "build"
    ws = make_ws(root, idx)
    assert ws.open()["action"] == "load"
    old = ws.snapshot
    assert old is not None
    rows = (old.bm25.doc_terms.copy(), old.bm25.doc_tfs.copy())
    path = next(p for p in sorted(root.rglob("*.py")) if p.stat().st_size > 0)
    path.write_text(path.read_text() + "\n\ndef extra_probe_fn():\n    return 2\n")
    ws.refresh([path])
    assert ws.snapshot is not old
    assert any(
        (r["symbol"] or "").endswith("extra_probe_fn")
        for r in ws.query("extra_probe_fn", k=5)["results"]
    )
    # the old index's rows read the same bytes after their pages were dropped
    assert np.array_equal(old.bm25.doc_terms, rows[0])
    assert np.array_equal(old.bm25.doc_tfs, rows[1])
    new = ws.snapshot.bm25
    n = len(rows[0])
    assert np.array_equal(new.doc_terms[:n], rows[0])
    assert results(ws, "static shift") == results(ws, "static shift")
