"""The one errors module: every deliberate exception lives there, and only
argument errors are the caller's fault (LSP ``InvalidParams``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pycsamt_lsp import errors

PKG = Path(errors.__file__).parent


def test_no_exception_class_is_defined_outside_errors_py():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PKG:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (
                node.name.endswith(("Error", "Cancelled", "Exception"))
            ):
                found.append(f"{path.relative_to(PKG)}:{node.lineno} {node.name}")
    assert found == []


def test_old_homes_re_export_the_same_classes():
    from pycsamt_lsp.corpus.discovery import CorpusError
    from pycsamt_lsp.devsearch.search import DevSearchError
    from pycsamt_lsp.evals.harness import SuiteError
    from pycsamt_lsp.index.store import IndexLoadError
    from pycsamt_lsp.search.dense import EmbeddingError
    from pycsamt_lsp.workspace.facade import BuildCancelled, QueryError

    assert QueryError is errors.QueryError
    assert BuildCancelled is errors.BuildCancelled
    assert CorpusError is errors.CorpusError
    assert DevSearchError is errors.DevSearchError
    assert SuiteError is errors.SuiteError
    assert IndexLoadError is errors.IndexLoadError
    assert EmbeddingError is errors.EmbeddingError


@pytest.mark.parametrize(
    "cls",
    [errors.ArgumentError, errors.QueryError, errors.DevSearchError, errors.SuiteError],
)
def test_argument_errors_are_the_callers_fault(cls):
    exc = cls("bad field")
    assert errors.is_argument_error(exc)
    assert isinstance(exc, ValueError)  # code catching the builtin keeps working


@pytest.mark.parametrize(
    "exc",
    [
        errors.BuildCancelled("stop"),
        errors.IndexLoadError("corrupt"),
        errors.EmbeddingError("down"),
        errors.AnswerError("timeout"),
        errors.CorpusError("missing"),
        ValueError("an internal bug that happens to be a ValueError"),
        KeyError("x"),
    ],
)
def test_everything_else_is_internal(exc):
    assert not errors.is_argument_error(exc)


def test_every_class_is_a_pycsamt_error():
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, errors.PycsamtError), name
