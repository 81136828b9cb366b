"""The workspace facade: incremental updates equal a full rebuild; bad files."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.workspace.facade import Workspace

PROFILE = profile_from_dict(
    {
        "name": "fixture",
        "package": "geo",
        "roots": ["geo", "docs", "recipes"],
        "recipe_dir": "recipes",
        "priority": {"high": ["geo/core"], "docs": ["docs"]},
        "workflows": {
            "static_shift": ["static shift", "galvanic"],
            "phase_analysis": ["phase tensor", "strike"],
            "denoise": ["denoise", "hampel", "outlier"],
            "tipper": ["tipper", "induction arrow"],
        },
        "workflow_paths": [
            ["geo/core/ss", "static_shift"],
            ["geo/pt", "phase_analysis"],
        ],
        "expansions": [
            ["spike", ["denoise", "hampel"]],
            ["vertical offset", ["static", "shift"]],
        ],
    }
)

WORDS = [
    "static",
    "shift",
    "galvanic",
    "phase",
    "tensor",
    "strike",
    "denoise",
    "hampel",
    "outlier",
    "tipper",
    "induction",
    "arrow",
    "resistivity",
    "frequency",
    "station",
    "profile",
    "mesh",
    "occam",
    "model",
    "inversion",
    "impedance",
    "apparent",
    "skew",
    "rotation",
    "azimuth",
    "correction",
    "filter",
    "window",
    "median",
    "ama",
    "loess",
    "reference",
    "survey",
    "line",
    "edi",
    "collection",
    "site",
]

QUERIES = [
    "static shift correction",
    "phase tensor strike direction",
    "remove spike outliers",
    "vertical offset between curves",
    "tipper induction arrow",
    "estimate_ss_ama",
    "StaticShiftAgent",
    "resistivity frequency station",
    "occam mesh model inversion",
    "brand new function",
    "median filter window",
]


def module_source(rng: random.Random, name: str, n_funcs: int) -> str:
    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    parts = [f'"""Module {name}: {sentence(8)}."""\n\n']
    for i in range(n_funcs):
        parts.append(
            f"def {name}_{rng.choice(WORDS)}_{i}(data, factor={i}, *, mode='ama'):\n"
            f'    """{sentence(rng.randint(3, 15)).capitalize()}.\n\n'
            f"    {sentence(rng.randint(3, 20))}.\n"
            '    """\n'
            f"    return data * factor  # {sentence(4)}\n\n\n"
        )
    parts.append(
        f"class {name.title().replace('_', '')}Agent:\n"
        f'    """{sentence(10)}."""\n\n'
        "    def __init__(self, method='ama'):\n"
        "        self.method = method\n\n"
        "    def run(self, data):\n"
        f'        """{sentence(6)}."""\n'
        "        return data\n"
    )
    return "".join(parts)


def doc_source(rng: random.Random, title: str) -> str:
    out = [f"{title}\n{'=' * len(title)}\n\n"]
    for j in range(rng.randint(1, 4)):
        head = f"Part {j} {rng.choice(WORDS)}"
        out.append(f"{head}\n{'-' * len(head)}\n\n")
        out.append(" ".join(rng.choice(WORDS) for _ in range(30)) + "\n\n")
    return "".join(out)


def write(root: Path, rel: str, text: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def make_corpus(root: Path, seed: int = 0, n_modules: int = 24) -> random.Random:
    rng = random.Random(seed)
    for i in range(n_modules):
        sub = ("core/ss", "core", "pt", "io", "")[i % 5]
        rel = f"geo/{sub}/mod{i}.py" if sub else f"geo/mod{i}.py"
        write(root, rel, module_source(rng, f"mod{i}", rng.randint(2, 6)))
    write(
        root,
        "geo/core/ss/agent.py",
        '"""Static shift agent."""\n\n\nclass StaticShiftAgent:\n'
        '    """Detect and correct galvanic static shift."""\n\n'
        "    def estimate_ss_ama(self, z):\n"
        '        """Estimate static shift factors (AMA)."""\n        return z\n',
    )
    for i in range(6):
        write(root, f"docs/page{i}.rst", doc_source(rng, f"Page {i}"))
    write(
        root,
        "recipes/ss.md",
        "# Static shift recipe\n\nWorkflow: static_shift\n\n"
        "Correct a vertical offset between curves.\n\n## Code\n\nUse the agent.\n",
    )
    return rng


def fresh_build(root: Path, tmp: Path) -> Workspace:
    ws = Workspace(root, PROFILE, index_dir=tmp / f"full-{random.random()}", workers=1)
    ws.build()
    return ws


STAT_KEYS = (
    "n_chunks",
    "n_files",
    "n_terms",
    "by_kind",
    "by_workflow",
    "skipped",
    "fingerprint",
)


def assert_equivalent(inc: Workspace, full: Workspace) -> None:
    a, b = inc.stats(), full.stats()
    for key in STAT_KEYS:
        assert a[key] == b[key], key
    for q in QUERIES:
        for wf in (None, "static_shift"):
            ra = inc.query(q, k=50, workflow=wf)
            rb = full.query(q, k=50, workflow=wf)
            ids_a = [r["id"] for r in ra["results"]]
            ids_b = [r["id"] for r in rb["results"]]
            assert ids_a == ids_b, q
            assert np.allclose(
                [r["score"] for r in ra["results"]], [r["score"] for r in rb["results"]]
            ), q
            assert ra["n_candidates"] == rb["n_candidates"]
            assert [r["snippet"] for r in ra["results"]] == [
                r["snippet"] for r in rb["results"]
            ]
    # the live chunks themselves are identical
    assert {c.id: c for c in inc.snapshot.chunks()} == {
        c.id: c for c in full.snapshot.chunks()
    }


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, random.Random]:
    root = tmp_path / "corpus"
    rng = make_corpus(root)
    return root, rng


