"""Helpers for the pytest-lsp end-to-end tests: fixture corpora and waits."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

PROFILE_TOML = """
name = "fixture"
package = "pkg"
roots = ["pkg", "docs"]
root_docs = ["README.md"]
suffixes = [".py", ".rst", ".md"]
excludes = ["__pycache__", "/tests/"]
test_globs = ["test_*.py", "conftest.py"]
recipe_dir = "assistant_recipes"
devsearch_roots = ["pkg", "docs"]

workflow_paths = []
expansions = [["offset", ["static", "shift"]]]

[priority]
high = ["pkg/core"]
docs = ["docs"]

[workflows]
static_shift = ["static shift", "galvanic"]
phase_analysis = ["phase tensor", "strike"]
"""


def write_fixture_corpus(root: Path) -> Path:
    """A tiny package corpus with a profile; returns the profile path."""
    files = {
        "pkg/__init__.py": '"""Fixture package."""\nfrom .core.shift import correct_shift\n__all__ = ["correct_shift"]\n',
        "pkg/core/__init__.py": "",
        "pkg/core/shift.py": '''
            """Static shift tools."""


            def correct_shift(data, factor: float = 1.0, *, method: str = "ama"):
                """Correct the galvanic static shift of apparent resistivity.

                Parameters
                ----------
                data : array
                    Apparent resistivity.
                factor : float
                    Multiplicative factor.
                """
                return data


            class ShiftAgent:
                """Runs the static shift workflow."""

                def __init__(self, line: str, k: int = 3):
                    self.line = line

                def run(self, verbose: bool = False):
                    """Run the correction on the line."""
                    return correct_shift(self.line)
        ''',
        "pkg/phase.py": '''
            """Phase tensor analysis."""


            def strike_angle(z, freq=None):
                """Geoelectric strike from the phase tensor."""
                return 0.0
        ''',
        "docs/guide.rst": "Guide\n=====\n\nHow to correct a static shift with the agent.\n\nPhase\n-----\n\nThe phase tensor gives the strike.\n",
        "pkg/tests/test_shift.py": "def test_x():\n    assert True\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    profile = root / "fixture.toml"
    profile.write_text(PROFILE_TOML, encoding="utf-8")
    return profile


async def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05):
    """Poll *predicate* until it returns a truthy value (bounded)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > end:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)
