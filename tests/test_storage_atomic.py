"""One atomic writer (temp file + fsync + rename) for every index file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pycsamt_lsp.storage import atomic
from pycsamt_lsp.storage.atomic import (
    atomic_write,
    atomic_write_bytes,
    atomic_write_text,
)


@pytest.fixture
def io_events(monkeypatch) -> list[str]:
    """The order of ``fsync`` and ``replace`` calls the atomic writers make
    (each call still done for real)."""
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(
        atomic.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1]
    )
    monkeypatch.setattr(
        atomic.os,
        "replace",
        lambda a, b: (events.append("replace"), real_replace(a, b))[1],
    )
    return events


def test_writes_replace_the_file(tmp_path: Path):
    p = tmp_path / "f.json"
    atomic_write_text(p, "one")
    atomic_write_bytes(p, b"two")
    assert p.read_bytes() == b"two"
    assert [x.name for x in tmp_path.iterdir()] == ["f.json"]


def test_data_is_synced_before_the_rename(tmp_path: Path, io_events: list[str]):
    events = io_events
    atomic_write_text(tmp_path / "x", "data")
    assert events == ["fsync", "replace"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"old")

    def boom(fh):
        fh.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(p, boom)
    assert p.read_bytes() == b"old"
    assert [x.name for x in tmp_path.iterdir()] == ["f.bin"]


def test_no_other_module_writes_temp_files_by_hand():
    pkg = Path(atomic.__file__).resolve().parents[1]
    hand = [
        str(f.relative_to(pkg))
        for f in pkg.rglob("*.py")
        if f.name != "atomic.py" and "os.replace(" in f.read_text(encoding="utf-8")
    ]
    assert hand == []


def test_a_staged_file_appears_only_when_committed(tmp_path: Path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"old")
    staged = atomic.staged_write(p, lambda fh: fh.write(b"new"))
    assert p.read_bytes() == b"old"  # written and synced, not in place yet
    staged.commit()
    assert p.read_bytes() == b"new"
    assert [x.name for x in tmp_path.iterdir()] == ["f.bin"]
    with pytest.raises(ValueError):
        staged.commit()  # once
    staged.discard()  # after a commit: nothing to remove
    assert p.read_bytes() == b"new"


def test_a_discarded_or_failed_stage_leaves_the_old_file_and_no_temp(tmp_path: Path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"old")
    atomic.staged_write(p, lambda fh: fh.write(b"new")).discard()

    def boom(fh):
        fh.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic.staged_write(p, boom)
    assert p.read_bytes() == b"old"
    assert [x.name for x in tmp_path.iterdir()] == ["f.bin"]


def test_a_stage_is_synced_before_its_rename(tmp_path: Path, io_events: list[str]):
    events = io_events
    staged = atomic.staged_write(tmp_path / "x", lambda fh: fh.write(b"data"))
    assert events == ["fsync"]
    staged.commit()
    assert events == ["fsync", "replace"]


def test_a_write_that_need_not_be_durable_is_renamed_unsynced(
    tmp_path: Path, io_events: list[str]
):
    events = io_events
    p = tmp_path / "manifest.json"
    atomic_write(p, lambda fh: fh.write(b"{}"), durable=False)
    assert events == ["replace"]
    assert p.read_bytes() == b"{}"
    assert [x.name for x in tmp_path.iterdir()] == ["manifest.json"]
