"""API cards, docstring parsing, symbol search and the buffer analysis.

Engine-level tests (no LSP): cards are built from a Workspace over a fixture
package (``lsp_helpers.write_fixture_corpus`` plus the docstring-style module
of ``test_hover_lsp``), and once over the real pyCSAMT corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_helpers import write_fixture_corpus
from pycsamt_lsp.analysis.buffer import analyze, completion_context
from pycsamt_lsp.analysis.editor import card_at, complete, current_package
from pycsamt_lsp.cards.card import card_for, clean_rst, parse_docstring, search_symbols
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace
from test_hover_lsp import SCRIPT, col, write_extra


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "corpus"
    root.mkdir()
    write_extra(root)
    profile = write_fixture_corpus(root)
    w = Workspace(
        root, load_profile(str(profile)), index_dir=tmp_path / "idx", workers=1
    )
    w.build()
    return w


# -- docstrings --------------------------------------------------------------------


def test_numpydoc():
    info = parse_docstring(
        """Estimate things.

        Second line of the summary.

        Parameters
        ----------
        sites : Sites, str
            EDI data source accepted by
            :func:`ensure_sites`.
        api_key, model : str
        *args : tuple
            Extra.
        half_window : int, default 3
            Neighbours.

            More text that is not the first paragraph.

        Returns
        -------
        pandas.DataFrame
            One row per station.
        """.replace("\n        ", "\n")
    )
    assert info.style == "numpy"
    assert info.summary == "Estimate things."
    assert info.params["sites"] == (
        "Sites, str",
        "EDI data source accepted by :func:`ensure_sites`.",
    )
    assert info.params["api_key"] == ("str", "") and info.params["model"] == ("str", "")
    assert info.params["args"] == ("tuple", "Extra.")
    assert info.params["half_window"] == ("int, default 3", "Neighbours.")
    assert (info.returns_type, info.returns) == (
        "pandas.DataFrame",
        "One row per station.",
    )


def test_google_and_sphinx():
    g = parse_docstring(
        "Walk.\n\nArgs:\n    path (str): Folder.\n    depth: How deep,\n        counted.\n"
        "    **options: Passed on.\n\nReturns:\n    list: The files.\n"
    )
    assert g.style == "google"
    assert g.params == {
        "path": ("str", "Folder."),
        "depth": (None, "How deep, counted."),
        "options": (None, "Passed on."),
    }
    assert (g.returns_type, g.returns) == ("list", "The files.")
    s = parse_docstring(
        "Scale.\n\n:param rho: Resistivity\n    in ohm-m.\n:type rho: numpy.ndarray\n"
        ":param float scale: The factor.\n:returns: Scaled.\n:rtype: numpy.ndarray\n"
    )
    assert s.style == "sphinx" and s.summary == "Scale."
    assert s.params == {
        "rho": ("numpy.ndarray", "Resistivity in ohm-m."),
        "scale": ("float", "The factor."),
    }
    assert (s.returns_type, s.returns) == ("numpy.ndarray", "Scaled.")


def test_plain_docstrings_and_rst_cleanup():
    assert parse_docstring(None).summary == ""
    p = parse_docstring("One line\ncontinued.\n\nBody.\n\n>>> x = 1")
    assert (p.summary, p.params, p.style) == ("One line continued.", {}, None)
    assert parse_docstring(">>> example()").summary == ""
    assert clean_rst("see :func:`~pkg.f` and ``x = 1``") == "see `pkg.f` and `x = 1`"
    assert clean_rst(":class:`Agent <pkg.Agent>`") == "`Agent`"


# -- cards ---------------------------------------------------------------------------


def test_function_card(ws: Workspace):
    card = card_for(ws, "pkg.correct_shift")  # the re-export
    assert card is not None
    assert card.qualname == "pkg.core.shift.correct_shift"
    assert card.name == "pkg.correct_shift"
    assert card.kind == "function"
    assert (
        card.signature
        == 'def correct_shift(data, factor: float = 1.0, *, method: str = "ama")'
    )
    factor = card.param("factor")
    assert (factor.default, factor.annotation, factor.description) == (
        "1.0",
        "float",
        "Multiplicative factor.",
    )
    assert card.param("data").doc_type == "array"
    assert card.param("method").kind == "keyword_only"
    assert card.workflow == "static_shift"
    assert card.path == "pkg/core/shift.py" and card.line == 4
    assert card.link == (ws.root / "pkg/core/shift.py").as_uri() + "#L4"
    md = card.to_markdown()
    assert md.startswith("```python\ndef correct_shift(")
    assert "via `pkg.correct_shift`" in md
    assert f"]({card.link})" in md
    d = card.to_dict()
    json.dumps(d)
    assert d["params"][1]["description"] == "Multiplicative factor."
    assert d["link"] == card.link


def test_class_and_method_cards(ws: Workspace):
    child = card_for(ws, "pkg.styles.Child")
    assert child.kind == "class"
    assert child.signature == "class Child(name: str, *, level: int = 1)"
    assert [p.name for p in child.params] == ["name", "level"]
    assert child.param("name").description == "The processor name."
    assert child.methods == ("describe", "process")  # inherited, public only
    assert child.bases == ("Base",)
    assert "**Constructor parameters**" in child.to_markdown()

    run = card_for(ws, "pkg.core.shift.ShiftAgent.run")
    assert run.kind == "method" and run.bound == "self"
    assert [p.name for p in run.params] == ["verbose"]
    assert run.signature == "def run(self, verbose: bool = False)"

    g = card_for(ws, "pkg.styles.google_style")
    assert g.param("depth").description == "How deep to look, counted from `path`."
    assert g.param("options").kind == "var_keyword"
    assert (g.returns, g.returns_type, g.returns_doc) == (
        None,
        "list",
        "The files found.",
    )
    s = card_for(ws, "pkg.styles.sphinx_style")
    assert s.param("rho").type == "numpy.ndarray"
    assert s.param("scale").description == "The factor."
    assert "**Returns** `numpy.ndarray` — The scaled values." in s.to_markdown()


def test_module_card_and_unknowns(ws: Workspace):
    mod = card_for(ws, "pkg.core.shift")
    assert mod.kind == "module" and mod.summary == "Static shift tools."
    assert mod.members == ("correct_shift", "ShiftAgent")
    assert mod.line == 1
    pkg_card = card_for(ws, "pkg.core", import_path=True)
    assert pkg_card.kind == "package" and "shift" in pkg_card.members
    assert card_for(ws, "pkg.nothing_here") is None
    assert card_for(ws, "pkg.core.shift.ShiftAgent.nope") is None
    assert card_for(ws, "numpy.array") is None
    assert card_for(ws, "pkg.correct_shift", import_path=True) is None  # not a module


def test_long_signatures_and_markdown_escaping(ws: Workspace):
    target = ws.root / "pkg" / "phase.py"
    target.write_text(
        target.read_text()
        + '\n\ndef wide(alpha: dict[str, int] = {"a": 1}, beta: tuple = (1, 2), '
        "gamma_long_name: float | None = None, *rest, delta=3, **kw) -> list:\n"
        '    """Wide <b>bold</b> | pipes.\n\n    Parameters\n    ----------\n'
        "    alpha : dict\n        Uses <angle> brackets and `code <x>`.\n"
        '    """\n'
    )
    ws.refresh([target])
    card = card_for(ws, "pkg.phase.wide")
    block = card.signature_block()
    assert block.splitlines() == [
        'def wide(alpha: dict[str, int] = {"a": 1}, beta: tuple = (1, 2),',
        "    gamma_long_name: float | None = None, *rest, delta=3, **kw) -> list",
    ]
    assert " ".join(x.strip() for x in block.splitlines()) == card.signature
    md = card.to_markdown()
    assert "Wide &lt;b&gt;bold&lt;/b&gt; \\| pipes." in md
    assert "Uses &lt;angle&gt; brackets and `code <x>`." in md
    assert "- `*rest`" in md and "- `**kw`" in md


