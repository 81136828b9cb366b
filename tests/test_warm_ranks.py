"""The ranking arrays saved beside an index (``ranks.npz``, workspace/warm.py;
issue 18, warm start).

What :class:`~pycsamt_lsp.search.retrieval.RankAux` and
:class:`~pycsamt_lsp.search.stages.StageAux` derive from the chunk table is
saved by the first reader of an index and read back by later opens: it must
be the same arrays to the bit as a build from the table (so every ranking is
the same), a save must update a loaded aux as it would a built one, and a
file that is damaged, of another build or otherwise does not fit is ignored
(the arrays are built, and saved again).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.search.retrieval import RankAux
from pycsamt_lsp.search.slotmap import SlotMap, pack_groups, unpack_groups
from pycsamt_lsp.workspace.facade import Workspace
from pycsamt_lsp.workspace.published import Published
from pycsamt_lsp.workspace.warm import RANKS_FILE

FILES = {
    "README.md": "# Fixture corpus\n\nWarm start tests.\n",
    "pycsamt/__init__.py": '"""The package."""\n',
    "pycsamt/emtools/__init__.py": '"""EM tools."""\n',
    "pycsamt/emtools/ss.py": (
        '"""Static shift estimation (AMA)."""\n\n\n'
        "def estimate_ss_ama(z, n=3):\n"
        '    """Estimate static shift factors with the AMA filter."""\n'
        "    return z\n\n\n"
        "class ShiftFilter:\n"
        '    """A static shift filter."""\n\n'
        "    def apply(self, z):\n"
        '        """Apply the filter to the impedance *z*."""\n'
        "        return z\n"
    ),
    "pycsamt/emtools/strike.py": (
        '"""Strike analysis."""\n\n\n'
        "def strike_from_phase_tensor(pt):\n"
        '    """Geoelectric strike direction from the phase tensor."""\n'
        "    return 0.0\n"
    ),
    "docs/source/index.rst": (
        "Guide\n=====\n\nHow to correct static shift with "
        "``pycsamt.emtools.ss.estimate_ss_ama``.\n\n"
        "Strike\n------\n\nThe phase tensor strike.\n"
    ),
}

QUERIES = ("estimate_ss_ama", "static shift", "phase tensor strike", "ShiftFilter")


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYCSAMT_LSP_CACHE", str(tmp_path / "cache"))


def built(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "corpus"
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    idx = tmp_path / "idx"
    Workspace(root, load_profile("pycsamt"), index_dir=idx).rebuild()
    return root, idx


def open_ws(root: Path, idx: Path) -> Workspace:
    ws = Workspace(root, load_profile("pycsamt"), index_dir=idx)
    ws.open()
    return ws


def loaded(ws: Workspace) -> bool:
    """Whether *ws* published the saved arrays (its slot maps are packed)."""
    slots = ws.published.aux.symbol_slots
    return isinstance(slots, SlotMap) and slots._ptr is not None


def same(a: Any, b: Any, where: str) -> None:
    """*a* and *b* equal to the bit: arrays by dtype, shape and bytes,
    mappings by key order and values."""
    if isinstance(a, SlotMap):
        a = a.materialized()
    if isinstance(b, SlotMap):
        b = b.materialized()
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, Mapping):
        assert isinstance(b, Mapping), where
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    else:
        assert type(a) is type(b) and a == b, (where, a, b)


RANK_FIELDS = (
    "prio_factor",
    "recipe",
    "wf_code",
    "wf_ids",
    "kind_code",
    "kind_ids",
    "leaf_slots",
    "symbol_slots",
    "leaf_heads",
)
STAGE_FIELDS = (
    "code",
    "prose",
    "module_doc",
    "workflow",
    "module_children",
    "mod_of",
    "alive",
    "mod_slots",
    "kids",
)


def same_aux(a: RankAux, b: RankAux) -> None:
    for f in RANK_FIELDS:
        same(getattr(a, f), getattr(b, f), f)
    for f in STAGE_FIELDS:
        same(getattr(a.stages, f), getattr(b.stages, f), "stages." + f)


def test_the_ranking_arrays_saved_by_the_first_reader_load_back_to_the_bit(tmp_path):
    root, idx = built(tmp_path)
    first = open_ws(root, idx)
    assert not loaded(first) and (idx / RANKS_FILE).is_file()
    ws = open_ws(root, idx)
    assert loaded(ws)
    fresh = Published.of(ws.snapshot).aux
    same_aux(ws.published.aux, fresh)
    same_aux(ws.published.aux, first.published.aux)
    for q in QUERIES:
        assert ws.query(q, k=5) == first.query(q, k=5)
    # a save: the loaded aux is extended as the built one is
    ss = root / "pycsamt/emtools/ss.py"
    ss.write_text(ss.read_text() + "\n\ndef estimate_ss_median():\n    pass\n")
    ws.refresh([ss])
    first.refresh([ss])
    same_aux(ws.published.aux, first.published.aux)
    for q in (*QUERIES, "estimate_ss_median"):
        assert ws.query(q, k=5) == first.query(q, k=5)


def test_a_prepared_loaded_aux_updates_as_a_built_one(tmp_path):
    """Published.prepare (the server, after its first answer) makes the
    packed slot maps whole; a save after it gives the built aux's arrays."""
    root, idx = built(tmp_path)
    first = open_ws(root, idx)
    ws = open_ws(root, idx)
    assert loaded(ws)
    ws.published.prepare()
    same_aux(ws.published.aux, first.published.aux)
    st = root / "pycsamt/emtools/strike.py"
    st.write_text(st.read_text() + "\n\ndef strike_rose(a):\n    pass\n")
    ws.refresh([st])
    first.refresh([st])
    same_aux(ws.published.aux, first.published.aux)


