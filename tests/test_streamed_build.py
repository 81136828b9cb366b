"""The streamed build (``Workspace.rebuild``) writes what build + persist write.

``rebuild`` no longer builds a snapshot in memory and then saves it: the
workers send final bytes and the parent writes them into the index files as
they arrive (issue 18). These tests pin its output to the in-memory path
(``build()`` then ``persist()``), file by file and byte for byte, on a tree
with every kind of file a build meets: package modules (indexed and not),
docs, a recipe, a syntax error, a non-UTF-8 file, a file over the size limit,
a compiled module; serially and with real worker processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.index.workers import plan_batches
from pycsamt_lsp.model import state as model_state
from pycsamt_lsp.workspace import facade
from pycsamt_lsp.workspace.facade import Workspace

PROFILE = profile_from_dict(
    {
        "name": "fixture",
        "package": "geo",
        "roots": ["geo", "docs", "recipes"],
        "recipe_dir": "recipes",
        "excludes": ["geo/app/"],
        "max_file_bytes": 6_000,
        "priority": {"high": ["geo/core"], "docs": ["docs"]},
        "workflows": {"static_shift": ["static shift"], "denoise": ["hampel"]},
    }
)


def _module(i: int) -> str:
    return (
        f'"""Module {i}: static shift and hampel denoise helpers."""\n'
        "import os\n\n"
        f"__all__ = ['Agent{i}', 'correct_{i}']\n\n\n"
        f"class Agent{i}:\n"
        f'    """Static shift agent number {i}; clé é 漢字."""\n\n'
        f"    def run(self, freq: float = {i}.5, *, band=None):\n"
        '        """Run on one frequency band."""\n'
        "        self.freq = freq\n"
        "        return freq\n\n\n"
        f"def correct_{i}(x, y=({i}, 2)):\n"
        '    """Correct a galvanic static shift."""\n'
        "    return x\n"
    )


def make_tree(root: Path, n_modules: int) -> None:
    files = {
        "geo/__init__.py": '"""Geo package."""\nfrom geo.core import m0\n',
        "geo/core/__init__.py": "",
        "geo/app/gui.py": "def window():\n    return 1\n",  # modelled, not indexed
        "geo/core/broken.py": "def f(:\n    pass\n",
        "geo/core/big.py": "x = 1\n" * 2_000,  # over max_file_bytes: model only
        "geo/_speed.cpython-311-x86_64-linux-gnu.so": "",
        "docs/index.rst": "Title\n=====\n\nStatic shift correction.\n\nSub\n---\n\nHampel.\n",
        "docs/guide.md": "# Guide\n\nDenoise with hampel.\n\n## More\n\nText é.\n",
        "recipes/ss.md": "# Static shift recipe\n\nWorkflow: static_shift\n\nDo it.\n",
    }
    for i in range(n_modules):
        files[f"geo/core/m{i}.py"] = _module(i)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "docs/latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))


def _meta(d: Path) -> dict:
    meta = json.loads((d / "meta.json").read_text())
    meta.pop("build_id")
    return meta


def assert_same_index(a: Path, b: Path, *, model_bytes: bool = True) -> None:
    assert (a / "chunks.jsonl").read_bytes() == (b / "chunks.jsonl").read_bytes()
    ma, mb = _meta(a), _meta(b)
    assert ma == mb
    assert list(ma["files"]) == list(mb["files"])
    assert list(ma["skipped"]) == list(mb["skipped"])
    with np.load(a / "index.npz") as za, np.load(b / "index.npz") as zb:
        assert za.files == zb.files
        for k in za.files:
            if k != "build_id":
                assert za[k].dtype == zb[k].dtype, k
                assert np.array_equal(za[k], zb[k]), k
    fa, fb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    for m in (fa, fb):
        del m["created"], m["build_id"]
    assert fa == fb
    pa = (a / "package_model.json").read_bytes()
    pb = (b / "package_model.json").read_bytes()
    if model_bytes:
        assert pa == pb
    else:  # other processes: a set's order inside a module's facts may differ
        assert json.loads(pa) == json.loads(pb)


def _in_memory(root: Path, idx: Path) -> Workspace:
    ws = Workspace(root, PROFILE, index_dir=idx, workers=1)
    ws.build()
    assert ws.persist() is not None
    return ws


def test_streamed_rebuild_writes_what_build_and_persist_write(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_tree(root, 12)
    old = _in_memory(root, tmp_path / "a")
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "b", workers=1)
    report = ws.rebuild()
    assert_same_index(tmp_path / "a", tmp_path / "b")
    skipped = old.snapshot.skipped
    assert set(skipped) == {"geo/core/broken.py", "geo/core/big.py", "docs/latin1.md"}
    assert report["skipped"] == 3
    assert report["n_chunks"] == old.snapshot.n_chunks
    assert report["fingerprint"] == old.snapshot.fingerprint
    assert ws.persisted
    # loaded from the written files by its first reader, then served
    assert ws.query("static shift", k=3)["results"]
    assert ws.stats()["n_chunks"] == old.stats()["n_chunks"]
    assert set(ws.model.modules) == set(old.model.modules)
    assert "geo.app.gui" in ws.model.modules  # modelled though not indexed


def test_streamed_rebuild_with_worker_processes(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "corpus"
    make_tree(root, 40)
    _in_memory(root, tmp_path / "a")
    monkeypatch.setattr(facade, "_PARALLEL_MIN_FILES", 1)
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "b", workers=2)
    ws.rebuild()
    assert_same_index(tmp_path / "a", tmp_path / "b", model_bytes=False)


def test_unwritable_index_folder_falls_back_to_memory(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_tree(root, 3)
    blocker = tmp_path / "file"
    blocker.write_text("")
    ws = Workspace(root, PROFILE, index_dir=blocker / "idx", workers=1)
    report = ws.rebuild()  # the folder cannot exist: built here, not persisted
    assert report["n_chunks"] > 0
    assert not ws.persisted
    assert ws.query("hampel", k=2)["results"]


def test_a_failed_write_leaves_no_half_index(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "corpus"
    make_tree(root, 3)
    idx = tmp_path / "idx"

    def boom(*_a, **_k):
        raise RuntimeError("worker died")

    # the facade imports it from model.state where a build uses it
    monkeypatch.setattr(model_state, "pack_batch", boom)
    ws = Workspace(root, PROFILE, index_dir=idx, workers=1)
    with pytest.raises(RuntimeError):
        ws.rebuild()
    assert sorted(p.name for p in idx.iterdir()) == []  # temps removed


@pytest.mark.parametrize("workers", [1, 2])
def test_plan_batches_takes_every_job_once_largest_alone_first(workers: int) -> None:
    sizes = [10, 500, 20, 30, 5, 400, 1, 1, 60, 70] * 7
    batches = plan_batches(sizes, workers)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(sizes)))
    target = sum(sizes) // (workers * 24)
    big = [b for b in batches if sizes[b[0]] >= target]
    assert batches[: len(big)] == big and all(len(b) == 1 for b in big)
    assert [sizes[b[0]] for b in big] == sorted(
        (sizes[b[0]] for b in big), reverse=True
    )
    rest = [i for b in batches[len(big) :] for i in b]
    assert rest == sorted(rest)  # path order


def test_module_files_trusts_only_the_screen_it_is_told_of(tmp_path: Path) -> None:
    from pycsamt_lsp.corpus.discovery import iter_corpus_files
    from pycsamt_lsp.model.state import module_files

    root = tmp_path / "corpus"
    make_tree(root, 4)
    (root / "geo/core/fifo.py").unlink(missing_ok=True)
    os_link = root / "geo/core/outside.py"
    os_link.symlink_to(tmp_path / "elsewhere.py")  # dangling: refused both ways
    listed = dict(iter_corpus_files(root, PROFILE))
    plain = module_files(root, "geo")
    told = module_files(root, "geo", listed)
    assert list(told.items()) == list(plain.items())
    assert "geo/core/outside.py" not in told and "geo/app/gui.py" in told
    # a path the caller did not screen under this name is screened here
    fake = {**listed, "geo/core/outside.py": root / "geo/core/m0.py"}
    assert "geo/core/outside.py" not in module_files(root, "geo", fake)


@pytest.mark.parametrize("fails", ["index.npz", "meta.json"])
def test_a_failed_index_file_puts_neither_in_place(
    tmp_path: Path, monkeypatch, fails: str
) -> None:
    """``meta.json`` and ``index.npz`` are written side by side (one in a
    thread) and put in place together, before the manifest: a failure in
    either puts neither in place, leaves no temporary file behind, and the
    next open refuses the torn set and rebuilds."""
    from pycsamt_lsp.index import store

    root = tmp_path / "corpus"
    make_tree(root, 3)
    idx = tmp_path / "idx"
    Workspace(root, PROFILE, index_dir=idx, workers=1).rebuild()
    before = {p.name: p.read_bytes() for p in idx.iterdir()}
    real = store.staged_write

    def staged(path, write):
        if Path(path).name == fails:
            raise OSError("disk full")
        return real(path, write)

    monkeypatch.setattr(store, "staged_write", staged)
    (root / "geo/core/m0.py").write_text('"""Changed."""\n', encoding="utf-8")
    with pytest.raises(OSError, match="disk full"):
        Workspace(root, PROFILE, index_dir=idx, workers=1).rebuild()
    after = {p.name: p.read_bytes() for p in idx.iterdir()}
    assert set(after) == set(before)  # temps removed
    for name in ("meta.json", "index.npz"):
        assert after[name] == before[name]
    # the chunks and the model are already the new ones; the manifest is the
    # old one, so the set is refused as torn and rebuilt, never half loaded
    assert after["manifest.json"] == before["manifest.json"]
    monkeypatch.setattr(store, "staged_write", real)
    ws = Workspace(root, PROFILE, index_dir=idx, workers=1)
    ws.open()
    assert ws.query("changed", k=3)["results"]
