"""The freshness record (issue 18, warm start): an open settles "the corpus is
unchanged" from ``stat`` alone only when nothing could have changed.

The first open after a build content-checks every file (DESIGN 3) and, when
that finds no change, records every path's stat; a later open whose stats
all match reads no corpus file and does not re-hash ``chunks.jsonl``. Any
edit (even one that keeps the size and restores the mtime), an added,
removed or renamed file, a new root document or an in-place corruption of
the index must still be seen: the open goes back to the content check and
applies the change, and a fresh CLI query answers from the updated index.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pycsamt_lsp import cli
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.index import mapped, store
from pycsamt_lsp.workspace import facade, freshness
from pycsamt_lsp.workspace.facade import Workspace

FILES = {
    "README.md": "# Fixture corpus\n\nFreshness tests.\n",
    "pycsamt/__init__.py": '"""The package."""\n',
    "pycsamt/emtools/ss.py": (
        '"""Static shift estimation (AMA)."""\n\n\n'
        "def estimate_ss_ama(z, n=3):\n"
        '    """Estimate static shift factors with the AMA filter."""\n'
        "    return z\n"
    ),
    "pycsamt/emtools/strike.py": (
        "def strike_from_phase_tensor(pt):\n"
        '    """Geoelectric strike direction from the phase tensor."""\n'
        "    return 0.0\n"
    ),
    "docs/source/index.rst": "Guide\n=====\n\nHow to correct static shift.\n",
}


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYCSAMT_LSP_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def settled(monkeypatch):
    """Treat every path as older than the racy window (the fixture corpus was
    written a moment ago; a real one was not)."""
    monkeypatch.setattr(freshness, "RACY_NS", -(10**15))


def make_corpus(root: Path) -> Path:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def built(tmp_path: Path) -> tuple[Path, Path]:
    root = make_corpus(tmp_path / "corpus")
    idx = tmp_path / "idx"
    Workspace(root, load_profile("pycsamt"), index_dir=idx).rebuild()
    return root, idx


def open_ws(root: Path, idx: Path) -> tuple[Workspace, dict]:
    ws = Workspace(root, load_profile("pycsamt"), index_dir=idx)
    return ws, ws.open()


def no_reads(monkeypatch) -> None:
    """Fail the test if the open hashes a corpus file or chunks.jsonl, or
    checks a CRC of index.npz (``names.npz``, which the record does not
    vouch for, is still checked)."""

    def refuse(*_a, **_k):
        raise AssertionError("read a file the stat record vouched for")

    monkeypatch.setattr(facade, "hash_file", refuse)
    monkeypatch.setattr(store, "_sha256_file", refuse)
    real_load_npz = store.load_npz

    def index_npz_unread(*args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(mapped, "zlib", SimpleNamespace(crc32=refuse))
            return real_load_npz(*args, **kwargs)

    monkeypatch.setattr(store, "load_npz", index_npz_unread)


def test_second_open_checks_by_stat_and_reads_nothing(tmp_path, settled, monkeypatch):
    root, idx = built(tmp_path)
    _, first = open_ws(root, idx)
    assert first["action"] == "load"
    assert first["update"]["checked"] == "content"
    assert (idx / freshness.RECORD_NAME).is_file()
    no_reads(monkeypatch)
    ws, second = open_ws(root, idx)
    assert second["action"] == "load"
    assert second["update"]["checked"] == "stat"
    assert second["fingerprint"] == first["fingerprint"]
    top = ws.query("estimate_ss_ama", k=3)["results"][0]
    assert top["symbol"] == "pycsamt.emtools.ss.estimate_ss_ama"
    assert "AMA filter" in top["snippet"]  # chunk text read from chunks.jsonl


def test_no_record_while_the_corpus_was_just_written(tmp_path):
    """A change in the same timestamp tick as the check would be invisible:
    the default racy window leaves a just-written corpus unrecorded."""
    root, idx = built(tmp_path)
    for _ in range(2):
        _, report = open_ws(root, idx)
        assert report["update"]["checked"] == "content"
    assert not (idx / freshness.RECORD_NAME).exists()


def _same_size_edit(root: Path) -> None:
    strike = root / "pycsamt/emtools/strike.py"
    old = strike.read_text()
    st = strike.stat()
    new = old.replace("strike_from_phase_tensor", "azimuth_of_the_tensor_xy")
    assert len(new) == len(old)
    strike.write_text(new)
    os.utime(strike, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime as it was
    assert strike.stat().st_size == st.st_size


CHANGES = {
    "same_size_edit": (_same_size_edit, "azimuth_of_the_tensor_xy"),
    "append": (
        lambda r: (r / "pycsamt/emtools/ss.py").write_text(
            (r / "pycsamt/emtools/ss.py").read_text()
            + "\n\ndef azimuth_of_the_tensor_xy():\n    pass\n"
        ),
        "azimuth_of_the_tensor_xy",
    ),
    "add_in_subfolder": (
        lambda r: (r / "pycsamt/emtools/new.py").write_text(
            "def azimuth_of_the_tensor_xy():\n    pass\n"
        ),
        "azimuth_of_the_tensor_xy",
    ),
    "add_subfolder": (
        lambda r: (
            (r / "pycsamt/emtools/deep").mkdir(),
            (r / "pycsamt/emtools/deep/mod.py").write_text(
                "def azimuth_of_the_tensor_xy():\n    pass\n"
            ),
        ),
        "azimuth_of_the_tensor_xy",
    ),
    "add_root_doc": (
        lambda r: (r / "AGENTS.md").write_text(
            "# Agents\n\nazimuth_of_the_tensor_xy notes.\n"
        ),
        None,
    ),
    "remove": (lambda r: (r / "pycsamt/emtools/strike.py").unlink(), None),
    "rename": (
        lambda r: (r / "pycsamt/emtools/strike.py").rename(
            r / "pycsamt/emtools/azimuth.py"
        ),
        None,
    ),
    "chmod_only": (lambda r: (r / "pycsamt/emtools/ss.py").chmod(0o600), None),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_any_change_after_the_record_goes_back_to_the_content_check(
    tmp_path, settled, change
):
    root, idx = built(tmp_path)
    open_ws(root, idx)  # content check, record written
    assert (idx / freshness.RECORD_NAME).is_file()
    do, name = CHANGES[change]
    do(root)
    ws, report = open_ws(root, idx)
    assert report["update"]["checked"] == "content"
    ref = Workspace(root, load_profile("pycsamt"), index_dir=tmp_path / "ref")
    ref.build()
    assert ws.snapshot.fingerprint == ref.snapshot.fingerprint
    assert set(ws.snapshot.files) == set(ref.snapshot.files)
    if change == "chmod_only":  # same bytes: loaded as is, recorded again
        assert report["action"] == "load"
        assert open_ws(root, idx)[1]["update"]["checked"] == "stat"
    else:
        assert report["action"] == "load+update"
    if name is not None:
        top = ws.query(name, k=3)["results"][0]
        assert top["symbol"].endswith(name)


def test_chunks_jsonl_corrupted_in_place_is_rebuilt(tmp_path, settled):
    root, idx = built(tmp_path)
    open_ws(root, idx)
    chunks = idx / "chunks.jsonl"
    data = bytearray(chunks.read_bytes())
    i = data.index(b"AMA filter")
    data[i : i + 3] = b"XYZ"  # same size, same inode
    with open(chunks, "r+b") as fh:
        fh.write(data)
    _, report = open_ws(root, idx)
    assert "corrupt" in report.get("reason", "")
    assert report["action"] != "load"


def test_index_npz_corrupted_in_place_is_rebuilt(tmp_path, settled):
    """A mapped array's bytes changed after the record: its stat changed, so
    its CRC is checked again and the index rebuilt."""
    root, idx = built(tmp_path)
    open_ws(root, idx)
    npz = idx / "index.npz"
    data = bytearray(npz.read_bytes())
    mid = len(data) // 2
    data[mid] ^= 0xFF
    with open(npz, "r+b") as fh:
        fh.write(data)
    ws, report = open_ws(root, idx)
    assert report["action"] != "load" and report.get("reason")
    top = ws.query("estimate_ss_ama", k=3)["results"][0]
    assert top["symbol"] == "pycsamt.emtools.ss.estimate_ss_ama"


def test_a_record_of_another_build_is_ignored(tmp_path, settled):
    root, idx = built(tmp_path)
    open_ws(root, idx)
    Workspace(root, load_profile("pycsamt"), index_dir=idx).rebuild()  # new build_id
    _, report = open_ws(root, idx)
    assert report["update"]["checked"] == "content"


def run_main(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(list(argv))
    return code, buf.getvalue()


def test_a_fresh_cli_query_on_a_stale_corpus_answers_from_the_new_content(
    tmp_path, settled
):
    """Through the CLI: queries that trust the record, then an edit that keeps
    size and mtime; the next query process sees it and answers from it."""
    root = make_corpus(tmp_path / "corpus")
    common = ["--root", str(root), "--index-dir", str(tmp_path / "idx"), "--json"]
    assert run_main("build", *common)[0] == 0
    for _ in range(2):
        code, out = run_main("query", "strike_from_phase_tensor", *common)
        assert code == 0
        top = json.loads(out)["results"][0]["symbol"]
        assert top == "pycsamt.emtools.strike.strike_from_phase_tensor"
    _same_size_edit(root)
    code, out = run_main("query", "azimuth_of_the_tensor_xy", *common)
    assert code == 0
    top = json.loads(out)["results"][0]["symbol"]
    assert top == "pycsamt.emtools.strike.azimuth_of_the_tensor_xy"


def test_a_corpus_with_a_symlinked_file_is_always_content_checked(tmp_path, settled):
    """A link's target can change without the link's own stat changing."""
    root = make_corpus(tmp_path / "corpus")
    target = root / "pycsamt/emtools/strike.py"
    os.symlink(target, root / "pycsamt/emtools/alias.py")
    idx = tmp_path / "idx"
    Workspace(root, load_profile("pycsamt"), index_dir=idx).rebuild()
    for _ in range(2):
        _, report = open_ws(root, idx)
        assert report["update"]["checked"] == "content"
    assert not (idx / freshness.RECORD_NAME).exists()


def test_the_name_field_saved_by_the_first_reader_loads_back_to_the_bit(tmp_path):
    """names.npz (workspace/warm.py): written by the first open of an index,
    read by the next; the same field as one built from the symbol column,
    the same rankings, and a save updates it as it would a built one."""
    from pycsamt_lsp.search.fields import NameField, PackedPostings
    from pycsamt_lsp.workspace.published import Published
    from pycsamt_lsp.workspace.warm import NAMES_FILE

    root, idx = built(tmp_path)
    first, _ = open_ws(root, idx)
    assert (idx / NAMES_FILE).is_file()
    ws, _ = open_ws(root, idx)
    loaded = ws.published.aux.stages.names
    assert isinstance(loaded.postings, PackedPostings)
    snap = ws.snapshot
    fresh = Published.of(snap).aux.stages.names
    assert not isinstance(fresh.postings, PackedPostings)
    a, b = loaded.to_arrays(), fresh.to_arrays()
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
    for q in ("estimate_ss_ama", "static shift", "phase tensor strike"):
        assert ws.query(q, k=5) == first.query(q, k=5)
    # a save: the loaded field is updated as the built one would be
    ss = root / "pycsamt/emtools/ss.py"
    ss.write_text(ss.read_text() + "\n\ndef estimate_ss_median():\n    pass\n")
    ws.refresh([ss])
    first.refresh([ss])
    a = ws.published.aux.stages.names.to_arrays()
    b = first.published.aux.stages.names.to_arrays()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert ws.query("estimate_ss_median", k=3) == first.query("estimate_ss_median", k=3)
    # arrays that disagree are refused
    bad = dict(fresh.to_arrays())
    bad["ptr"] = bad["ptr"][:-1]
    with pytest.raises(ValueError):
        NameField.from_arrays(bad)


def test_a_name_field_of_another_build_is_not_used(tmp_path):
    from pycsamt_lsp.search.fields import PackedPostings
    from pycsamt_lsp.workspace.warm import NAMES_FILE

    root, idx = built(tmp_path)
    open_ws(root, idx)
    saved = (idx / NAMES_FILE).read_bytes()
    Workspace(root, load_profile("pycsamt"), index_dir=idx).rebuild()
    (idx / NAMES_FILE).write_bytes(saved)  # the old build's field
    ws, _ = open_ws(root, idx)
    assert not isinstance(ws.published.aux.stages.names.postings, PackedPostings)


def test_prepare_slices_the_loaded_field_once_for_the_updates(tmp_path):
    """Published.prepare (the server, after its first answer) does the
    postings' slicing a first save would do; updates then copy that dict,
    and the results are those of an unprepared field."""
    from pycsamt_lsp.search.fields import PackedPostings

    root, idx = built(tmp_path)
    open_ws(root, idx)
    ws, _ = open_ws(root, idx)
    other, _ = open_ws(root, idx)
    postings = ws.published.aux.stages.names.postings
    assert isinstance(postings, PackedPostings)
    ws.published.prepare()
    first = postings.materialized()
    again = postings.materialized()
    assert first == again and first is not again  # a copy each time
    assert all(first[t][0] is again[t][0] for t in first)  # sliced once
    ss = root / "pycsamt/emtools/ss.py"
    ss.write_text(ss.read_text() + "\n\ndef estimate_ss_median():\n    pass\n")
    ws.refresh([ss])
    other.refresh([ss])
    a = ws.published.aux.stages.names.to_arrays()
    b = other.published.aux.stages.names.to_arrays()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert postings.materialized() == again  # an update never edits the source


def test_index_files_rewritten_with_the_same_bytes_are_verified_once(
    tmp_path, settled, monkeypatch
):
    """A copied or restored index folder (new inodes and ctimes, the same
    bytes) over an unchanged corpus: the next open verifies the index files
    by content once and records them, and the open after it reads nothing."""
    root, idx = built(tmp_path)
    _, first = open_ws(root, idx)
    assert first["update"]["checked"] == "content"
    for name in ("chunks.jsonl", "index.npz"):
        path = idx / name
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)  # same bytes, a new inode
    _, second = open_ws(root, idx)
    assert second["action"] == "load"
    assert second["update"]["checked"] == "stat"  # the corpus did not change
    no_reads(monkeypatch)
    ws, third = open_ws(root, idx)
    assert third["action"] == "load" and third["update"]["checked"] == "stat"
    assert third["fingerprint"] == first["fingerprint"]
    top = ws.query("estimate_ss_ama", k=3)["results"][0]
    assert top["symbol"] == "pycsamt.emtools.ss.estimate_ss_ama"
