"""What the build/persist fast paths must keep: the same bytes, no cycles.

Each fast path replaced a slower spelling of the same result (issue 18);
these tests pin the result to the slow spelling, so a later "optimisation"
cannot change what is written or indexed.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import io
import json
from collections import Counter

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.index.tokenize import _WORD, term_counts, word_tokens
from pycsamt_lsp.model.package import ModuleInfo, PackageModel
from pycsamt_lsp.model.state import _write_model

SOURCE = '''"""Module doc with é and 漢字."""
import os


class Station:
    """A station."""

    def __init__(self, name, lat=0.0, *, lon: float = 1.5):
        self.name = name
        self.lat, (self.lon, self.alt) = lat, (lon, 0)
        setattr(self, "dyn", 1)

    def rotate(self, angle):
        """Rotate the tensor."""
        self.angle = angle
        return angle


def helper(x):
    def inner():
        setattr(os, "injected_name", x)

    return inner


setattr(Station, "not_counted", 1)
'''


def _chunk() -> Chunk:
    return Chunk(
        id="pkg/mod.py:3:9",
        text="Symbol: pkg.mod.f\nDocstring:\nRésistivité \u2014 ok",
        source_path="pkg/mod.py",
        kind="python_symbol",
        symbol="pkg.mod.f",
        workflow=None,
        priority=2,
        metadata={
            "params": [{"name": "a", "kind": "positional_or_keyword", "default": None}],
            "line_start": 3,
            "line_end": 9,
        },
    )


def test_chunk_line_is_the_old_json_dumps_of_asdict() -> None:
    c = _chunk()
    assert c.to_dict() == dataclasses.asdict(c)
    old = (json.dumps(dataclasses.asdict(c), ensure_ascii=False) + "\n").encode()
    assert c.json_line() == old
    assert Chunk.from_dict(json.loads(c.json_line())) == c


def test_model_file_is_byte_for_byte_json_dumps() -> None:
    model = PackageModel("pkg")
    info = ModuleInfo.from_source(SOURCE.encode(), name="pkg.mod", rel="pkg/mod.py")
    model.add_module(info)
    shas = {"pkg/mod.py": "ab" * 32}
    out = io.BytesIO()
    _write_model(out, model, shas)
    assert (
        out.getvalue() == json.dumps({"model": model.to_dict(), "shas": shas}).encode()
    )
    empty = io.BytesIO()
    _write_model(empty, PackageModel("pkg"), {})
    want = json.dumps({"model": PackageModel("pkg").to_dict(), "shas": {}}).encode()
    assert empty.getvalue() == want


def test_term_counts_equal_the_counter_spelling_in_order() -> None:
    def naive(text: str) -> list[tuple[str, int]]:
        counts: Counter[str] = Counter()
        for raw, n in Counter(_WORD.findall(text)).items():
            for tok in word_tokens(raw):
                counts[tok] += n
        return list(counts.items())

    for text in (SOURCE, "", "StaticShiftAgent estimate_ss_ama ss SS 10hz", "a_b a_b"):
        got = term_counts(text)
        assert isinstance(got, Counter)
        assert list(got.items()) == naive(text)


def test_model_extraction_leaves_no_cyclic_garbage() -> None:
    """A cycle would keep each method's subtree alive until a collection:
    builds run without the cyclic collector, so it must not be needed."""
    tree = ast.parse(SOURCE)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        ModuleInfo.from_tree(tree, name="pkg.mod", rel="pkg/mod.py", source=SOURCE)
        found = gc.collect()
    finally:
        if was:
            gc.enable()
    assert found == 0


def test_setattr_scan_sees_nested_calls_and_skips_self_and_classes() -> None:
    info = ModuleInfo.from_source(SOURCE.encode(), name="pkg.mod", rel="pkg/mod.py")
    assert info.injects == ["injected_name"]


def test_main_script_hidden_only_while_workers_start(monkeypatch) -> None:
    import sys
    import types

    from pycsamt_lsp.index.workers import main_script_hidden

    fake = types.ModuleType("__main__")
    fake.__file__ = "/usr/bin/pycsamt-lsp"
    fake.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", fake)
    with main_script_hidden():
        # what multiprocessing.spawn reads to decide to re-run the script
        assert getattr(sys.modules["__main__"], "__file__", None) is None
    assert fake.__file__ == "/usr/bin/pycsamt-lsp"
    with_spec = types.ModuleType("__main__")
    with_spec.__file__ = "/x/__main__.py"
    with_spec.__spec__ = types.SimpleNamespace(name="pycsamt_lsp.__main__")
    monkeypatch.setitem(sys.modules, "__main__", with_spec)
    with main_script_hidden():  # ``python -m``: spawn already skips it
        assert with_spec.__file__ == "/x/__main__.py"
