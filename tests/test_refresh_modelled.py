"""A burst's model updates run in the refresh job, never in an editor reader.

``Workspace.refresh`` queues the package-model updates of saved modules for
the model's first reader. In the server that reader is often a hover, which
then re-modelled a whole save burst in its own thread (seconds on the sdist:
answered empty at its 5 s budget, ``bench_editor.py --load``). The server's
refresh of a burst calls ``refresh_modelled`` instead: the updates are
applied before the workspace lock is released, and a reader that asks
meanwhile takes the model as it was, without waiting and without updating
it. Checked here on a fixture tree by what each side does, not by timing.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.lsp.indexing import MODEL_WITH_REFRESH
from pycsamt_lsp.model.package import PackageModel
from pycsamt_lsp.workspace.facade import Workspace
from pycsamt_lsp.workspace.model import ModelService

pytestmark = pytest.mark.unit

PROFILE = profile_from_dict(
    {"name": "fixture", "package": "geo", "roots": ["geo"], "recipe_dir": "recipes"}
)
N = MODEL_WITH_REFRESH + 4  # a burst, as the server sees one


def _ws(tmp_path: Path) -> tuple[Workspace, list[Path]]:
    pkg = tmp_path / "corpus" / "geo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Geo."""\n', encoding="utf-8")
    files = []
    for i in range(N):
        p = pkg / f"mod_{i}.py"
        p.write_text(f'"""Module {i}."""\n\n\ndef old_{i}(x):\n    return x\n', "utf-8")
        files.append(p)
    ws = Workspace(tmp_path / "corpus", PROFILE, index_dir=tmp_path / "index")
    ws.open()
    ws.ensure_model()
    return ws, files


def _save_all(files: list[Path]) -> None:
    for i, p in enumerate(files):
        with open(p, "a", encoding="utf-8") as fh:
            fh.write(f"\n\ndef burst_{i}(y):\n    return y\n")


def test_refresh_modelled_leaves_nothing_for_the_next_reader(tmp_path, monkeypatch):
    ws, files = _ws(tmp_path)
    _save_all(files)
    report = ws.refresh_modelled([str(p) for p in files])
    assert len(report["changed"]) == N
    # the next reader must not update the model: it is already current
    updates: list[int] = []
    real = ModelService.update

    def counting(self, batch):
        updates.append(len(batch))
        return real(self, batch)

    monkeypatch.setattr(ModelService, "update", counting)
    model = ws.model
    assert updates == []
    for i in range(N):
        assert model.resolve(f"geo.mod_{i}.burst_{i}").exists
        assert model.resolve(f"geo.mod_{i}.old_{i}").exists


def test_a_reader_during_the_burst_takes_the_old_model_and_updates_nothing(
    tmp_path, monkeypatch
):
    ws, files = _ws(tmp_path)
    before = ws.model
    _save_all(files)
    # hold the refresh job inside its model update until a reader has asked
    in_update, reader_done = threading.Event(), threading.Event()
    real = ModelService.update
    updaters: list[str] = []

    def slow_update(self, batch):
        updaters.append(threading.current_thread().name)
        in_update.set()
        assert reader_done.wait(30)
        return real(self, batch)

    monkeypatch.setattr(ModelService, "update", slow_update)
    job = threading.Thread(
        target=ws.refresh_modelled, args=([str(p) for p in files],), name="refresh"
    )
    job.start()
    assert in_update.wait(30)
    seen: list[PackageModel] = []
    reader = threading.Thread(target=lambda: seen.append(ws.model), name="hover")
    reader.start()
    reader.join(30)
    assert not reader.is_alive()  # it did not wait for the update
    reader_done.set()
    job.join(30)
    assert seen == [before]  # the model as it was
    assert updaters == ["refresh"]  # and only the refresh job updated it
    assert ws.model.resolve("geo.mod_0.burst_0").exists


def test_a_plain_refresh_still_defers_to_the_first_reader(tmp_path, monkeypatch):
    """What a single save does (kept off the query after it): the reader applies it."""
    ws, files = _ws(tmp_path)
    _save_all(files[:1])
    ws.refresh([str(files[0])])
    updates: list[int] = []
    real = ModelService.update

    def counting(self, batch):
        updates.append(len(batch))
        return real(self, batch)

    monkeypatch.setattr(ModelService, "update", counting)
    assert ws.model.resolve("geo.mod_0.burst_0").exists
    assert updates == [1]