def test_incremental_edit_add_delete_equals_full_rebuild(corpus, tmp_path):
    root, rng = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    edited = write(root, "geo/io/mod3.py", module_source(rng, "mod3", 7))
    added = write(
        root,
        "geo/io/newmod.py",
        'def brand_new_function(x):\n    """A brand new function about tipper arrows."""\n',
    )
    (root / "geo/pt/mod2.py").unlink()
    doc = write(root, "docs/page1.rst", doc_source(rng, "Page one again"))
    report = ws.refresh([edited, added, root / "geo/pt/mod2.py", doc])
    assert report["changed"] == ["docs/page1.rst", "geo/io/mod3.py"]
    assert report["added"] == ["geo/io/newmod.py"]
    assert report["removed"] == ["geo/pt/mod2.py"]
    assert ws.snapshot.generation == 1
    assert_equivalent(ws, fresh_build(root, tmp_path))
    assert ws.query("brand_new_function")["results"][0]["symbol"] == (
        "geo.io.newmod.brand_new_function"
    )


def test_relative_paths_and_full_rescan(corpus, tmp_path):
    root, rng = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    write(root, "geo/mod4.py", module_source(rng, "mod4", 3))
    assert ws.refresh(["geo/mod4.py"])["changed"] == ["geo/mod4.py"]
    write(root, "geo/mod9.py", module_source(rng, "mod9", 3))
    (root / "docs/page2.rst").unlink()
    write(
        root, "docs/extra.md", "# Extra\n\nStatic shift notes about the ama filter.\n"
    )
    report = ws.refresh(None)  # no paths: re-hash everything
    assert report["changed"] == ["geo/mod9.py"]
    assert report["removed"] == ["docs/page2.rst"]
    assert report["added"] == ["docs/extra.md"]
    assert_equivalent(ws, fresh_build(root, tmp_path))


def test_a_folder_change_rescans(corpus, tmp_path):
    root, _ = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    (root / "geo/pt").rename(root / "geo/pt2")
    report = ws.refresh([root / "geo/pt2"])
    assert report["removed"] and report["added"]
    assert_equivalent(ws, fresh_build(root, tmp_path))


@pytest.mark.parametrize("seed", [1, 2])
def test_many_updates_past_compaction_equal_full_rebuild(tmp_path, seed):
    root = tmp_path / "corpus"
    rng = make_corpus(root, seed=seed)
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    mains = {ws.snapshot.bm25.main_n_slots}
    pool = sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))
    for step in range(40):
        action = rng.random()
        if action < 0.6 or len(pool) < 5:
            rel = rng.choice(pool)
            stem = Path(rel).stem
            write(root, rel, module_source(rng, stem, rng.randint(1, 8)))
        elif action < 0.8:
            rel = f"geo/io/added{step}.py"
            write(root, rel, module_source(rng, f"added{step}", rng.randint(1, 4)))
            pool.append(rel)
        else:
            rel = pool.pop(rng.randrange(len(pool)))
            (root / rel).unlink()
        ws.refresh([root / rel])
        mains.add(ws.snapshot.bm25.main_n_slots)
        if step % 10 == 9:
            assert_equivalent(ws, fresh_build(root, tmp_path))
    assert len(mains) > 1, "the delta segment was never compacted"
    assert_equivalent(ws, fresh_build(root, tmp_path))
    # and after persisting + loading the updated index
    ws.persist()
    again = Workspace(root, PROFILE, index_dir=ws.index_dir, workers=1)
    assert again.open()["action"] == "load"
    assert_equivalent(again, fresh_build(root, tmp_path))


