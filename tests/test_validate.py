"""Unit tests of the validator on a small fixture package.

Checks both views of the one analysis: positioned problems (codes, exact
ranges, candidates, fixes that really fix) and the seed's report dict.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pycsamt_lsp.analysis.validate import (
    Edit,
    Problem,
    find_problems,
    validate_generated_code,
)
from pycsamt_lsp.model.package import PackageModel

FILES = {
    "__init__.py": """
        import importlib
        _REMOVED = {"oldtool": "Use 'pkg.tools' instead."}
        _SUBS = {"tools", "agents"}
        def __getattr__(name):
            if name in _SUBS:
                return importlib.import_module("." + name, __name__)
            if name in _REMOVED:
                raise AttributeError(f"'pkg.{name}' was removed.  {_REMOVED[name]}")
            raise AttributeError(name)
    """,
    "agents/__init__.py": "from .static_shift import StaticShiftAgent\n",
    "agents/static_shift.py": """
        class BaseAgent:
            def __init__(self, name, *, verbose=False):
                self.name = name
            def execute(self, data): ...

        class StaticShiftAgent(BaseAgent):
            '''Correct static shift.'''
            def __init__(self, *, method="ama", half_window=3):
                super().__init__("ss")
                self.method = method
            def plot(self, ax=None): ...
    """,
    "tools/__init__.py": "from .ss import estimate_ss, apply_factors\nfrom .opts import configure\n",
    "tools/ss.py": """
        import functools

        def estimate_ss(sites, *, half_window=3, weights="tri"):
            '''Estimate static-shift factors.'''

        def apply_factors(sites, factors, /, inplace=False, **kws): ...

        def _deco(fn):
            @functools.wraps(fn)
            def inner(*a, **k):
                return fn(*a, **k)
            return inner

        @_deco
        def decorated(x, *, y=1): ...
    """,
    "tools/opts.py": "def configure(*, level=0): ...\ndef posonly(a, /, b=1): ...\n",
    "open_mod.py": "def install(g): ...\ninstall(globals())\n",
}


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> PackageModel:
    root: Path = tmp_path_factory.mktemp("validate")
    for rel, text in FILES.items():
        p = root / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return PackageModel.build(root, "pkg")


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def only(problems: list[Problem], code: str) -> Problem:
    got = [p for p in problems if p.code == code]
    assert len(got) == 1, problems
    return got[0]


def apply(code: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (0-based line/col, code points)."""
    lines = code.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def off(line: int, col: int) -> int:
        return offsets[line] + col

    for e in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        a, b = off(e.line, e.col), off(e.end_line, e.end_col)
        code = code[:a] + e.new_text + code[b:]
    return code


def text_at(code: str, p: Problem) -> str:
    assert p.line == p.end_line
    return code.split("\n")[p.line][p.col : p.end_col]


# -- the report view ------------------------------------------------------------


def test_report_shape_and_seed_examples(model):
    bad = validate_generated_code("from pkg import static_shift\n", model)
    assert set(bad) == {"ok", "syntax_ok", "errors", "warnings", "checked"}
    assert bad["ok"] is False and bad["syntax_ok"] is True
    assert bad["errors"] == ["'pkg' has no attribute or submodule 'static_shift'"]
    good = validate_generated_code("from pkg.agents import StaticShiftAgent\n", model)
    assert good == {
        "ok": True,
        "syntax_ok": True,
        "errors": [],
        "warnings": [],
        "checked": ["pkg.agents.StaticShiftAgent"],
    }


def test_empty_and_syntax_error_reports(model):
    assert validate_generated_code("   ", model) == {
        "ok": False,
        "syntax_ok": False,
        "errors": ["SyntaxError: Empty code"],
        "warnings": [],
        "checked": [],
    }
    rep = validate_generated_code("x = (\n", model)
    assert rep["syntax_ok"] is False and rep["errors"][0].startswith("SyntaxError: ")
    # compile-time errors count as syntax errors too (as in pyCSAMT)
    assert validate_generated_code("return 1\n", model)["syntax_ok"] is False


def test_removed_name_carries_package_message(model):
    rep = validate_generated_code("from pkg import oldtool\n", model)
    assert rep["errors"] == ["'pkg.oldtool' was removed.  Use 'pkg.tools' instead."]
    p = only(find_problems("from pkg import oldtool\n", model), "unknown-name")
    assert p.candidates[0] == "pkg.tools"


def test_other_packages_and_relative_imports_are_ignored(model):
    code = "import numpy as np\nfrom os import path\nfrom . import sibling\nfrom .x import y\nnp.nothing()\n"
    assert validate_generated_code(code, model) == {
        "ok": True,
        "syntax_ok": True,
        "errors": [],
        "warnings": [],
        "checked": [],
    }


# -- imports ------------------------------------------------------------------------