def test_cards_follow_corpus_edits(ws: Workspace):
    before = card_for(ws, "pkg.phase.strike_angle")
    assert [p.name for p in before.params] == ["z", "freq"]
    target = ws.root / "pkg" / "phase.py"
    target.write_text(target.read_text().replace("freq=None", "freq=None, window=5"))
    ws.refresh([target])
    after = card_for(ws, "pkg.phase.strike_angle")
    assert [p.name for p in after.params] == ["z", "freq", "window"]
    assert card_for(ws, "pkg.phase.strike_angle") is after  # cached again


# -- symbol search -------------------------------------------------------------------


def test_search_symbols(ws: Workspace):
    names = [(h["name"], h["kind"]) for h in search_symbols(ws, "ru")]
    assert ("run", "method") in names
    [run] = [h for h in search_symbols(ws, "ru") if h["name"] == "run"]
    assert run["container"] == "pkg.core.shift.ShiftAgent"
    assert run["uri"].endswith("pkg/core/shift.py") and run["line_start"] > 1
    assert search_symbols(ws, "ShiftAgent")[0]["symbol"] == "pkg.core.shift.ShiftAgent"
    assert search_symbols(ws, "sa")[0]["name"] == "ShiftAgent"  # camel-case initials
    assert search_symbols(ws, "corshi")[0]["name"] == "correct_shift"  # word prefixes
    assert [h["name"] for h in search_symbols(ws, "Agent.ru")] == ["run"]
    assert search_symbols(ws, "zzzz") == []
    assert len(search_symbols(ws, "", limit=3)) == 3
    kinds = {h["name"]: h["kind"] for h in search_symbols(ws, "", limit=100)}
    assert kinds["ShiftAgent"] == "class" and kinds["correct_shift"] == "function"


