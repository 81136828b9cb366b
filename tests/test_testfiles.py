"""One test-file policy, in parity with the four checks it replaced: the
profile's, the evals' default, the package model's (modules) and the
answer's (symbols)."""

from __future__ import annotations

import fnmatch
from pathlib import PurePosixPath

import pytest

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.corpus.testfiles import (
    PROFILE_TEST_GLOBS,
    is_test_module,
    is_test_path,
    is_test_symbol,
)
from pycsamt_lsp.evals.harness import default_is_test_path

PATHS = [
    "pycsamt/tests/test_ss.py",
    "pycsamt/tests/data/x.edi",
    "tests/conftest.py",
    "pycsamt/emtools/ss.py",
    "pycsamt/test_x.py",
    "pycsamt/x_test.py",
    "pycsamt/test_notes.txt",
    "pycsamt/testing/util.py",
    "conftest.py",
    "pycsamt\\tests\\test_win.py",
    "docs/tests.rst",
    "",
    None,
]


def old_profile(rel: str, globs=PROFILE_TEST_GLOBS) -> bool:
    p = PurePosixPath(rel)
    if "tests" in p.parts[:-1]:
        return True
    return any(fnmatch.fnmatch(p.name, g) for g in globs)


def old_evals(path) -> bool:
    if not path:
        return False
    p = PurePosixPath(str(path).replace("\\", "/"))
    if "tests" in p.parts[:-1]:
        return True
    name = p.name
    return (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


def old_model(dotted: str) -> bool:
    return any(
        p in ("tests", "test", "testing", "conftest") or p.startswith("test_")
        for p in dotted.split(".")
    )


@pytest.mark.parametrize("path", PATHS)
def test_parity_with_the_evals_default(path):
    assert default_is_test_path(path) == old_evals(path) == is_test_path(path)


@pytest.mark.parametrize("path", [p for p in PATHS if p and "\\" not in p])
def test_parity_with_the_profile(path):
    prof = load_profile("pycsamt")
    assert prof.is_test_path(path) == old_profile(path, prof.test_globs)
    assert is_test_path(path, prof.test_globs) == old_profile(path, prof.test_globs)


@pytest.mark.parametrize(
    "dotted",
    [
        "pycsamt.tests.test_ss",
        "pycsamt.emtools.ss",
        "pkg.testing",
        "conftest",
        "a.test",
    ],
)
def test_parity_with_the_package_model(dotted):
    assert is_test_module(dotted) == old_model(dotted)


def test_symbols():
    assert is_test_symbol("pycsamt.tests.test_ss.test_x")
    assert not is_test_symbol("pycsamt.emtools.ss.estimate_ss_ama")
