"""The content fingerprint, recomputed independently exactly as DESIGN 3 says.

``files sorted by repository-relative POSIX path; one running SHA-256 over,
for each file, relpath(utf-8) || b":" || sha256(bytes).digest() (raw 32
bytes); hex.`` The expected file lists are written out here, not derived from
the engine, so a change in what gets indexed shows up as a failure.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from pycsamt_lsp.corpus.discovery import bundled_recipes_dir, fingerprint
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.workspace.facade import Workspace

#: Indexed by the default profile.
INDEXED = {
    "README.md": "# Fixture\n\nA corpus for the fingerprint test.\n",
    "AGENTS.md": "# Agents\n\nNotes for agents.\n",
    "pycsamt/__init__.py": '"""The package."""\n',
    "pycsamt/emtools/ss.py": 'def estimate_ss_ama(z):\n    """Static shift."""\n',
    "pycsamt/agents/static_shift.py": "class StaticShiftAgent:\n    pass\n",
    "docs/source/index.rst": "Title\n=====\n\nBody text of the docs.\n",
    "examples/demo.py": "print('demo')\n",
    "pycsamt/caf\u00e9.py": "x = 1\n",  # non-ASCII path: utf-8 bytes go in
}
#: Present in the tree but not indexed (tests, caches, excluded, other suffix).
NOT_INDEXED = {
    "pycsamt/tests/test_ss.py": "def test_x():\n    pass\n",
    "pycsamt/emtools/test_strike.py": "def test_y():\n    pass\n",
    "pycsamt/conftest.py": "import pytest\n",
    "pycsamt/__pycache__/ss.cpython-311.pyc": "junk",
    "pycsamt/app/web.py": "UI = 1\n",
    "pycsamt/assistant/rag/index.py": "RAG = 1\n",
    "pycsamt/data/table.csv": "a,b\n1,2\n",
    "notes.md": "# not a root doc\n",
    "setup.py": "from setuptools import setup\n",
}


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def reference_fingerprint(files: dict[str, Path]) -> str:
    """DESIGN 3, written from the text: no engine code involved."""
    h = hashlib.sha256()
    for rel in sorted(files):
        digest = hashlib.sha256(files[rel].read_bytes()).digest()
        h.update(rel.encode("utf-8") + b":" + digest)
    return h.hexdigest()


def bundled_recipe_files() -> dict[str, Path]:
    """The recipes shipped with the server, listed as ``assistant_recipes/...``."""
    d = bundled_recipes_dir()
    out: dict[str, Path] = {}
    if d is None:
        return out
    for dirpath, dirnames, filenames in os.walk(d):
        dirnames[:] = [n for n in dirnames if n != "__pycache__"]
        for name in filenames:
            if name.endswith((".md", ".rst", ".py")):
                p = Path(dirpath) / name
                out["assistant_recipes/" + p.relative_to(d).as_posix()] = p
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write_tree(root, INDEXED)
    write_tree(root, NOT_INDEXED)
    return root


def expected_files(root: Path) -> dict[str, Path]:
    files = {rel: root / rel for rel in INDEXED}
    files.update(bundled_recipe_files())
    return files


def open_ws(root: Path, profile, tmp_path: Path) -> Workspace:
    ws = Workspace(root, profile, index_dir=tmp_path / "idx" / root.name, workers=1)
    ws.build()
    return ws


def test_fingerprint_matches_an_independent_recomputation(
    tree, tmp_path, pycsamt_profile
):
    ws = open_ws(tree, pycsamt_profile, tmp_path)
    files = expected_files(tree)
    assert set(ws.snapshot.files) == set(files)
    assert ws.stats()["fingerprint"] == reference_fingerprint(files)
    # the persisted manifest carries the same value
    manifest = ws.persist()
    assert manifest["source_fingerprint"] == reference_fingerprint(files)


def test_fingerprint_with_a_profile_that_has_no_recipes(tree, tmp_path):
    profile = profile_from_dict(
        {
            "name": "bare",
            "package": "pycsamt",
            "roots": ["pycsamt"],
            "excludes": ["pycsamt/app/", "pycsamt/assistant/rag/"],
        }
    )
    ws = open_ws(tree, profile, tmp_path)
    files = {
        rel: tree / rel
        for rel in INDEXED
        if rel.startswith("pycsamt/") and rel.endswith((".py", ".rst", ".md"))
    }
    assert set(ws.snapshot.files) == set(files)
    assert ws.stats()["fingerprint"] == reference_fingerprint(files)


def test_fingerprint_helper_matches_the_reference():
    digests = {
        "b.py": hashlib.sha256(b"b").digest(),
        "a/z.md": hashlib.sha256(b"z").digest(),
        "a.py": hashlib.sha256(b"").digest(),
    }
    h = hashlib.sha256()
    for rel in sorted(digests):
        h.update(rel.encode() + b":" + digests[rel])
    assert fingerprint(digests) == h.hexdigest()
    assert fingerprint(list(digests.items())[::-1]) == h.hexdigest()
    assert fingerprint({}) == hashlib.sha256(b"").hexdigest()


def test_touch_keeps_the_fingerprint_content_change_does_not(
    tree, tmp_path, pycsamt_profile
):
    ws = open_ws(tree, pycsamt_profile, tmp_path)
    before = ws.stats()["fingerprint"]
    builds = ws.builds
    target = tree / "pycsamt/emtools/ss.py"
    later = time.time() + 100
    os.utime(target, (later, later))
    report = ws.refresh([target])
    assert report["changed"] == [] and report["fingerprint"] == before
    assert ws.builds == builds  # no new snapshot for a touch
    assert ws.refresh(None)["changed"] == []
    assert ws.stats()["fingerprint"] == before
    # a fresh build after the touch agrees
    assert (
        open_ws(tree, pycsamt_profile, tmp_path / "again").stats()["fingerprint"]
        == before
    )

    target.write_text(target.read_text() + "# edited\n", encoding="utf-8")
    report = ws.refresh([target])
    assert report["changed"] == ["pycsamt/emtools/ss.py"]
    after = ws.stats()["fingerprint"]
    assert after != before
    assert after == reference_fingerprint(expected_files(tree))
    # restoring the content restores the fingerprint
    target.write_text(INDEXED["pycsamt/emtools/ss.py"], encoding="utf-8")
    ws.refresh([target])
    assert ws.stats()["fingerprint"] == before


def test_add_and_delete_change_the_fingerprint(tree, tmp_path, pycsamt_profile):
    ws = open_ws(tree, pycsamt_profile, tmp_path)
    new = tree / "pycsamt/emtools/strike.py"
    new.write_text('"""Strike."""\n', encoding="utf-8")
    ws.refresh([new])
    files = expected_files(tree)
    files["pycsamt/emtools/strike.py"] = new
    assert ws.stats()["fingerprint"] == reference_fingerprint(files)
    new.unlink()
    ws.refresh([new])
    assert ws.stats()["fingerprint"] == reference_fingerprint(expected_files(tree))
    # a file the profile does not index never touches the fingerprint
    before = ws.stats()["fingerprint"]
    (tree / "pycsamt/tests/test_ss.py").write_text("changed\n")
    ws.refresh([tree / "pycsamt/tests/test_ss.py"])
    ws.refresh(None)
    assert ws.stats()["fingerprint"] == before
