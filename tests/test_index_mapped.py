"""``index.npz`` loaded with its posting arrays memory-mapped (index/mapped.py).

The mapped arrays must equal what ``np.load`` reads, be read-only views of
the file, fail on a damaged member exactly where ``np.load`` would (CRC), and
leave a loaded index fully usable: queries, incremental updates and a later
persist that replaces the file under the mapping.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from pycsamt_lsp.index import mapped
from pycsamt_lsp.index.mapped import MAPPED_ARRAYS, load_npz, shared_strings
from pycsamt_lsp.index.store import IndexLoadError, load_snapshot
from test_store import FILES, PROFILE, QUERIES, make_ws, results, write_tree


@pytest.fixture
def persisted(tmp_path: Path):
    root = tmp_path / "corpus"
    write_tree(root, FILES)
    idx = tmp_path / "idx"
    ws = make_ws(root, idx)
    assert ws.open()["action"] == "build"
    return root, idx, ws


def test_mapped_arrays_equal_np_load_and_are_read_only(persisted) -> None:
    _root, idx, _ws = persisted
    path = idx / "index.npz"
    got = load_npz(path)
    with np.load(path) as z:
        want = {k: z[k] for k in z.files}
    assert got.keys() == want.keys()
    for name, arr in got.items():
        assert arr.dtype == want[name].dtype and np.array_equal(arr, want[name])
        assert arr.flags.writeable == (name not in MAPPED_ARRAYS), name


def _flip_in_member(path: Path, member: str) -> None:
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    data = bytearray(path.read_bytes())
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 200
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_damaged_mapped_member_is_refused(persisted) -> None:
    _root, idx, _ws = persisted
    _flip_in_member(idx / "index.npz", "main_doc.npy")
    with pytest.raises(zipfile.BadZipFile):
        load_npz(idx / "index.npz")
    with pytest.raises(IndexLoadError, match="unreadable"):
        load_snapshot(idx, profile_name=PROFILE.name)


def test_loaded_index_answers_updates_and_persists(persisted) -> None:
    root, idx, ws = persisted
    before = {q: results(ws, q) for q in QUERIES}
    again = make_ws(root, idx)
    assert again.open()["action"] == "load"
    assert not again.snapshot.bm25.main_doc.flags.writeable  # mapped
    assert {q: results(again, q) for q in QUERIES} == before
    # an edit updates the mapped index (new arrays, nothing written in place)
    target = root / "geo" / "util.py"
    target.write_text(
        target.read_text() + "\n\ndef galvanic_marker(x):\n    return x\n"
    )
    again.refresh([target])
    hits = again.query("galvanic_marker", k=5)["results"]
    assert hits and hits[0]["symbol"].endswith("galvanic_marker")
    # persisting replaces index.npz under the old mapping; both stay readable
    again.persist()
    third = make_ws(root, idx)
    assert third.open()["action"] == "load"
    assert results(third, "galvanic_marker") == results(again, "galvanic_marker")
    assert {q: results(again, q) for q in QUERIES} == {
        q: results(third, q) for q in QUERIES
    }


def test_shared_strings_keeps_values_and_shares_objects() -> None:
    raw = ["a/b.py", None, "a/" + "b.py", "x"]
    got = shared_strings(raw)
    assert got == raw
    assert got[0] is got[2]


def _arrays() -> dict[str, np.ndarray]:
    return {
        "main_doc": np.arange(5000, dtype=np.int32),
        "vocab": np.frombuffer(b"alpha\x00beta", np.uint8),
        "grid": np.arange(12, dtype=np.float64).reshape(3, 4),
        "scalar": np.array(7, np.int64),
        "flags": np.array([True, False]),
    }


def _same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert list(got) == list(want)
    for name, arr in want.items():
        assert got[name].dtype == arr.dtype and got[name].shape == arr.shape, name
        assert np.array_equal(got[name], arr), name


def test_a_savez_file_is_read_directly_with_np_load_s_arrays(tmp_path, monkeypatch):
    """What np.savez writes is read without np.load (no zipfile, no
    literal_eval of the headers): the same arrays, the unmapped ones
    writable copies."""
    path = tmp_path / "a.npz"
    np.savez(path, **_arrays())

    def no_numpy(*_a, **_k):
        raise AssertionError("went through np.load")

    monkeypatch.setattr(mapped, "_load_with_numpy", no_numpy)
    got = load_npz(path)
    _same(got, _arrays())
    assert not got["main_doc"].flags.writeable  # mapped
    assert got["grid"].flags.writeable and got["grid"].flags.owndata


def test_other_npz_files_go_through_np_load(tmp_path) -> None:
    path = tmp_path / "c.npz"
    np.savez_compressed(path, **_arrays())
    _same(load_npz(path), _arrays())
    fortran = tmp_path / "f.npz"
    np.savez(fortran, grid=np.asfortranarray(_arrays()["grid"]))
    _same(load_npz(fortran), {"grid": _arrays()["grid"]})


def test_a_damaged_copied_member_is_refused_as_zipfile_would(tmp_path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **_arrays())
    _flip_in_member(path, "grid.npy")
    with pytest.raises(zipfile.BadZipFile):
        load_npz(path)
    # vouched for by the caller (a freshness record): not re-checked
    assert load_npz(path, check_crc=False).keys() == _arrays().keys()
