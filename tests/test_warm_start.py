"""Warm start (issue 18): a fresh process on a built index, through the CLI.

What a fresh ``pycsamt-lsp query`` does must stay correct while it does
less: the fingerprint check is still a content check (DESIGN 3: an edit that
keeps the size and the mtime is seen), it lists and reads each file once
(the listing's screening, with its folder cache, refuses exactly what the
uncached check refuses), it publishes the same skips and changes a full
refresh would, and it imports none of the build's modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_tree import write_odd_files, write_outside_links
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.corpus.safety import file_refusal, screen
from pycsamt_lsp.workspace.facade import Workspace

FILES = {
    "README.md": "# Fixture corpus\n\nWarm start tests.\n",
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
    "pycsamt/broken.py": "def oops(:\n",
    "docs/source/index.rst": "Guide\n=====\n\nHow to correct static shift.\n",
}

#: modules only a build or an update needs (chunkers, the package model,
#: worker pools): a warm query must not import them
BUILD_ONLY = (
    "pycsamt_lsp.chunking.python",
    "pycsamt_lsp.chunking.docs",
    "pycsamt_lsp.text.secrets",
    "pycsamt_lsp.model.package",
    "pycsamt_lsp.model.state",
    "pycsamt_lsp.model.extract",
    "pycsamt_lsp.index.workers",
    "pycsamt_lsp.workspace.isolated",
    "concurrent.futures.process",
)


def make_corpus(root: Path) -> Path:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYCSAMT_LSP_CACHE", str(tmp_path / "cache"))


def run_cli(*argv: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(cache))
    return subprocess.run(
        [sys.executable, "-m", "pycsamt_lsp", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_screen_with_its_folder_cache_refuses_what_the_plain_check_refuses(
    tmp_path,
):
    root = tmp_path / "corpus"
    pkg = root / "pycsamt"
    pkg.mkdir(parents=True)
    write_odd_files(pkg, huge=False)
    outside = tmp_path / "outside"
    (root / "pkg").mkdir()
    (root / "docs").mkdir()
    (root / "pkg" / "phase.py").write_text("z = 3\n")
    write_outside_links(root, outside)
    # a linked folder inside the corpus, and one leading out of it
    (pkg / "real").mkdir()
    (pkg / "real" / "mod.py").write_text("x = 1\n")
    os.symlink(pkg / "real", pkg / "alias")
    os.symlink(outside, pkg / "out_dir")
    (outside / "far.py").write_text("y = 2\n")
    items = []
    for dirpath, dirs, names in os.walk(os.fsencode(root)):
        for name in names + [
            d for d in dirs if os.path.islink(os.path.join(dirpath, d))
        ]:
            path = Path(os.fsdecode(os.path.join(dirpath, name)))
            items.append((path.relative_to(root).as_posix(), path))
    # files reached through the linked folders (os.walk does not follow them)
    for rel in ("pycsamt/alias/mod.py", "pycsamt/out_dir/far.py"):
        items.append((rel, root / rel))
    assert len(items) > 10
    plain = {rel: file_refusal(root, rel, path) for rel, path in items}
    refused: dict[str, str] = {}
    kept = {rel for rel, _ in screen(root, items, refused)}
    assert kept == {rel for rel, why in plain.items() if why is None}
    assert refused  # the odd files and the links out are refused ...
    assert "pycsamt/alias/mod.py" in kept  # ... a link inside is followed
    assert "pycsamt/out_dir/far.py" not in kept


def test_open_of_an_unchanged_corpus_loads_and_keeps_the_skips(tmp_path):
    root = make_corpus(tmp_path / "corpus")
    prof = load_profile("pycsamt")
    idx = tmp_path / "idx"
    built = Workspace(root, prof, index_dir=idx)
    built.rebuild()
    ws = Workspace(root, prof, index_dir=idx)
    report = ws.open()
    assert report["action"] == "load"
    assert report["update"]["changed"] == report["update"]["added"] == []
    assert "pycsamt/broken.py" in ws.snapshot.skipped  # a parse error stays a skip
    assert ws.refresh(None)["changed"] == []  # a full refresh agrees: nothing to do


@pytest.mark.parametrize("change", ["edit", "add", "remove", "too_large", "fixed"])
def test_open_after_a_change_applies_exactly_what_a_full_refresh_finds(
    tmp_path, change
):
    root = make_corpus(tmp_path / "corpus")
    prof = load_profile("pycsamt")
    idx = tmp_path / "idx"
    Workspace(root, prof, index_dir=idx).rebuild()
    ss = root / "pycsamt/emtools/ss.py"
    if change == "edit":
        ss.write_text(ss.read_text() + "\n\ndef added_by_edit():\n    pass\n")
    elif change == "add":
        (root / "pycsamt/emtools/new.py").write_text("def added_by_edit():\n    pass\n")
    elif change == "remove":
        ss.unlink()
    elif change == "too_large":
        ss.write_text("x = 1\n" * 400_000)  # over the profile's 1 MB limit
    else:  # the file that did not parse now does
        (root / "pycsamt/broken.py").write_text("def added_by_edit():\n    pass\n")
    # what a full refresh of the old index finds, on a workspace of its own
    ref = Workspace(root, prof, index_dir=tmp_path / "ref")
    ref.build()
    ws = Workspace(root, prof, index_dir=idx)
    report = ws.open(persist=False)
    assert report["action"] == "load+update"
    assert ws.snapshot.fingerprint == ref.snapshot.fingerprint
    assert ws.snapshot.skipped == ref.snapshot.skipped
    assert set(ws.snapshot.files) == set(ref.snapshot.files)
    found = ws.query("added_by_edit", k=3)["results"]
    if change in ("edit", "add", "fixed"):
        assert found and found[0]["symbol"].endswith("added_by_edit")


def test_cli_query_sees_an_edit_that_keeps_size_and_mtime(tmp_path):
    """The fingerprint is a content check: same size, same mtime, new bytes."""
    root = make_corpus(tmp_path / "corpus")
    cache, idx = tmp_path / "cache", tmp_path / "idx"
    common = ["--root", str(root), "--index-dir", str(idx), "--json"]
    assert run_cli("build", *common, cache=cache).returncode == 0
    strike = root / "pycsamt/emtools/strike.py"
    old = strike.read_text()
    st = strike.stat()
    new = old.replace("strike_from_phase_tensor", "azimuth_of_the_tensor_xy")
    assert len(new) == len(old)
    strike.write_text(new)
    os.utime(strike, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert strike.stat().st_mtime_ns == st.st_mtime_ns
    p = run_cli("query", "azimuth_of_the_tensor_xy", *common, cache=cache)
    assert p.returncode == 0, p.stderr
    top = json.loads(p.stdout)["results"][0]
    assert top["symbol"] == "pycsamt.emtools.strike.azimuth_of_the_tensor_xy"


def test_a_warm_query_process_imports_no_build_module(tmp_path):
    root = make_corpus(tmp_path / "corpus")
    cache, idx = tmp_path / "cache", tmp_path / "idx"
    common = ["--root", str(root), "--index-dir", str(idx)]
    assert run_cli("build", *common, cache=cache).returncode == 0
    probe = (
        "import io, json, sys, contextlib\n"
        "from pycsamt_lsp.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    code = main(['query', 'static shift', *{common!r}, '--json'])\n"
        "res = json.loads(buf.getvalue())\n"
        f"heavy = sorted(m for m in {BUILD_ONLY!r} if m in sys.modules)\n"
        "print(json.dumps([code, res['results'][0]['symbol'], heavy]))\n"
    )
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(cache))
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    code, top, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert code == 0
    assert top == "pycsamt.emtools.ss.estimate_ss_ama"
    assert heavy == []


def test_model_loaded_after_open_follows_the_index_and_then_its_refreshes(tmp_path):
    """The model load compares indexed modules by the snapshot's digests (the
    open had just hashed them): it models the same files as the index, and a
    refresh brings both up to date."""
    root = make_corpus(tmp_path / "corpus")
    prof = load_profile("pycsamt")
    idx = tmp_path / "idx"
    Workspace(root, prof, index_dir=idx).rebuild()
    # a module the index leaves out (tests) is read by the model load itself
    (root / "pycsamt/tests").mkdir()
    (root / "pycsamt/tests/test_x.py").write_text("def test_x():\n    pass\n")
    ws = Workspace(root, prof, index_dir=idx)
    assert ws.open()["action"] == "load"
    model = ws.ensure_model()
    assert model.resolve("pycsamt.emtools.ss.estimate_ss_ama").exists
    assert model.resolve("pycsamt.tests.test_x.test_x").exists
    assert not model.resolve("pycsamt.emtools.ss.added_later").exists
    ss = root / "pycsamt/emtools/ss.py"
    ss.write_text(ss.read_text() + "\n\ndef added_later():\n    pass\n")
    ws.refresh([ss])
    assert ws.model.resolve("pycsamt.emtools.ss.added_later").exists
    # the same model as a load that reads every module file
    fresh = Workspace(root, prof, index_dir=tmp_path / "idx2")
    fresh.build()
    for name in ("estimate_ss_ama", "added_later"):
        dotted = f"pycsamt.emtools.ss.{name}"
        assert fresh.model.resolve(dotted).exists == ws.model.resolve(dotted).exists
