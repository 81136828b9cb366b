"""README's editor snippets are the files the real-editor tests load.

``tests/editors/editors_test.sh`` runs Neovim and Emacs configured only by
``docs/editors/*`` (unmodified); this checks that README.md embeds each of
those files verbatim as a fenced code block, so what a user copies from the
README is what was run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNIPPETS = sorted(
    p
    for p in (REPO / "docs" / "editors").iterdir()
    if p.suffix in (".lua", ".el", ".toml")
)
_FENCE = re.compile(r"^```[\w+-]*\n(.*?)^```\s*$", re.M | re.S)


def readme_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [m.group(1) for m in _FENCE.finditer(text)]


def test_there_are_snippets() -> None:
    names = {p.name for p in SNIPPETS}
    assert {"nvim.lua", "nvim-0.10.lua", "eglot.el", "helix.toml"} <= names


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.name)
def test_readme_embeds_the_snippet_verbatim(snippet: Path) -> None:
    assert snippet.read_text(encoding="utf-8") in readme_blocks(), (
        f"README.md has no code block equal to docs/editors/{snippet.name}"
    )


@pytest.mark.parametrize(
    "snippet",
    [p for p in SNIPPETS if p.name != "helix.toml"],  # Helix: no package to run
    ids=lambda p: p.name,
)
def test_the_editor_test_loads_the_snippet(snippet: Path) -> None:
    script = (REPO / "tests" / "editors" / "editors_test.sh").read_text()
    assert snippet.name in script