def _damaged(idx: Path, how: str, root: Path) -> None:
    path = idx / RANKS_FILE
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"not a zip at all" * 64)
    elif how == "flipped":  # a CRC mismatch inside a member
        mid = len(data) // 2
        path.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :])
    elif how == "empty":
        path.write_bytes(b"")
    elif how in ("foreign", "disagree", "scalar", "slots"):
        ws = open_ws(root, idx)
        arrays: dict[str, Any] = ws.published.aux.to_arrays()
        build_id = ws.manifest["build_id"]
        n = len(ws.snapshot.table)
        if how == "foreign":
            build_id = "0" * 32
        elif how == "disagree":  # a slot outside the table
            arrays["symbol_flat"] = arrays["symbol_flat"] + n
        elif how == "scalar":  # an array of another shape
            arrays["stage_children_keys"] = np.array(3.0)

        else:
            n += 1
        arrays["build_id"] = np.frombuffer(build_id.encode(), np.uint8)
        arrays["n_slots"] = np.array([n], np.int64)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    else:  # pragma: no cover
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    [
        "truncated",
        "garbage",
        "flipped",
        "empty",
        "foreign",
        "disagree",
        "scalar",
        "slots",
    ],
)
def test_a_damaged_or_foreign_file_is_ignored_and_saved_again(tmp_path, how):
    root, idx = built(tmp_path)
    first = open_ws(root, idx)
    _damaged(idx, how, root)
    ws = open_ws(root, idx)
    assert not loaded(ws)
    same_aux(ws.published.aux, first.published.aux)
    for q in QUERIES:
        assert ws.query(q, k=5) == first.query(q, k=5)
    again = open_ws(root, idx)  # the open above saved good arrays again
    assert loaded(again)
    same_aux(again.published.aux, first.published.aux)


def test_another_builds_file_is_not_used(tmp_path):
    root, idx = built(tmp_path)
    open_ws(root, idx)
    saved = (idx / RANKS_FILE).read_bytes()
    Workspace(root, load_profile("pycsamt"), index_dir=idx).rebuild()
    (idx / RANKS_FILE).write_bytes(saved)  # the old build's arrays
    assert not loaded(open_ws(root, idx))


def test_groups_pack_and_unpack_to_the_same_keys_and_values():
    groups = {"": [0], "a.b": [1, 2], "c": [], "d": [3]}
    keys, vals = unpack_groups("g_", pack_groups("g_", groups), 4, int_keys=False)
    assert dict(zip(keys, vals, strict=True)) == groups and keys == list(groups)
    assert unpack_groups("g_", pack_groups("g_", {}), 1, int_keys=False) == ([], [])
    ints = {5: np.array([1, 2], np.int64), 2: np.array([0], np.int64)}
    keys, vals = unpack_groups("i_", pack_groups("i_", ints), 6, int_keys=True)
    assert keys == [5, 2] and vals == [[1, 2], [0]]
    with pytest.raises(ValueError):  # a key holding the separator
        pack_groups("g_", {"a\0b": [1]})
    with pytest.raises(ValueError):  # a value out of bounds
        unpack_groups("g_", pack_groups("g_", groups), 3, int_keys=False)
    with pytest.raises(ValueError):  # keys of the other kind
        unpack_groups("i_", pack_groups("i_", ints), 6, int_keys=False)


def test_a_persist_after_saves_leaves_arrays_the_next_start_reads_back(tmp_path):
    """An editing session's persist writes a new index (a new build id): it
    saves that index's ranking arrays too, so the next start reads them
    instead of deriving them on its way to the first answer."""
    root, idx = built(tmp_path)
    ws = open_ws(root, idx)
    ss = root / "pycsamt/emtools/ss.py"
    ss.write_text(ss.read_text() + "\n\ndef estimate_ss_median():\n    pass\n")
    ws.refresh([ss])
    manifest = ws.persist()
    assert manifest is not None
    with np.load(idx / RANKS_FILE) as saved:  # keyed to the index just written
        assert bytes(saved["build_id"]).decode() == manifest["build_id"]
    nxt = open_ws(root, idx)
    assert loaded(nxt)  # read back, not derived
    same_aux(nxt.published.aux, Published.of(nxt.snapshot).aux)
    for q in (*QUERIES, "estimate_ss_median"):
        assert nxt.query(q, k=5) == ws.query(q, k=5)
