"""A long-lived workspace hands a large parse's freed heap back at once.

``heap.trim`` (glibc ``malloc_trim``) runs after an editor-opened module's
tree is kept and after each refresh job of the server, not only at the next
persist (issue 18: an editing session's memory). What it saves is measured
by ``benchmarks/bench_save_memory.py``; here: that it is called where it
must be, that a one-shot workspace never pays for it, and that on glibc it
really returns freed pages (a process that frees a large transient ends
with a smaller RSS after it than before it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.index import heap
from pycsamt_lsp.workspace.facade import Workspace


def _module(n: int) -> str:
    """A module over the tree cache's 16,000-character floor."""
    return "\n".join(
        f"def helper_{i}(z, step={i}):\n    return [v * step for v in z]\n"
        for i in range(n)
    )


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "pycsamt").mkdir(parents=True)
    (root / "pycsamt" / "__init__.py").write_text('"""pkg."""\n')
    (root / "pycsamt" / "grids.py").write_text(_module(400))
    return root


@pytest.fixture
def trims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = heap.trim

    def counted() -> bool:
        calls.append(1)
        return real()

    monkeypatch.setattr(heap, "trim", counted)
    return calls


@pytest.mark.parametrize("long_lived", [True, False])
def test_prime_and_refresh_trim_only_in_a_long_lived_workspace(
    tmp_path: Path, trims: list[int], long_lived: bool
) -> None:
    root = _tree(tmp_path)
    ws = Workspace(
        root, load_profile(), index_dir=tmp_path / "idx", long_lived=long_lived
    )
    ws.build()
    ws.ensure_model()
    del trims[:]  # the build's own compaction is not what is checked
    grids = root / "pycsamt" / "grids.py"
    assert ws.prime_tree(grids)
    assert len(trims) == (1 if long_lived else 0)
    grids.write_text(grids.read_text() + "\ndef trimmed_helper(x):\n    return x\n")
    report = ws.refresh_modelled([grids])
    assert report["changed"] == ["pycsamt/grids.py"]
    assert len(trims) == (2 if long_lived else 0)
    hits = ws.query("trimmed_helper", k=3)["results"]
    assert hits and hits[0]["symbol"] == "pycsamt.grids.trimmed_helper"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_trim_returns_freed_pages_to_the_system() -> None:
    def rss_kb() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    heap.trim()
    before = rss_kb()
    # many small blocks (under the mmap threshold: they come from the heap),
    # all but the last one freed: the heap cannot shrink from its top
    blocks = [bytearray(4000) for _ in range(10_000)]  # ~40 MB
    keep = blocks[-1]
    del blocks
    grown = rss_kb()
    assert heap.trim() is True
    after = rss_kb()
    assert keep  # still alive: the trim freed pages below it
    assert grown - before > 20_000, (before, grown)
    assert after < grown - 20_000, (before, grown, after)