def test_touch_and_unindexed_files_make_no_new_snapshot(corpus, tmp_path):
    root, _ = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    builds, snap = ws.builds, ws.snapshot
    p = root / "geo/mod4.py"
    p.write_bytes(p.read_bytes())  # same content, new mtime
    write(root, "geo/tests/test_mod.py", "def test_x():\n    pass\n")
    write(root, "geo/notes.txt", "not indexed")
    write(root, "elsewhere/x.py", "def f():\n    pass\n")
    report = ws.refresh([p, root / "geo/tests/test_mod.py", root / "geo/notes.txt"])
    assert report["changed"] == report["added"] == report["removed"] == []
    assert (
        ws.refresh([root / "elsewhere/x.py", "/outside/the/corpus.py"])["added"] == []
    )
    assert ws.refresh(None)["added"] == []
    assert ws.builds == builds and ws.snapshot is snap


def test_listeners_get_each_new_snapshot(corpus, tmp_path):
    root, rng = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    seen = []
    ws.listeners.append(seen.append)
    ws.listeners.append(lambda s: 1 / 0)  # a failing listener breaks nothing
    ws.build()
    write(root, "geo/mod4.py", module_source(rng, "mod4", 2))
    ws.refresh([root / "geo/mod4.py"])
    assert [s.generation for s in seen] == [0, 1]
    assert ws.chunk(ws.query("static shift")["results"][0]["id"]) is not None
    assert ws.chunk("geo/nothing.py:1:2") is None


def test_parallel_build_equals_serial_build(tmp_path):
    root = tmp_path / "corpus"
    make_corpus(root, seed=5, n_modules=230)  # above the parallel threshold
    serial = Workspace(root, PROFILE, index_dir=tmp_path / "a", workers=1)
    serial.build()
    par = Workspace(root, PROFILE, index_dir=tmp_path / "b", workers=2)
    par.build()
    assert_equivalent(par, serial)


def test_build_reports_progress(corpus, tmp_path):
    root, _ = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    seen: list[int] = []
    report = ws.build(lambda pct, msg: seen.append(pct))
    assert seen and seen == sorted(seen) and seen[0] >= 0 and seen[-1] <= 100
    assert report["action"] == "build" and report["n_chunks"] == ws.stats()["n_chunks"]


# -- bad files are skipped and counted, never fatal ---------------------------

BAD = {
    "geo/latin.py": "x = 'caf\u00e9'\n".encode("latin-1"),
    "geo/binary.py": b"\x00\x01\x02\x03 binary \xff\xfe",
    "docs/binary.md": b"# Title\n\x00\x00\x00",
    "geo/broken.py": b"def broken(:\n    pass\n",
    "geo/huge.py": b"# " + b"x" * 1_100_000 + b"\n",
}


def test_bad_files_are_skipped_and_counted(corpus, tmp_path):
    root, _ = corpus
    good = fresh_build(root, tmp_path)
    for rel, data in BAD.items():
        write(root, rel, data)
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    report = ws.build()
    assert report["skipped"] == len(BAD)
    st = ws.stats()
    assert st["skipped"] == len(BAD)
    assert st["n_chunks"] == good.stats()["n_chunks"]
    assert {
        r["source_path"] for r in ws.query("broken binary latin caf", k=50)["results"]
    }.isdisjoint(BAD)
    assert set(ws.snapshot.skipped) == set(BAD)
    # open() (persist + load) keeps the count
    ws.persist()
    again = Workspace(root, PROFILE, index_dir=ws.index_dir, workers=1)
    assert again.open()["action"] == "load"
    assert again.stats()["skipped"] == len(BAD)


def test_bad_files_arriving_incrementally_match_a_full_build(corpus, tmp_path):
    root, _ = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    paths = [write(root, rel, data) for rel, data in BAD.items()]
    ws.refresh(paths)
    assert ws.stats()["skipped"] == len(BAD)
    assert_equivalent(ws, fresh_build(root, tmp_path))
    # fixing the files un-skips them
    for p in paths:
        write(root, str(p.relative_to(root)), '"""Fixed static shift module."""\n')
    ws.refresh(paths)
    assert ws.stats()["skipped"] == 0
    assert_equivalent(ws, fresh_build(root, tmp_path))


