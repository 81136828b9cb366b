"""The persisted index: round trip, stale detection, corrupt index recovery."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from pycsamt_lsp import INDEX_VERSION, __version__
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.index import store
from pycsamt_lsp.index.store import (
    IndexLoadError,
    default_index_dir,
    load_snapshot,
    save_snapshot,
)
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
        },
        "workflow_paths": [["geo/core/ss", "static_shift"]],
    }
)

FILES = {
    "geo/__init__.py": '"""The geo package: static shift and phase tensors."""\n',
    "geo/core/ss.py": (
        '"""Static shift correction."""\n\n\n'
        "def estimate_ss_ama(z, n=3):\n"
        '    """Estimate static shift factors with the AMA filter."""\n'
        "    return z\n\n\n"
        "class StaticShiftAgent:\n"
        '    """Detect and correct galvanic static shift."""\n\n'
        "    def __init__(self, method='ama'):\n"
        "        self.method = method\n\n"
        "    def run(self, data):\n"
        '        """Run the correction."""\n'
        "        return data\n"
    ),
    "geo/core/pt.py": (
        '"""Phase tensor analysis."""\n\n\n'
        "def strike_angle(pt):\n"
        '    """Strike direction from the phase tensor."""\n'
        "    return 0.0\n"
    ),
    "geo/util.py": 'def helper(x):\n    """Generic helper."""\n    return x\n',
    "docs/guide.md": "# Guide\n\nHow to correct static shift.\n\n## Strike\n\nPhase tensor strike.\n",
    "recipes/ss.md": "# Recipe\n\nWorkflow: static_shift\n\nCall estimate_ss_ama.\n",
}
QUERIES = ["static shift", "phase tensor strike", "helper", "estimate_ss_ama", "recipe"]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "corpus"
    write_tree(r, FILES)
    return r


def make_ws(root: Path, idx: Path) -> Workspace:
    return Workspace(root, PROFILE, index_dir=idx, workers=1)


def results(ws: Workspace, q: str) -> list[tuple[str, float]]:
    return [(r["id"], r["score"]) for r in ws.query(q, k=20)["results"]]


@pytest.fixture
def persisted(root: Path, tmp_path: Path) -> tuple[Workspace, Path]:
    idx = tmp_path / "idx"
    ws = make_ws(root, idx)
    report = ws.open()
    assert report["action"] == "build"
    assert (idx / "manifest.json").is_file()
    return ws, idx


def test_first_open_builds_and_persists(persisted):
    ws, idx = persisted
    assert {p.name for p in idx.iterdir()} >= {"manifest.json", "chunks.jsonl"}
    assert not [p for p in idx.iterdir() if p.name.startswith(".")]  # no temp files
    assert ws.stats()["persisted"] is True


def test_manifest_fields(persisted, root):
    ws, idx = persisted
    m = json.loads((idx / "manifest.json").read_text())
    st = ws.stats()
    assert m["index_version"] == INDEX_VERSION
    assert m["tool_version"] == __version__
    assert m["created"]
    assert m["n_chunks"] == st["n_chunks"]
    assert m["counts_by_kind"] == st["by_kind"]
    assert m["counts_by_workflow"] == dict(sorted(st["by_workflow"].items()))
    assert m["source_fingerprint"] == st["fingerprint"]
    assert m["embedded"] is False and "embed_model" in m
    assert m["corpus_root"] == str(root.resolve())
    assert m["profile"] == "fixture"


def test_chunks_jsonl_is_inspectable(persisted):
    ws, idx = persisted
    lines = (idx / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == ws.stats()["n_chunks"]
    recs = [json.loads(ln) for ln in lines]
    for r in recs:
        assert set(r) >= {
            "id",
            "text",
            "source_path",
            "kind",
            "symbol",
            "workflow",
            "priority",
            "metadata",
        }
    agent = next(r for r in recs if r["symbol"] == "geo.core.ss.StaticShiftAgent")
    assert agent["kind"] == "python_symbol"
    assert agent["workflow"] == "static_shift"
    assert agent["priority"] == 3
    assert agent["metadata"]["line_start"] == 9
    assert [p["name"] for p in agent["metadata"]["params"]] == ["method"]


def test_load_roundtrip_gives_the_same_answers(persisted, root, tmp_path):
    ws, idx = persisted
    again = make_ws(root, idx)
    report = again.open()
    assert report["action"] == "load"
    assert report["update"]["changed"] == [] == report["update"]["added"]
    assert again.stats()["loaded_from"] == "disk"
    for q in QUERIES:
        assert results(again, q) == results(ws, q)
        # snippets and labels are read back from chunks.jsonl
        assert again.query(q) == ws.query(q)
    a = {c.id: c for c in again.snapshot.chunks()}
    b = {c.id: c for c in ws.snapshot.chunks()}
    assert a == b
    for k in (
        "n_chunks",
        "n_files",
        "by_kind",
        "by_workflow",
        "fingerprint",
        "n_terms",
    ):
        assert again.stats()[k] == ws.stats()[k]


def test_save_and_load_snapshot_directly(persisted, tmp_path):
    ws, _ = persisted
    d = tmp_path / "direct"
    m = save_snapshot(ws.snapshot, d, {"profile": "fixture", "corpus_root": "x"})
    snap, m2 = load_snapshot(d, profile_name="fixture")
    assert m == m2
    q = ["static", "shift"]
    order = np.fromiter(ws.snapshot.alive_slots(), np.int64)
    np.testing.assert_allclose(snap.bm25.scores(q), ws.snapshot.bm25.scores(q)[order])
    with pytest.raises(IndexLoadError, match="profile"):
        load_snapshot(d, profile_name="other")
    with pytest.raises(IndexLoadError):
        load_snapshot(tmp_path / "nothing-here", profile_name="fixture")


def test_stale_index_is_updated_on_open(persisted, root):
    _, idx = persisted
    (root / "geo/util.py").write_text(
        'def helper(x):\n    """Changed helper about strike."""\n    return x\n'
    )
    (root / "geo/new.py").write_text('def brand_new():\n    """New."""\n')
    (root / "docs/guide.md").unlink()
    again = make_ws(root, idx)
    report = again.open()
    assert report["action"] == "load+update"
    assert report["update"]["changed"] == ["geo/util.py"]
    assert report["update"]["added"] == ["geo/new.py"]
    assert report["update"]["removed"] == ["docs/guide.md"]
    fresh = make_ws(root, idx.parent / "fresh")
    fresh.build()
    assert again.stats()["fingerprint"] == fresh.stats()["fingerprint"]
    for q in [*QUERIES, "brand_new", "changed helper"]:
        got, want = results(again, q), results(fresh, q)
        assert [g[0] for g in got] == [w[0] for w in want]
        np.testing.assert_allclose([g[1] for g in got], [w[1] for w in want])
    # the update was persisted: the next open is a plain load
    third = make_ws(root, idx)
    assert third.open()["action"] == "load"
    assert third.stats()["fingerprint"] == fresh.stats()["fingerprint"]


def test_touch_is_not_stale(persisted, root):
    _, idx = persisted
    p = root / "geo/util.py"
    os.utime(p, (p.stat().st_atime + 50, p.stat().st_mtime + 50))
    assert make_ws(root, idx).open()["action"] == "load"


# -- corrupt or foreign indexes are rebuilt, never raised --------------------


def _garbage_chunks(idx: Path) -> None:
    p = idx / "chunks.jsonl"
    data = bytearray(p.read_bytes())
    data[10:20] = b"#GARBAGE!#"
    p.write_bytes(bytes(data))


def _garbage_line(idx: Path) -> None:
    with open(idx / "chunks.jsonl", "ab") as fh:
        fh.write(b"{not json at all\n")


def _truncate_npz(idx: Path) -> None:
    p = idx / "index.npz"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _flipped_npz(idx: Path) -> None:
    p = idx / "index.npz"
    data = bytearray(p.read_bytes())
    mid = len(data) // 3
    data[mid : mid + 8] = bytes(b ^ 0xFF for b in data[mid : mid + 8])
    p.write_bytes(bytes(data))


def _empty_npz(idx: Path) -> None:
    (idx / "index.npz").write_bytes(b"")


def _foreign_version(idx: Path) -> None:
    p = idx / "manifest.json"
    m = json.loads(p.read_text())
    m["index_version"] = INDEX_VERSION + 99
    p.write_text(json.dumps(m))


def _no_version(idx: Path) -> None:
    p = idx / "manifest.json"
    m = json.loads(p.read_text())
    del m["index_version"]
    p.write_text(json.dumps(m))


def _mismatched_build_ids(idx: Path) -> None:
    p = idx / "manifest.json"
    m = json.loads(p.read_text())
    m["build_id"] = "0" * 32
    p.write_text(json.dumps(m))


def _meta_from_other_build(idx: Path) -> None:
    p = idx / "meta.json"
    m = json.loads(p.read_text())
    m["build_id"] = "1" * 32
    p.write_text(json.dumps(m))


def _manifest_not_json(idx: Path) -> None:
    (idx / "manifest.json").write_text("{{{")


def _manifest_a_list(idx: Path) -> None:
    (idx / "manifest.json").write_text("[1, 2]")


def _missing_meta(idx: Path) -> None:
    (idx / "meta.json").unlink()


def _missing_chunks(idx: Path) -> None:
    (idx / "chunks.jsonl").unlink()


def _meta_garbage(idx: Path) -> None:
    (idx / "meta.json").write_text('{"build_id": 3, "ids": 5}')


def _wrong_chunk_count(idx: Path) -> None:
    p = idx / "manifest.json"
    m = json.loads(p.read_text())
    m["n_chunks"] += 1
    p.write_text(json.dumps(m))


def _other_profile(idx: Path) -> None:
    p = idx / "manifest.json"
    m = json.loads(p.read_text())
    m["profile"] = "someone-else"
    p.write_text(json.dumps(m))


CORRUPTIONS = {
    "garbage in chunks.jsonl": (_garbage_chunks, "chunks.jsonl"),
    "extra garbage line": (_garbage_line, "chunks.jsonl"),
    "truncated index.npz": (_truncate_npz, "unreadable"),
    "bytes flipped in index.npz": (_flipped_npz, ""),
    "empty index.npz": (_empty_npz, "unreadable"),
    "foreign index_version": (_foreign_version, "version"),
    "missing index_version": (_no_version, "version"),
    "manifest build id differs": (_mismatched_build_ids, "builds"),
    "meta build id differs": (_meta_from_other_build, "builds"),
    "manifest not JSON": (_manifest_not_json, "manifest"),
    "manifest not an object": (_manifest_a_list, "manifest"),
    "meta.json missing": (_missing_meta, "unreadable"),
    "chunks.jsonl missing": (_missing_chunks, ""),
    "meta.json inconsistent": (_meta_garbage, ""),
    "wrong chunk count": (_wrong_chunk_count, "number of chunks"),
    "other profile": (_other_profile, "profile"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corrupt_index_is_rebuilt_with_a_reason(persisted, root, name, caplog):
    ws, idx = persisted
    corrupt, reason_word = CORRUPTIONS[name]
    corrupt(idx)
    again = make_ws(root, idx)
    with caplog.at_level(logging.INFO, logger="pycsamt_lsp"):
        report = again.open()  # never raises
    assert report["action"] == "build"
    assert report.get("reason"), report
    assert reason_word.lower() in report["reason"].lower()
    assert any(report["reason"] in r.getMessage() for r in caplog.records)
    for q in QUERIES:
        assert results(again, q) == results(ws, q)
    # the rebuilt index was persisted and now loads cleanly
    assert make_ws(root, idx).open()["action"] == "load"


def test_missing_index_reason(root, tmp_path):
    report = make_ws(root, tmp_path / "none").open()
    assert report["action"] == "build"
    assert "no persisted index" in report["reason"]


def test_open_without_persist_writes_nothing(root, tmp_path):
    idx = tmp_path / "np"
    make_ws(root, idx).open(persist=False)
    assert not (idx / "manifest.json").exists()


# -- where the index goes ---------------------------------------------------


def test_default_index_dir_is_under_a_writable_root(root, tmp_path):
    assert default_index_dir(root, tmp_path / "cache") == root / ".pycsamt_rag"


def test_read_only_root_puts_the_index_in_the_cache_dir(root, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PYCSAMT_LSP_CACHE", str(cache))
    if os.geteuid() == 0:
        # root ignores permission bits: answer os.access like a normal user
        real_access = os.access

        def access(path, mode, *a, **kw):
            p = Path(path).resolve()
            if mode & os.W_OK and (p == root.resolve() or root.resolve() in p.parents):
                return False
            return real_access(path, mode, *a, **kw)

        monkeypatch.setattr(store.os, "access", access)
    modes = {}
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        modes[d] = d.stat().st_mode
        d.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        ws = Workspace(root, PROFILE, workers=1)
        assert cache in ws.index_dir.parents
        report = ws.open()
        assert report["action"] == "build"
        assert (ws.index_dir / "manifest.json").is_file()
        assert not (root / ".pycsamt_rag").exists()
        again = Workspace(root, PROFILE, workers=1)
        assert again.index_dir == ws.index_dir
        assert again.open()["action"] == "load"
        assert results(again, "static shift") == results(ws, "static shift")
    finally:
        for d, m in modes.items():
            d.chmod(m)


def test_persist_failure_is_logged_not_raised(root, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the index folder should be")
    ws = make_ws(root, blocker / "idx")
    report = ws.open()  # persisting fails; answering still works
    assert report["action"] == "build"
    assert ws.persist() is None
    assert ws.query("static shift")["results"]
