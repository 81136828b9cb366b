"""What ``pycsamt-lsp serve`` imports before any command needs it (issue 18).

The answering layer (answer/, routing/, the dense lane), developer search,
evaluations and PDF reading are imported by the commands that use them, not
at start-up: each is memory the server would hold and time its warm start
would pay. The ask settings the server hands over at start wait on the
workspace until the answering layer loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.workspace.facade import Workspace

#: Feature folders the server must not import at start.
LAZY_PREFIXES = (
    "pycsamt_lsp.answer",
    "pycsamt_lsp.routing",
    "pycsamt_lsp.devsearch",
    "pycsamt_lsp.evals",
    "pycsamt_lsp.search.dense",
    "pycsamt_lsp.chunking.pdf",
)


def test_serve_imports_no_command_only_module() -> None:
    code = (
        "import json, sys\n"
        "import pycsamt_lsp.lsp.server\n"
        "import pycsamt_lsp.commands.handlers  # what a first query runs\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = json.loads(out.stdout)
    assert "pycsamt_lsp.lsp.server" in loaded
    eager = [m for m in loaded if m.startswith(LAZY_PREFIXES)]
    assert eager == []


def test_ask_settings_given_before_the_answering_layer_loads(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("x = 1\n")
    profile = profile_from_dict({"name": "t", "package": "pkg", "roots": ["pkg"]})
    ws = Workspace(root, profile, index_dir=tmp_path / "idx", workers=1)
    ws.ask_changes = {"model": "gpt-pending", "dense": True}
    assert "answers" not in vars(ws)
    assert ws.answers.settings == AskSettings(model="gpt-pending", dense=True)
    other = Workspace(root, profile, index_dir=tmp_path / "idx2", workers=1)
    assert other.answers.settings == AskSettings()
