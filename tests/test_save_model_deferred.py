"""A save publishes its snapshot before the saved module is re-modelled.

The package model's update of a saved index file is queued by
``Workspace.refresh`` and applied on the model's first use (or the next
persist). These tests check that whoever reads the model afterwards sees
exactly what a model built from the files on disk says, including after
several saves of a large module in a row (the incremental parser shifts the
previous tree in place), a deletion, and a rebuild in between.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.model.package import PackageModel
from pycsamt_lsp.workspace.facade import Workspace

pytestmark = pytest.mark.unit

PROFILE = profile_from_dict(
    {"name": "fixture", "package": "geo", "roots": ["geo"], "recipe_dir": "recipes"}
)


def _big_module(n: int) -> str:
    """A module over the incremental parser's threshold (16,000 characters)."""
    parts = ['"""Big module."""', "import os", ""]
    for i in range(n):
        parts += [
            f"def helper_{i}(x, y={i}):",
            f'    """Helper number {i} for the impedance tensor."""',
            f"    return os.path.join(str(x), str(y + {i}))",
            "",
            "",
        ]
    return "\n".join(parts)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    pkg = tmp_path / "corpus" / "geo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""geo."""\nfrom .big import helper_0\n')
    (pkg / "big.py").write_text(_big_module(220))
    (pkg / "small.py").write_text("def tiny():\n    return 1\n")
    w = Workspace(tmp_path / "corpus", PROFILE, index_dir=tmp_path / "index")
    w.build()
    w.ensure_model()
    return w


def _files_of(model: PackageModel) -> dict:
    return model.to_dict()["files"]


def _fresh(ws: Workspace) -> dict:
    return _files_of(PackageModel.build(ws.root, "geo"))


def _insert(path: Path, at_line: int, code: str) -> None:
    lines = path.read_text().split("\n")
    lines[at_line:at_line] = code.split("\n")
    path.write_text("\n".join(lines))


def test_a_saved_function_resolves_and_the_model_equals_a_fresh_one(ws: Workspace):
    big = ws.root / "geo" / "big.py"
    assert len(big.read_text()) > 16_000
    with open(big, "a") as fh:
        fh.write("\n\ndef resample_grid(data):\n    return data\n")
    ws.refresh([big])
    assert ws.query("resample_grid", k=3)["results"][0]["symbol"].endswith(
        "resample_grid"
    )
    model = ws.model
    assert model.resolve("geo.big.resample_grid").status == "exists"
    assert _files_of(model) == _fresh(ws)


def test_saves_in_a_row_without_a_model_read_between(ws: Workspace):
    """Each save shifts the statements after its edit: the queued update of
    the earlier save must not be modelled from the shifted tree."""
    big = ws.root / "geo" / "big.py"
    before = ws.model
    _insert(big, 600, "def first_added(a):\n    return a\n\n")
    ws.refresh([big])
    _insert(big, 10, "def second_added(b):\n    return b\n\n")
    ws.refresh([big])
    small = ws.root / "geo" / "small.py"
    small.write_text("def tiny():\n    return 2\n\n\ndef also():\n    return 3\n")
    ws.refresh([small])
    assert ws.package_model.model is before  # nothing applied yet
    model = ws.model
    assert model is not before
    for name in ("big.first_added", "big.second_added", "big.helper_219", "small.also"):
        assert model.resolve(f"geo.{name}").status == "exists", name
    assert _files_of(model) == _fresh(ws)


def test_a_deleted_module_and_a_persist(ws: Workspace):
    small = ws.root / "geo" / "small.py"
    small.unlink()
    ws.refresh([small])
    ws.persist()  # applies the queue before writing the model
    assert ws.package_model.model is not None
    assert "geo/small.py" not in _files_of(ws.package_model.model)
    assert ws.model.resolve("geo.small").status == "absent"


def test_a_rebuild_drops_the_queue(ws: Workspace):
    big = ws.root / "geo" / "big.py"
    with open(big, "a") as fh:
        fh.write("\n\ndef after_rebuild(z):\n    return z\n")
    ws.refresh([big])
    ws.rebuild()
    model = ws.model
    assert model.resolve("geo.big.after_rebuild").status == "exists"
    assert _files_of(model) == _fresh(ws)
