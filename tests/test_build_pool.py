"""The streamed build's pipe workers (``index.workers.PipePool``, ``ordered``).

The building process parses batches itself and feeds worker processes over
pipes; these tests hold the results to the serial ones, in order, and check
that a worker that dies or raises costs the build nothing but time: its
batches are parsed by the building process, never a hang, and a batch that
fails everywhere raises its own error in the building process.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest

import pycsamt_lsp.index.workers as workers
import pycsamt_lsp.workspace.facade as facade
from pycsamt_lsp.index.workers import PipePool, ordered
from pycsamt_lsp.workspace.facade import Workspace
from test_streamed_build import PROFILE, assert_same_index, make_tree

#: the first two (plan order) always go to the worker: fed before this
#: process takes a batch of its own
BATCHES = [[3], [6, 7, 8], [0, 1, 2], [4, 5], [9], [10, 11, 12, 13]]


def _run(target: str, here=None, big=(0,)) -> list[int]:
    pool = PipePool(1, f"build_worker_targets:{target}", (100,))
    try:
        local = here or (lambda items: [i * i + 100 for i in items])
        return list(ordered(BATCHES, lambda b: list(b), local, pool, big=big))
    finally:
        pool.close()


def test_results_come_in_position_order_from_the_worker_and_here() -> None:
    seen: list[list[int]] = []

    def here(items: list[int]) -> list[int]:
        seen.append(items)
        return [i * i + 100 for i in items]

    assert _run("square", here) == [i * i + 100 for i in range(14)]
    assert [3] not in seen  # a big batch goes to a worker while one lives
    assert len(seen) < len(BATCHES)  # the worker took some


def test_a_dead_worker_s_batches_are_parsed_here(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger=workers.__name__):
        got = _run("die_on_seven")
    assert got == [i * i + 100 for i in range(14)]
    assert "build worker 0 ended (exit code 3)" in caplog.text


def test_a_failed_batch_is_run_here_and_its_error_raised_here(caplog) -> None:
    def here(items: list[int]) -> list[int]:
        if 7 in items:
            raise ValueError("seven, here too")
        return [i * i + 100 for i in items]

    calls = []

    def counting(items: list[int]) -> list[int]:
        calls.append(items)
        return here(items)

    with (
        caplog.at_level(logging.WARNING, logger=workers.__name__),
        pytest.raises(ValueError, match="here too"),  # the error raised here
    ):
        _run("raise_on_seven", counting)
    assert "ValueError: seven" in caplog.text  # the worker's traceback, logged
    assert [6, 7, 8] in calls


def test_no_worker_at_all_is_a_serial_run() -> None:
    got = list(ordered(BATCHES, list, lambda it: [i + 1 for i in it], None))
    assert got == [i + 1 for i in range(14)]


def test_a_worker_killed_mid_build_still_gives_the_same_index(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    """Through the facade: the worker dies on its first batch (as if killed);
    the build finishes here and writes what a serial build writes."""
    root = tmp_path / "corpus"
    make_tree(root, 40)
    serial = Workspace(root, PROFILE, index_dir=tmp_path / "a", workers=1)
    serial.rebuild()

    class Dying(PipePool):
        def __init__(self, n: int, target: str, fixed: tuple, spares=None) -> None:
            assert target == "pycsamt_lsp.model.state:pack_batch"
            super().__init__(n, "build_worker_targets:die_on_seven", (0,), spares)

    monkeypatch.setattr(workers, "PipePool", Dying)
    monkeypatch.setattr(facade, "_PARALLEL_MIN_FILES", 1)
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "b", workers=2)
    with caplog.at_level(logging.WARNING, logger=workers.__name__):
        ws.rebuild()
    assert "exit code 3" in caplog.text
    assert_same_index(tmp_path / "a", tmp_path / "b", model_bytes=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_leaves_when_its_parent_is_killed(tmp_path: Path) -> None:
    """No orphan: a worker whose parent died (SIGKILL, nothing cleaned up)
    reads the end of its stdin and exits."""
    import os
    import signal
    import subprocess
    import time

    code = (
        "import sys, time\n"
        f"sys.path[:0] = {sys.path!r}\n"
        "from pycsamt_lsp.index.workers import PipePool\n"
        "pool = PipePool(1, 'build_worker_targets:square', (0,))\n"
        "print(pool.workers[0].proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        pid = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                break  # gone (reaped by init)
            if state == "Z":
                break  # exited, waiting for init to reap it
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            pytest.fail("the worker outlived its parent")
    finally:
        parent.kill()
        parent.stdout.close()


def test_the_feeder_keeps_a_worker_busy_while_this_process_parses() -> None:
    """While the building thread is inside one long batch of its own, the
    worker is fed each next batch as its answers arrive (the pool's feeder
    thread), not only when the building thread looks again: it answers more
    batches than it was given ahead (``_DEPTH``) before ``here`` returns."""
    batches = [[i] for i in range(12)]
    pool = PipePool(1, "build_worker_targets:square", (0,))
    waited: list[int] = []

    def here(items: list[int]) -> list[int]:
        if not waited:  # the first batch this process takes: wait here
            deadline = time.monotonic() + 60
            while pool._events.qsize() < workers._DEPTH + 2:
                assert time.monotonic() < deadline, "the worker was not fed"
                time.sleep(0.01)
            waited.append(pool._events.qsize())
        return [i * i for i in items]

    try:
        got = list(ordered(batches, list, here, pool))
    finally:
        pool.close()
    assert got == [i * i for i in range(12)]
    assert waited and waited[0] > workers._DEPTH


def test_answers_larger_than_a_pipe_arrive_whole() -> None:
    batches = [[0, 1], [2], [3, 4], [5]]
    pool = PipePool(1, "build_worker_targets:big_answer", (3,))
    try:
        got = list(ordered(batches, list, lambda it: [b"?"] * len(it), pool))
    finally:
        pool.close()
    for i, data in enumerate(got):
        assert data in (b"?", bytes([i]) * (3 << 20))
    assert any(len(d) > 1 for d in got)  # the worker answered some


def test_prestarted_workers_are_taken_by_the_next_pool_or_let_go() -> None:
    spares = workers.prestart(1)
    try:
        assert len(spares) == 1
        spare = spares[0]
        pool = PipePool(1, "build_worker_targets:square", (100,), spares=spares)
        try:
            assert pool.workers[0].proc is spare  # no second interpreter
            assert not spares
            got = list(ordered(BATCHES, list, lambda it: [-1] * len(it), pool))
        finally:
            pool.close()
        assert [g for g in got if g != -1]  # the prestarted worker answered
        assert all(g in (-1, i * i + 100) for i, g in enumerate(got))
        spares = workers.prestart(1)
        unused = spares[0]
    finally:
        workers.discard_spares(spares, wait=True)
    assert not spares
    assert unused.returncode == 0  # it left when its stdin ended


def _package_tree(root: Path, n: int) -> None:
    pkg = root / "pycsamt"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A package."""\n')
    for i in range(n):
        (pkg / f"m{i}.py").write_text(
            f'"""Module {i}."""\n\n\ndef f{i}(x):\n    """Return x."""\n    return x\n'
        )