# -- the buffer analysis and editor queries ----------------------------------------


def test_card_at_and_complete(ws: Workspace):
    idx = analyze(SCRIPT, "pkg")
    lines = SCRIPT.splitlines()
    _ref, card = card_at(ws, idx, 7, col(lines[7], "run"))
    assert card.qualname == "pkg.core.shift.ShiftAgent.run"
    assert card_at(ws, idx, 10, 2) is None
    text = "import pkg.core.shift as sh\nsh."
    got = complete(ws, analyze(text, "pkg"), 1, 3)
    assert [c.name for c in got] == ["correct_shift", "ShiftAgent"]
    assert got[0].card(ws).kind == "function"
    assert complete(ws, analyze("x = 1", "pkg"), 0, 5) is None
    assert complete(ws, analyze("from pkg.nope import ", "pkg"), 0, 21) == []
    rel = complete(ws, analyze("from . import ", "pkg"), 0, 14, "pkg.core")
    assert [c.name for c in rel] == ["shift"]
    assert current_package(ws, str(ws.root / "pkg/core/shift.py")) == "pkg.core"
    assert current_package(ws, str(ws.root / "pkg/core/__init__.py")) == "pkg.core"
    assert current_package(ws, "/elsewhere/script.py") is None


def test_analysis_positions_and_bindings():
    idx = analyze(SCRIPT, "pkg")
    assert not {"unknown_thing", "data"} & set(idx.bindings)
    assert idx.bindings["SA"].dotted == "pkg.core.shift.ShiftAgent"
    assert idx.bindings["sh"].import_path
    lines = SCRIPT.splitlines()
    r = idx.ref_at(1, col(lines[1], "core"))
    assert (r.dotted, r.import_path) == ("pkg.core", True)
    r = idx.ref_at(9, lines[9].index("correct_shift"))
    assert r.dotted == "pkg.core.shift.correct_shift"
    assert r.start == lines[9].index("correct_shift")
    r = idx.ref_at(5, col(lines[5], "factor"))
    assert r.param == "factor" and r.dotted == "pkg.core.shift.correct_shift"
    assert idx.ref_at(10, 2) is None


def test_analysis_relative_imports_and_rebinding():
    text = "from . import shift\nfrom ..phase import strike_angle\nshift = 3\nshift\n"
    idx = analyze(text, "pkg", "pkg.core")
    assert idx.ref_at(0, 15).dotted == "pkg.core.shift"
    assert idx.ref_at(1, 22).dotted == "pkg.phase.strike_angle"
    assert idx.ref_at(1, 9).dotted == "pkg.phase"
    assert "shift" not in idx.bindings  # rebound: no longer trusted
    assert idx.ref_at(3, 1) is None
    assert not analyze(text, "pkg").bindings  # relative, with no package to resolve in


