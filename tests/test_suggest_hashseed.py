"""Did-you-mean lists do not depend on the interpreter's hash seed.

The suggestion index looked names up by the tokens of a *set*, and cut its
shortlist (``max(30, 8 * k)`` names) among equal scores in the order the names
were first met, i.e. in that set's order: the same typo got other "did you
mean" names, and other quick fixes, after a restart (session 6). Here 80
names score alike for ``red_blue``; four servers, each under another
``PYTHONHASHSEED``, must publish the same diagnostic and offer the same
fixes.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_helpers import PROFILE_TOML
from lsp_raw import RawClient

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "amber",
    "basil",
    "cedar",
    "daisy",
    "ember",
    "fern",
    "ginger",
    "hazel",
    "iris",
    "jasper",
    "kale",
    "laurel",
    "maple",
    "nutmeg",
]
USE = "from pkg.paint import red_blue\n"
SEEDS = ("0", "1", "2", "3")


def _corpus(root: Path) -> Path:
    """A package whose ``pkg.paint`` has ``red_<w>`` and ``blue_<w>`` for
    40 words: every one covers half of ``red_blue`` (equal scores)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text('"""Fixture package."""\n')
    defs = "".join(
        f'\n\ndef {c}_{w}(x):\n    """{c.title()} {w}."""\n    return x\n'
        for w in WORDS
        for c in ("red", "blue")
    )
    (root / "pkg/paint.py").write_text('"""Colour tools."""\n' + defs)
    (root / "use.py").write_text(USE)
    profile = root / "fixture.toml"
    profile.write_text(textwrap.dedent(PROFILE_TOML))
    return profile


def _suggestions(root: Path, profile: Path, seed: str) -> dict[str, Any]:
    """The diagnostic messages and quick-fix titles for :data:`USE` from a
    server started with ``PYTHONHASHSEED=seed``."""
    client = RawClient(env={"PYTHONHASHSEED": seed})
    try:
        client.initialize(root, profile)
        client.wait_ready()
        uri = (root / "use.py").as_uri()
        client.open(uri, USE)
        deadline = time.monotonic() + 60
        diags: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not diags:
            for n in client.notifications("textDocument/publishDiagnostics"):
                if n["params"]["uri"] == uri and n["params"]["diagnostics"]:
                    diags = n["params"]["diagnostics"]
            time.sleep(0.05)
        assert diags, client.stderr[-2000:]
        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": diags[0]["range"],
                "context": {"diagnostics": diags},
            },
        )["result"]
        return {
            "messages": [d["message"] for d in diags],
            "fixes": [a["title"] for a in actions or []],
        }
    finally:
        client.close()


@pytest.mark.e2e
def test_the_same_typo_gets_the_same_suggestions_under_every_hash_seed(
    tmp_path: Path,
):
    profile = _corpus(tmp_path)
    got = {seed: _suggestions(tmp_path, profile, seed) for seed in SEEDS}
    first = got[SEEDS[0]]
    assert "did you mean" in first["messages"][0], first  # there are some
    assert first["fixes"], first
    for seed in SEEDS[1:]:
        assert got[seed] == first, (seed, got[seed], first)