@pytest.mark.parametrize("pooled", [False, True])
def test_a_cli_build_prestarts_its_worker_and_leaves_none_behind(
    tmp_path: Path, monkeypatch, pooled: bool
) -> None:
    """``pycsamt-lsp build`` starts its worker before the engine's imports;
    the pool takes it (a large corpus) or the build lets it go (a small one),
    and the index is the one a build without it writes."""
    from pycsamt_lsp.cli import main

    _package_tree(tmp_path / "corpus", 12)
    if pooled:
        monkeypatch.setattr(facade, "_PARALLEL_MIN_FILES", 1)
    spawned: list = []
    taken: list = []
    spawn, init = workers._spawn, PipePool.__init__

    def counting_spawn(preload):
        spawned.append(spawn(preload))
        return spawned[-1]

    def recording_init(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        taken.extend(w.proc for w in self.workers)

    monkeypatch.setattr(workers, "_spawn", counting_spawn)
    monkeypatch.setattr(PipePool, "__init__", recording_init)
    common = ["--root", str(tmp_path / "corpus")]
    assert main(["build", *common, "--index-dir", str(tmp_path / "a")]) == 0
    assert len(spawned) == 1  # prestarted, then taken or let go: never two
    assert spawned[0].wait(timeout=10) == 0  # and it left: none behind
    assert taken == (spawned if pooled else [])
    monkeypatch.setattr(workers, "prestart", lambda n=None: [])
    assert main(["build", *common, "--index-dir", str(tmp_path / "b")]) == 0
    assert_same_index(tmp_path / "a", tmp_path / "b", model_bytes=False)


@pytest.mark.parametrize("wrong_guess", [False, True])
def test_the_early_batch_is_the_largest_listed_file_and_a_wrong_guess_is_redone(
    tmp_path: Path, monkeypatch, wrong_guess: bool
) -> None:
    """The worker gets the largest listed file before the module files are
    known, its module flag guessed from its name; a wrong guess is parsed
    again here with the right flag, so the index (package model included)
    is the serial one either way."""
    import pycsamt_lsp.model.facts as facts
    import pycsamt_lsp.model.state as state

    root = tmp_path / "corpus"
    make_tree(root, 40)
    Workspace(root, PROFILE, index_dir=tmp_path / "a", workers=1).rebuild()
    monkeypatch.setattr(facade, "_PARALLEL_MIN_FILES", 1)
    if wrong_guess:  # the guess only: module_files keeps the real rule
        monkeypatch.setattr(facts, "module_name_for", lambda rel, package: None)
    sent: list = []
    here: list = []
    message, pack = PipePool.message, state.pack_batch

    def recording_message(self, w, key, item):
        sent.append((key, item))
        return message(self, w, key, item)

    def recording_pack(args):
        here.extend(args[-1])
        return pack(args)

    monkeypatch.setattr(PipePool, "message", recording_message)
    monkeypatch.setattr(state, "pack_batch", recording_pack)
    Workspace(root, PROFILE, index_dir=tmp_path / "b", workers=2).rebuild()
    assert_same_index(tmp_path / "a", tmp_path / "b")
    key, item = sent[0]
    assert key == 0 and [job[0] for job in item] == ["geo/core/big.py"]
    assert item[0][3] is not wrong_guess  # the guessed module flag
    redone = [job for job in here if job[0] == "geo/core/big.py"]
    assert redone == ([(*item[0][:3], True)] if wrong_guess else [])


def test_released_workers_exit_by_themselves_and_close_reaps_them() -> None:
    pool = PipePool(1, "build_worker_targets:square", (0,))
    try:
        got = list(ordered(BATCHES, list, lambda it: [-1] * len(it), pool))
        pool.release()  # no wait: stdin closed, the feeder stopped
        proc = pool.workers[0].proc
        deadline = time.monotonic() + 30
        while proc.poll() is None:
            assert time.monotonic() < deadline, "a released worker did not exit"
            time.sleep(0.01)
        assert proc.returncode == 0
    finally:
        pool.close()  # after release: reaps, no error
    assert all(g in (-1, i * i) for i, g in enumerate(got))


def test_large_files_go_to_the_worker_as_the_listing_meets_them(
    tmp_path: Path, monkeypatch
) -> None:
    """Once the pool runs, the first ``_EARLY_FILES`` files of at least
    ``_EARLY_BYTES`` are sent as the listing meets them (batches 0, 1, ...
    in listing order), then the largest file when the listing ends unless
    it went already (with nothing that large, it alone goes first: the test
    above); the index is the serial one."""
    from pycsamt_lsp.corpus.discovery import iter_corpus_files

    root = tmp_path / "corpus"
    make_tree(root, 40)
    Workspace(root, PROFILE, index_dir=tmp_path / "a", workers=1).rebuild()
    monkeypatch.setattr(facade, "_PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(facade, "_EARLY_BYTES", 402)  # big.py, m10.py, ...
    sizes = {rel: p.stat().st_size for rel, p in iter_corpus_files(root, PROFILE)}
    expected = [rel for rel, n in sizes.items() if n >= 402][: facade._EARLY_FILES]
    largest = max(sizes, key=sizes.__getitem__)
    if largest not in expected:
        expected.append(largest)
    assert len(expected) > 1 and "geo/core/big.py" in expected
    sent: list = []
    message = PipePool.message

    def recording_message(self, w, key, item):
        sent.append((key, [job[0] for job in item]))
        return message(self, w, key, item)

    monkeypatch.setattr(PipePool, "message", recording_message)
    Workspace(root, PROFILE, index_dir=tmp_path / "b", workers=2).rebuild()
    assert_same_index(tmp_path / "a", tmp_path / "b", model_bytes=False)
    assert sent[: len(expected)] == [(k, [rel]) for k, rel in enumerate(expected)]