def test_unknown_name_range_candidates_and_fix(model):
    code = "from pkg import static_shift\n"
    p = only(find_problems(code, model), "unknown-name")
    assert p.severity == "error" and p.dotted == "pkg.static_shift"
    assert text_at(code, p) == "static_shift"
    assert (p.line, p.col, p.end_line, p.end_col) == (0, 16, 0, 28)
    assert p.candidates[0] == "pkg.agents.StaticShiftAgent"
    assert "did you mean `pkg.agents.StaticShiftAgent`" in p.message
    fixed = apply(code, p.fixes[0].edits)
    assert fixed == "from pkg.agents import StaticShiftAgent\n"
    assert validate_generated_code(fixed, model)["ok"]


def test_multi_name_import_fix_keeps_the_other_names(model):
    code = src(
        """
        from pkg.tools import (
            configure,
            static_shift,
            estimate_ss,
        )
        x = 1
        """
    )
    p = only(find_problems(code, model), "unknown-name")
    assert text_at(code, p) == "static_shift"
    assert p.line == 2
    for fix in p.fixes:
        fixed = apply(code, fix.edits)
        rep = validate_generated_code(fixed, model)
        assert rep["ok"], (fixed, rep)
        assert "configure" in fixed and "estimate_ss" in fixed


def test_same_module_fix_is_a_rename(model):
    code = "from pkg.tools import estimate_sss\n"
    p = only(find_problems(code, model), "unknown-name")
    assert p.candidates[0] == "pkg.tools.estimate_ss"
    assert p.fixes[0].replacement == "estimate_ss"
    assert validate_generated_code(apply(code, p.fixes[0].edits), model)["ok"]


def test_unknown_module_segment(model):
    code = "import pkg.toolz.ss as t\n"
    p = only(find_problems(code, model), "unknown-module")
    assert text_at(code, p) == "toolz"
    assert p.message.startswith("No module named 'pkg.toolz'")
    assert p.candidates[0] == "pkg.tools.ss"
    assert validate_generated_code(apply(code, p.fixes[0].edits), model)["ok"]
    code2 = "from pkg.toolz import estimate_ss\n"
    p2 = only(find_problems(code2, model), "unknown-module")
    assert text_at(code2, p2) == "toolz"
    # the module that provides every imported name comes first
    assert p2.candidates[0] == "pkg.tools"
    assert validate_generated_code(apply(code2, p2.fixes[0].edits), model)["ok"]


def test_import_of_a_class_as_module(model):
    code = "import pkg.agents.StaticShiftAgent\n"
    p = only(find_problems(code, model), "unknown-module")
    assert "is a class, not a module" in p.message
    fixed = apply(code, p.fixes[0].edits)
    assert fixed == "from pkg.agents import StaticShiftAgent\n"


def test_checked_lists_verified_imports(model):
    code = "import pkg.tools\nimport pkg.tools.ss as ss\nfrom pkg.tools import estimate_ss as e, configure\n"
    rep = validate_generated_code(code, model)
    assert rep["ok"]
    assert rep["checked"] == [
        "pkg.tools",
        "pkg.tools.ss",
        "pkg.tools.estimate_ss",
        "pkg.tools.configure",
    ]


def test_open_namespace_and_wildcard_are_warnings(model):
    rep = validate_generated_code(
        "from pkg.open_mod import anything\nfrom pkg.tools import *\n", model
    )
    assert rep["ok"] is True and rep["errors"] == []
    assert len(rep["warnings"]) == 2
    assert rep["warnings"][1] == "Relative/wildcard import: pkg.tools.*"
    probs = find_problems("from pkg.open_mod import anything\n", model)
    assert [p.code for p in probs] == ["unverifiable"]


# -- attribute chains ---------------------------------------------------------------


def test_attribute_chain_on_module_alias(model):
    code = "import pkg.tools as et\net.no_such_fn()\net.estimate_ss(s)\n"
    p = only(find_problems(code, model), "unknown-name")
    assert text_at(code, p) == "no_such_fn" and p.line == 1
    rep = validate_generated_code(code, model)
    assert rep["errors"] == [
        "Unknown API: pkg.tools.no_such_fn ('pkg.tools' has no attribute or submodule 'no_such_fn')"
    ]


def test_attribute_chain_through_lazy_package(model):
    code = "import pkg\npkg.tools.ss.estimate_ss(1)\npkg.tools.ss.estimat_ss(1)\npkg.nowhere\n"
    probs = [p for p in find_problems(code, model) if p.severity == "error"]
    assert [text_at(code, p) for p in probs] == ["estimat_ss", "nowhere"]
    fix = probs[0].fixes[0]
    assert fix.replacement == "estimate_ss"
    assert validate_generated_code(
        apply(code, fix.edits).replace("pkg.nowhere\n", ""), model
    )["ok"]


def test_attribute_range_is_in_code_points(model):
    code = 'import pkg.tools as et\nlabel = "ééé"; et.nope()\n'
    p = only(find_problems(code, model), "unknown-name")
    assert text_at(code, p) == "nope"


def test_shadowed_alias_is_not_checked(model):
    code = "from pkg import tools\ntools = object()\ntools.anything()\n"
    rep = validate_generated_code(code, model)
    assert rep["ok"] is True
    assert rep["warnings"] == ["Imported binding is reassigned or shadowed: tools"]


