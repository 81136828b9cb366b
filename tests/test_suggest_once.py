"""The did-you-mean index is built once per model, however many threads ask.

Why it matters: the first suggestions after a load come from several editor
threads at once (diagnostics of two buffers, a code action); each used to
build its own index, all of them holding the GIL the event loop needs. The
build is slowed down here (each one takes 0.1 s) so that, without the lock,
every thread would be inside a build at the same time.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from pycsamt_lsp.model import suggest
from pycsamt_lsp.model.package import PackageModel

FILES = {
    "__init__.py": "from .agents import StaticShiftAgent\n",
    "agents.py": (
        '"""Agents."""\n\n\nclass StaticShiftAgent:\n    """Correct static shift."""\n'
    ),
    "emtools/__init__.py": "",
    "emtools/ss.py": (
        '"""Static shift estimators."""\n\n\ndef estimate_ss_ama(data):\n'
        '    """Static shift by AMA."""\n    return data\n'
    ),
}


def _model(tmp_path: Path) -> PackageModel:
    for rel, text in FILES.items():
        p = tmp_path / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return PackageModel.build(tmp_path, "pkg")


def _count_builds(monkeypatch) -> list[int]:
    """Patch the index class to count (and slow down) its constructions."""
    built: list[int] = []
    real_init = suggest._SuggestIndex.__init__

    def slow_init(self, model):
        built.append(threading.get_ident())
        time.sleep(0.1)  # every racing thread is inside by now
        real_init(self, model)

    monkeypatch.setattr(suggest._SuggestIndex, "__init__", slow_init)
    return built


def _race(fn, n: int = 8) -> list:
    barrier = threading.Barrier(n)
    out: list = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return out


def test_racing_suggestions_build_the_index_once(tmp_path, monkeypatch):
    model = _model(tmp_path)
    built = _count_builds(monkeypatch)
    # different names, so the per-name answer cache cannot short-cut a thread
    names = ["static_shift", "StaticShift", "estimate_ss", "ShiftAgent"] * 2
    got = _race(lambda i: model.suggest(f"pkg.{names[i]}"))
    assert len(built) == 1
    assert "pkg.StaticShiftAgent" in got[0]
    assert "pkg.emtools.ss.estimate_ss_ama" in got[2]
    # and every thread got the same answers a single thread gets
    alone = _model(tmp_path / "again")
    for i, name in enumerate(names):
        assert got[i] == alone.suggest(f"pkg.{name}")


def test_prepare_racing_suggest_builds_once(tmp_path, monkeypatch):
    model = _model(tmp_path)
    built = _count_builds(monkeypatch)
    _race(lambda i: model.prepare() if i % 2 else model.suggest("pkg.static_shift"), 6)
    assert len(built) == 1


def test_an_update_drops_the_index_and_the_next_build_is_once_again(
    tmp_path, monkeypatch
):
    model = _model(tmp_path)
    built = _count_builds(monkeypatch)
    model.suggest("pkg.static_shift")
    new = model.copy()  # what an update publishes: its own, empty index
    _race(lambda i: new.suggest("pkg.shift_agent"), 4)
    assert len(built) == 2
    assert new._suggest_index is not model._suggest_index
