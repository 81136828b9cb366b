"""Start-up: a process imports only what its command needs (issue 18).

``pycsamt-lsp --help`` used to import the whole engine (answers, evaluation,
developer search, PDF support, numpy: ~0.6 s of CPU against the reference
CLI's 0.12 s) because the command catalogue imported every handler. The
registry now names handlers lazily (:class:`~pycsamt_lsp.commands.registry.Lazy`);
these tests hold each name to a real function, and check in a fresh
interpreter what describing the commands and starting a build worker import.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pycsamt_lsp.commands.catalog import default_registry
from pycsamt_lsp.commands.registry import Lazy

HEAVY = (
    "numpy",
    "pycsamt_lsp.workspace",
    "pycsamt_lsp.answer",
    "pycsamt_lsp.evals",
    "pycsamt_lsp.devsearch",
    "pycsamt_lsp.search",
    "pycsamt_lsp.model",
    "pycsamt_lsp.index",
    "pycsamt_lsp.analysis",
)


def test_every_lazy_handler_and_formatter_names_a_function() -> None:
    import importlib

    seen = 0
    for cmd in default_registry().values():
        for ref in (cmd.handler, cmd.format):
            if isinstance(ref, Lazy):
                target = getattr(importlib.import_module(ref.module), ref.name)
                assert callable(target), (cmd.name, ref)
                assert ref.__name__ == ref.name
                seen += 1
    assert seen >= 2 * len(default_registry()) - 1


def _imported_after(code: str) -> list[str]:
    probe = (
        "import sys, json\n"
        f"{code}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_help_and_the_parser_import_no_engine_module() -> None:
    got = _imported_after(
        "from pycsamt_lsp import cli\n"
        "cli.build_parser(cli.default_registry()).format_help()\n"
        "cli.default_registry().describe()"
    )
    assert got == []


def test_a_build_worker_imports_no_numpy_and_no_request_side() -> None:
    got = _imported_after(
        "import pycsamt_lsp.model.state, pycsamt_lsp.index.heap, pycsamt_lsp.index.workers"
    )
    assert "numpy" not in got
    assert not [
        m for m in got if m.startswith(("pycsamt_lsp.answer", "pycsamt_lsp.search"))
    ]


def test_the_server_answers_initialize_before_importing_the_engine() -> None:
    """``serve`` imports pygls, lsprotocol and ``lsp/`` only: numpy and the
    index modules (~0.07 s of a warm start's CPU, issue 18) are imported in
    the command lane once ``initialize`` is answered (``indexing.preload``)."""
    got = _imported_after(
        "from pycsamt_lsp.lsp.server import create_server\ncreate_server()"
    )
    assert got == []
