"""The cyclic collector during a server's start (issue 18: warm start).

``serve`` runs its imports, the converter setup, the first messages and the
index load without cyclic collection; the server turns it back on (after
one collection of the start's garbage) once its first answer is out, or
when the start ends without an index, or when it stops.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from pycsamt_lsp import cli
from pycsamt_lsp.lsp.server import PycsamtServer


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture
def collector_restored():
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_resume_gc_collects_then_turns_the_collector_on(collector_restored) -> None:
    ls = PycsamtServer()
    assert ls.gc_paused is False
    gc.disable()
    ls.resume_gc(collect=True)  # not paused by a start: nothing changes
    assert not gc.isenabled()
    ls.gc_paused = True
    cyclic = _Node()
    ref = weakref.ref(cyclic)
    del cyclic
    assert ref() is not None
    ls.resume_gc(collect=True)
    assert gc.isenabled() and ls.gc_paused is False
    assert ref() is None  # the start's garbage was collected
    gc.disable()
    ls.resume_gc(collect=False)  # once only
    assert not gc.isenabled()


def test_serve_starts_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch, collector_restored
) -> None:
    import pycsamt_lsp.lsp.server as server

    seen: dict[str, Any] = {}

    def fake_serve(**kw: Any) -> int:
        seen.update(kw, collecting=gc.isenabled())
        return 0

    monkeypatch.setattr(server, "serve", fake_serve)
    gc.enable()
    assert cli.main(["serve"]) == 0
    assert seen["resume_gc"] is True and seen["collecting"] is False
    gc.disable()  # a caller that had it off: the server leaves it off
    assert cli.main(["serve"]) == 0
    assert seen["resume_gc"] is False
