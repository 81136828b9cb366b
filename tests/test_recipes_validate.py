"""Every recipe snippet and dotted symbol must exist in the real corpus (issue 7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

RECIPES = sorted(
    (Path(__file__).resolve().parents[1] / "assistant_recipes").glob("*.md")
)
FENCE = re.compile(r"```python\n(.*?)```", re.S)
DOTTED = re.compile(r"`(pycsamt(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


@pytest.fixture(scope="module")
def ws(real_corpus, tmp_path_factory):
    w = Workspace(real_corpus, load_profile(), index_dir=tmp_path_factory.mktemp("idx"))
    w.ensure_model()
    return w


def test_there_are_recipes():
    names = {p.stem for p in RECIPES}
    assert len(RECIPES) >= 10
    assert {"static_shift", "data_qc", "denoising", "full_workflow"} <= names


@pytest.mark.corpus
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_recipe_snippets_validate(ws, recipe: Path):
    text = recipe.read_text(encoding="utf-8")
    snippets = FENCE.findall(text)
    assert snippets, "every recipe carries a python snippet"
    for code in snippets:
        report = ws.validate(code)
        assert report["syntax_ok"], report
        assert report["ok"], (recipe.name, report["errors"])


@pytest.mark.corpus
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_recipe_symbols_exist(ws, recipe: Path):
    names = DOTTED.findall(recipe.read_text(encoding="utf-8"))
    assert names
    absent = [n for n in names if ws.model.resolve(n).absent]
    assert not absent, absent