def test_a_good_file_growing_too_large_is_counted_as_skipped(corpus, tmp_path):
    root, _ = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    p = write(root, "geo/mod4.py", b"# " + b"y" * 1_100_000 + b"\n")
    ws.refresh([p])
    full = fresh_build(root, tmp_path)
    assert full.stats()["skipped"] == 1
    assert ws.stats()["skipped"] == full.stats()["skipped"]
    assert_equivalent(ws, full)


def test_a_skipped_file_that_is_deleted_is_no_longer_counted(corpus, tmp_path):
    root, _ = corpus
    p = write(root, "geo/huge.py", b"# " + b"z" * 1_100_000 + b"\n")
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    assert ws.stats()["skipped"] == 1
    p.unlink()
    ws.refresh([p])
    ws.refresh(None)
    assert ws.stats()["skipped"] == fresh_build(root, tmp_path).stats()["skipped"] == 0


def test_an_append_tokenizes_only_new_chunks_and_equals_full_rebuild(
    corpus, tmp_path, monkeypatch
):
    import pycsamt_lsp.index.snapshot as snapshot_mod

    root, _ = corpus
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", workers=1)
    ws.build()
    target = root / "geo/core/ss/agent.py"
    before = len(ws.snapshot.files["geo/core/ss/agent.py"][1])
    tokenized: list[str] = []
    real = snapshot_mod.term_counts

    def counting(text: str):
        tokenized.append(text)
        return real(text)

    monkeypatch.setattr(snapshot_mod, "term_counts", counting)
    with open(target, "a", encoding="utf-8") as fh:
        fh.write('\n\ndef hampel_despike(z):\n    """Remove spikes."""\n    return z\n')
    ws.refresh([target])
    after = len(ws.snapshot.files["geo/core/ss/agent.py"][1])
    assert after == before + 1
    # the new function, and the module chunk whose text names it, at most
    assert 1 <= len(tokenized) <= 2
    assert any("hampel_despike" in t for t in tokenized)
    monkeypatch.undo()
    assert_equivalent(ws, fresh_build(root, tmp_path))


def test_a_dropped_server_workspace_is_freed_by_reference_counting(corpus, tmp_path):
    """The server freezes its index out of the cyclic collector (``heap``), so
    a replaced workspace (new corpus root) must not sit in a reference cycle:
    it would never be collected."""
    import gc
    import weakref

    root, _ = corpus
    gc.disable()
    try:
        ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", long_lived=True)
        ws.build()
        ws.model.suggest("geo.core.ss.agent.StaticShiftAgnt")
        assert ws.validate("from geo.core.ss.agent import StaticShiftAgnt\n")
        target = write(root, "geo/io/extra.py", 'def extra():\n    """x"""\n')
        ws.refresh([target])
        ws.persist()
        assert ws.query("extra")["results"]
        ws.model.suggest("geo.io.extra.extr")  # the new model's suggestion index
        refs = [weakref.ref(o) for o in (ws, ws.model, ws.snapshot)]
        del ws
        assert [r() for r in refs] == [None, None, None]
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_server_builds_a_large_corpus_in_a_child_process(
    corpus, tmp_path, monkeypatch
):
    import pycsamt_lsp.workspace.facade as workspace_mod

    root, _ = corpus
    monkeypatch.setattr(workspace_mod, "_PARALLEL_MIN_FILES", 1)
    seen: list[int] = []
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "idx", long_lived=True)
    try:
        report = ws.open(lambda pct, _msg: seen.append(pct))
        assert report["isolated"] is True
        assert seen and seen == sorted(seen)  # progress came through the pipe
        assert (tmp_path / "idx" / "manifest.json").exists()
        assert ws.stats()["loaded_from"] == "build"
        assert_equivalent(ws, fresh_build(root, tmp_path))
        # the package model the child persisted answers here
        assert ws.validate("from geo.core.ss.agent import StaticShiftAgent\n")["ok"]
        assert not ws.validate("from geo.core.ss.agent import StaticShiftAgnt\n")["ok"]
    finally:
        import gc

        gc.unfreeze()


def test_a_failed_build_process_falls_back_to_building_here(
    corpus, tmp_path, monkeypatch, caplog
):
    import pycsamt_lsp.workspace.facade as workspace_mod

    root, _ = corpus
    monkeypatch.setattr(workspace_mod, "_PARALLEL_MIN_FILES", 1)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the index folder should be")
    ws = Workspace(root, PROFILE, index_dir=blocker, long_lived=True)
    try:
        report = ws.open()
        assert "isolated" not in report
        assert ws.snapshot is not None and ws.snapshot.n_chunks > 0
        assert "the build process failed" in caplog.text
        assert ws.query("static shift")["results"]
    finally:
        import gc

        gc.unfreeze()