def test_instance_attributes(model):
    code = src(
        """
        from pkg.agents import StaticShiftAgent
        agent = StaticShiftAgent(method="ama")
        agent.execute({})
        agent.plot()
        agent.method
        agent.name
        agent.run()
        if hasattr(agent, "maybe"):
            agent.maybe()
        """
    )
    probs = find_problems(code, model)
    assert [(p.code, text_at(code, p)) for p in probs] == [("unknown-name", "run")]
    assert probs[0].message.startswith(
        "'StaticShiftAgent' object has no attribute 'run'"
    )


# -- keyword arguments --------------------------------------------------------------


def test_unknown_keyword_argument(model):
    code = "from pkg.tools import estimate_ss\nestimate_ss(s, half_windo=3, weights='tri')\n"
    p = only(find_problems(code, model), "unknown-keyword")
    assert text_at(code, p) == "half_windo"
    assert p.candidates == ["half_window"]
    assert p.fixes[0].replacement == "half_window"
    assert validate_generated_code(code, model)["errors"] == [
        "pkg.tools.estimate_ss: got an unexpected keyword argument 'half_windo'"
    ]
    assert validate_generated_code(apply(code, p.fixes[0].edits), model)["ok"]


def test_var_keyword_accepts_anything(model):
    code = "from pkg.tools import apply_factors\napply_factors(s, f, inplace=True, whatever=1)\n"
    assert validate_generated_code(code, model)["ok"]


def test_positional_only_passed_by_keyword(model):
    code = "import pkg.tools.ss as ss\nss.apply_factors(sites=1, factors=2)\n"
    # **kws swallows them at runtime, so this is not an error
    assert validate_generated_code(code, model)["ok"]


def test_positional_only_by_keyword_without_var_keyword(model):
    code = "from pkg.tools.opts import posonly\nposonly(a=1, b=2)\n"
    p = only(find_problems(code, model), "unknown-keyword")
    assert text_at(code, p) == "a"
    assert validate_generated_code(code, model)["errors"] == [
        "pkg.tools.opts.posonly: got some positional-only arguments passed as "
        "keyword arguments: 'a'"
    ]


def test_problems_are_json_serialisable(model):
    import json

    code = "from pkg import static_shift, tools\ntools.nope(x=1)\n"
    data = json.loads(json.dumps([p.to_dict() for p in find_problems(code, model)]))
    assert {d["code"] for d in data} == {"unknown-name"}
    assert all(set(d) >= {"line", "col", "end_line", "end_col", "fixes"} for d in data)


def test_constructor_keywords_and_inherited_init(model):
    code = src(
        """
        from pkg.agents import StaticShiftAgent
        from pkg.agents.static_shift import BaseAgent
        StaticShiftAgent(name="x")
        BaseAgent("n", verbose=True)
        BaseAgent("n", verbos=True)
        """
    )
    probs = find_problems(code, model)
    assert [(p.code, text_at(code, p)) for p in probs] == [
        ("unknown-keyword", "name"),
        ("unknown-keyword", "verbos"),
    ]


def test_decorated_function_keyword_is_only_a_warning(model):
    code = "from pkg.tools.ss import decorated\ndecorated(1, y=2)\ndecorated(1, z=2)\n"
    rep = validate_generated_code(code, model)
    assert rep["ok"] is True
    assert rep["warnings"] == ["Dynamic or unresolved call: pkg.tools.ss.decorated"]


def test_method_keywords_via_instance(model):
    code = "from pkg.agents import StaticShiftAgent\na = StaticShiftAgent()\na.plot(ax=1)\na.plot(axis=1)\n"
    p = only(find_problems(code, model), "unknown-keyword")
    assert text_at(code, p) == "axis"


# -- broken buffers -------------------------------------------------------------------


def test_syntax_error_still_checks_imports(model):
    code = src(
        """
        from pkg.tools import estimate_ss
        from pkg import static_shift
        def broken(:
            pass
        import pkg.toolz
            from pkg.tools import (
                configure,
                nothing_here,
            )
        x = estimate_ss(
        """
    )
    probs = find_problems(code, model)
    codes = [(p.code, p.line) for p in probs]
    assert ("syntax-error", 2) in codes
    assert ("unknown-name", 1) in codes
    assert ("unknown-module", 4) in codes
    nothing = [p for p in probs if p.dotted == "pkg.tools.nothing_here"]
    assert nothing and text_at(code, nothing[0]) == "nothing_here"
    rep = validate_generated_code(code, model)
    assert rep["syntax_ok"] is False and rep["ok"] is False
    assert "pkg.tools.estimate_ss" in rep["checked"]


def test_never_raises_on_odd_input(model):
    for code in [
        "\x00",
        "from",
        "import pkg.",
        "from pkg import (",
        "pkg.x(**{})",
        "é = 1\n\tfrom pkg import é",
    ]:
        find_problems(code, model)
        validate_generated_code(code, model)
