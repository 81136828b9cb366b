"""check_meta's bulk checks (issue 18, warm start) refuse exactly what the
per-value checks refused, naming the same bad entry."""

from __future__ import annotations

import copy

import pytest

from pycsamt_lsp.errors import IndexLoadError
from pycsamt_lsp.storage.validate import check_meta

GOOD = {
    "build_id": "b",
    "ids": ["a.py:1-2", "a.py:3-4", "b.py:1-1"],
    "paths": ["a.py", "a.py", "b.py"],
    "kinds": ["python_symbol", "python_method", "module_doc"],
    "symbols": ["m.f", None, "m"],
    "workflows": [None, "static_shift", None],
    "files": {"a.py": ["0" * 64, [0, 1]], "b.py": ["1" * 64, [2]]},
    "skipped": {},
}


def test_a_good_meta_passes() -> None:
    check_meta(copy.deepcopy(GOOD), 3)
    empty = {**copy.deepcopy(GOOD), "files": {}}
    check_meta(empty, 3)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("ids", 1), 7, "column 'ids' holds values of another type"),
        (("symbols", 0), 1.5, "column 'symbols' holds values of another type"),
        (("workflows", 1), True, "column 'workflows' holds values of another type"),
        (("files", "a.py"), "nope", "file entry 'a.py' is malformed"),
        (("files", "b.py"), ["1" * 64], "file entry 'b.py' is malformed"),
        (("files", "b.py"), [3, [2]], "file entry 'b.py' is malformed"),
        (("files", "b.py"), ["1" * 64, 2], "file entry 'b.py' is malformed"),
        (("files", "b.py"), ["1" * 64, [True]], "file entry 'b.py' is malformed"),
        (("files", "b.py"), ["1" * 64, [3]], "file entry 'b.py' is malformed"),
        (("files", "a.py"), ["0" * 64, [-1, 1]], "file entry 'a.py' is malformed"),
        (("files", "a.py"), ["0" * 64, [0, "1"]], "file entry 'a.py' is malformed"),
    ],
)
def test_bad_values_are_refused_with_the_entry_named(path, value, message) -> None:
    meta = copy.deepcopy(GOOD)
    meta[path[0]][path[1]] = value
    with pytest.raises(IndexLoadError, match=message):
        check_meta(meta, 3)