def test_analysis_survives_syntax_errors():
    text = "import pkg.core.shift as sh\nif x:\nsh.correct_shift(\nfrom pkg.phase import (strike_angle,\n"
    idx = analyze(text, "pkg")
    assert not idx.parsed
    assert idx.ref_at(2, 5).dotted == "pkg.core.shift.correct_shift"
    assert idx.ref_at(3, 25).dotted == "pkg.phase.strike_angle"
    assert idx.ref_at(3, 10).dotted == "pkg.phase"
    assert idx.ref_at(2, 20) is None


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("from pkg.sub import ", ("names", "pkg.sub", "")),
        ("from pkg.sub import a as b, c", ("names", "pkg.sub", "c")),
        ("from .sub import ", ("names", ".sub", "")),
        ("import pkg.", ("modules", "pkg", "")),
        ("import os, pkg.su", ("modules", "pkg", "su")),
        ("from pkg.sub.", ("modules", "pkg.sub", "")),
        ("x = alias.sub.", ("attributes", "alias.sub", "")),
        ("f(alias.na", ("attributes", "alias", "na")),
        ("x = 'alias.", None),
        ("y = 1  # alias.", None),
        ("x = f().", None),
    ],
)
def test_completion_contexts(prefix, expected):
    ctx = completion_context([prefix], 0, len(prefix))
    got = None if ctx is None else (ctx.kind, ctx.base, ctx.prefix)
    assert got == expected


# -- the real corpus ------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_ws(real_corpus, pycsamt_profile, tmp_path_factory) -> Workspace:
    w = Workspace(
        real_corpus, pycsamt_profile, index_dir=tmp_path_factory.mktemp("cards") / "idx"
    )
    w.build()
    return w


@pytest.mark.corpus
def test_real_cards(real_ws: Workspace):
    card = card_for(real_ws, "pycsamt.emtools.ss.estimate_ss_ama")
    names = [p.name for p in card.params]
    assert names[:3] == ["sites", "sort_by", "half_window"]
    assert {"pband", "max_skew", "robust_freq", "api"} <= set(names)
    hw = card.param("half_window")
    assert (hw.default, hw.annotation) == ("3", "int")
    assert hw.description.startswith("Neighbours on each side")
    assert card.returns_type == "pandas.DataFrame"
    assert card.workflow == "static_shift"
    assert card.summary == "Estimate AMA static-shift correction factors."

    agent = card_for(real_ws, "pycsamt.agents.StaticShiftAgent")
    assert agent.qualname == "pycsamt.agents.static_shift.StaticShiftAgent"
    assert "execute" in agent.methods
    assert agent.param("method").default == '"ama"'

    idx = analyze("from pycsamt.agents import ", "pycsamt")
    got = complete(real_ws, idx, 0, 27)
    assert "StaticShiftAgent" in [c.name for c in got]
    hits = search_symbols(real_ws, "estimate_ss")
    assert hits[0]["name"].startswith("estimate_ss")


@pytest.mark.corpus
def test_every_real_symbol_gets_a_card_or_none(real_ws: Workspace):
    """No symbol of the package makes card building or rendering raise."""
    syms = list(real_ws.model.all_symbols(include_private=True))
    made = 0
    for dotted in syms:
        card = card_for(real_ws, dotted)
        if card is not None:
            made += 1
            card.to_markdown()
            json.dumps(card.to_dict())
    assert made >= 0.98 * len(syms)


MESSY = (
    "import pkg.core.shift as sh, os\n"
    "from pkg import (correct_shift as cs,\n"
    "\tShiftAgent)\x0c\n"
    "x = sh.\n"
    "def f(:\n"
    "    cs(data, factor=é)  # sh.correct_shift\n"
    "s = '''pkg.phase\n"
    "'''\r\n"
    "from . import nothing\r"
    "pkg.phase.strike_angle(z, freq=😀)\n"
    "import pkg.\n"
)


def test_every_position_of_a_messy_buffer(ws: Workspace):
    """Hover and completion anywhere in a broken buffer: never an exception."""
    for current in (None, "pkg.core"):
        idx = analyze(MESSY, "pkg", current)
        for line, text in enumerate(idx.lines):
            for c in range(len(text) + 2):
                card_at(ws, idx, line, c)
                complete(ws, idx, line, c, current)
    idx = analyze(MESSY, "pkg")
    lines = idx.lines
    hit = card_at(ws, idx, 9, lines[9].index("strike_angle") + 2)
    assert hit is not None and hit[1].qualname == "pkg.phase.strike_angle"
    comment = lines[5].index("# sh.") + 8
    assert idx.ref_at(5, comment) is None  # guessed from text, but in a comment
    got = complete(ws, idx, 10, len(lines[10]))
    assert {c.name for c in got} >= {"core", "phase"}
