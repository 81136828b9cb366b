"""Test-file policy: which paths, modules and symbols are unit tests.

Why one module: retrieval keeps tests out of answers, developer search
labels them, the package model never suggests them and the evals count test
pollution; those four checks used to be written four times and drifted. The
rules below are the ones each caller used, named, so a change is made once.

* a **path** is a test when a folder above it is ``tests`` or its file name
  matches one of the globs (the profile's ``test_globs``; the evals' default
  adds ``*_test.py`` and any ``test_*`` name);
* a **module** (dotted name) is a test when one of its parts is ``tests``,
  ``test``, ``testing`` or ``conftest``, or starts with ``test_``;
* a **symbol** is a test when it lives in a ``tests`` package.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

__all__ = [
    "EVAL_TEST_GLOBS",
    "PROFILE_TEST_GLOBS",
    "TEST_DIRS",
    "is_test_module",
    "is_test_path",
    "is_test_symbol",
]

#: Folder names whose files are all tests.
TEST_DIRS = frozenset({"tests"})
#: The default ``test_globs`` of a profile.
PROFILE_TEST_GLOBS: tuple[str, ...] = ("test_*.py", "conftest.py")
#: The evals' default rule (no profile at hand): any ``test_*`` name too.
EVAL_TEST_GLOBS: tuple[str, ...] = ("test_*", "*_test.py", "conftest.py")
_MODULE_TEST_PARTS = frozenset({"tests", "test", "testing", "conftest"})


def is_test_path(path: str | None, globs: Sequence[str] = EVAL_TEST_GLOBS) -> bool:
    """True for a unit-test file: under a ``tests`` folder, or a name in *globs*.

    *path* is corpus-relative; backslashes are read as separators; ``None``
    or ``""`` is not a test.
    """
    if not path:
        return False
    p = PurePosixPath(str(path).replace("\\", "/"))
    if TEST_DIRS.intersection(p.parts[:-1]):
        return True
    return any(fnmatchcase(p.name, g) for g in globs)


def is_test_module(dotted: str) -> bool:
    """True for a dotted module name inside a test package or a test module."""
    return any(
        part in _MODULE_TEST_PARTS or part.startswith("test_")
        for part in dotted.split(".")
    )


def is_test_symbol(symbol: str) -> bool:
    """True for a fully qualified symbol defined in a ``tests`` package."""
    return ".tests." in symbol
