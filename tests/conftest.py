"""Shared fixtures: the real pyCSAMT corpus and small fixture trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from pycsamt_lsp.corpus.discovery import CorpusError, fetch_corpus
from pycsamt_lsp.corpus.profile import load_profile

# Hypothesis sizes (the LSP fuzz suites): "ci" by default (derandomised, no
# example database written into the tree), `--hypothesis-profile=nightly`
# for many more examples.
settings.register_profile("ci", max_examples=250, derandomize=True, database=None)
settings.register_profile("nightly", max_examples=3000)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def pycsamt_profile():
    """The default profile."""
    return load_profile("pycsamt")


@pytest.fixture(scope="session")
def real_corpus(pycsamt_profile) -> Path:
    """Root of the unpacked pyCSAMT 2.6.4 sdist (fetched once, then cached).

    Tests must not write into it: copy it (see ``real_corpus_copy``) when a
    test edits files or persists an index there.
    """
    try:
        return fetch_corpus(pycsamt_profile)
    except CorpusError as exc:  # pragma: no cover - network-less machine
        if os.environ.get("CI"):
            raise
        pytest.skip(f"real corpus unavailable: {exc}")


#: fixtures that start a real server, a real CLI process or need the real corpus
_E2E_FIXTURES = frozenset(
    {"client", "lsp_client", "real_client", "real_corpus", "real_corpus_copy"}
)


def pytest_collection_modifyitems(config, items):
    """Two lanes: ``-m unit`` (in-process, fixture trees, seconds) and
    ``-m e2e`` (real server over LSP, CLI processes, the real corpus).

    A module that imports ``pytest_lsp`` or ``subprocess`` starts processes,
    so all of its tests are end to end."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        module = getattr(item, "module", None)
        spawns = module is not None and any(
            name in vars(module) for name in ("pytest_lsp", "subprocess")
        )
        e2e = (
            spawns
            or bool(fixtures & _E2E_FIXTURES)
            or any(name.startswith("real_") for name in fixtures)
            or item.get_closest_marker("corpus") is not None
            or item.get_closest_marker("e2e") is not None
            or item.get_closest_marker("realpkgs") is not None
        )
        item.add_marker(pytest.mark.e2e if e2e else pytest.mark.unit)
