"""Unit tests of the static package model, one fixture package per rule.

Each test writes a tiny package into ``tmp_path`` and checks what the model
proves (exists / absent) or refuses to prove (unknown). Nothing is imported.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from pycsamt_lsp.model.package import (
    ModuleInfo,
    PackageModel,
    identifier_tokens,
    module_name_for,
)


def write_pkg(root: Path, files: dict[str, str], package: str = "pkg") -> Path:
    """Write ``files`` (paths relative to the package dir) under ``root``."""
    top = root / package
    top.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def build(tmp_path: Path, files: dict[str, str]) -> PackageModel:
    files = {"__init__.py": "", **files}
    return PackageModel.build(write_pkg(tmp_path, files), "pkg")


# -- naming ---------------------------------------------------------------------


def test_module_name_for_paths():
    assert module_name_for("pkg/__init__.py", "pkg") == ("pkg", True, "source")
    assert module_name_for("pkg/a/b.py", "pkg") == ("pkg.a.b", False, "source")
    assert module_name_for("pkg/a/__init__.pyi", "pkg") == ("pkg.a", True, "stub")
    assert module_name_for("pkg/fast.cpython-311-x86_64-linux-gnu.so", "pkg") == (
        "pkg.fast",
        False,
        "compiled",
    )
    assert module_name_for("pkg/win.cp311-win_amd64.pyd", "pkg") == (
        "pkg.win",
        False,
        "compiled",
    )
    assert module_name_for("other/a.py", "pkg") is None
    assert module_name_for("pkg/not-a-module.py", "pkg") is None
    assert module_name_for("pkg/data/table.csv", "pkg") is None


def test_identifier_tokens():
    assert identifier_tokens("StaticShiftAgent") == ["static", "shift", "agent"]
    assert identifier_tokens("estimate_ss_ama") == ["estimate", "ss", "ama"]
    assert identifier_tokens("EDIFile") == ["edi", "file"]


# -- re-exports, aliases, chains -------------------------------------------------------


def test_reexport_resolves_to_definition(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": "from .core import Thing\n",
            "core.py": "X = 1\n\n\nclass Thing:\n    pass\n",
        },
    )
    r = m.resolve("pkg.Thing")
    assert r.status == "exists"
    assert r.kind == "class"
    assert r.target == "pkg.core.Thing"
    assert r.location == ("pkg/core.py", 4)
    missing = m.resolve("pkg.Nope")
    assert missing.status == "absent"
    assert missing.message == "'pkg' has no attribute or submodule 'Nope'"
    assert missing.failed_at == 1 and missing.parent == "pkg"


def test_alias_chains_and_import_as(tmp_path):
    m = build(
        tmp_path,
        {
            "a.py": "from .b import f as g\nimport pkg.c as cmod\n",
            "b.py": "from pkg.c import f\n",
            "c.py": "def f(x):\n    return x\n",
        },
    )
    assert m.resolve("pkg.a.g").target == "pkg.c.f"
    assert m.resolve("pkg.a.g").kind == "function"
    assert m.resolve("pkg.a.cmod").kind == "module"
    assert m.resolve("pkg.a.cmod.f").target == "pkg.c.f"
    assert m.resolve("pkg.a.cmod.h").status == "absent"
    # ``f`` is not bound in a (only ``g`` is)
    assert m.resolve("pkg.a.f").status == "absent"


def test_reexport_cycle_is_unknown_not_a_crash(tmp_path):
    m = build(tmp_path, {"a.py": "from .b import x\n", "b.py": "from .a import x\n"})
    r = m.resolve("pkg.a.x")
    assert r.status == "unknown"


def test_from_dot_import_submodule_in_init(tmp_path):
    # ``from . import sub`` in __init__ is the submodule, not a cycle.
    m = build(
        tmp_path,
        {
            "__init__.py": "from . import sub\nfrom pkg import other\n",
            "sub.py": "",
            "other.py": "",
        },
    )
    assert m.resolve("pkg.sub").kind == "module"
    assert m.resolve_from("pkg", "other").exists


def test_external_import_exists_but_unknown_beyond(tmp_path):
    m = build(tmp_path, {"mod.py": "import numpy as np\nfrom os import path\n"})
    r = m.resolve("pkg.mod.np")
    assert r.status == "exists" and r.kind == "external" and r.target == "numpy"
    beyond = m.resolve("pkg.mod.np.array")
    assert beyond.status == "unknown" and beyond.reason == "external"
    assert m.resolve("pkg.mod.path").target == "os.path"


# -- __all__ and star imports ---------------------------------------------------------


def test_all_and_star_import_chain(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": "from .api import *\n",
            "api.py": "from ._impl import *\nfrom ._impl import hidden as _h\n",
            "_impl.py": """
                __all__ = ["pub"]
                __all__ += ["extra"]
                __all__.extend(["more"])
                def pub(): ...
                def extra(): ...
                def more(): ...
                def hidden(): ...
            """,
        },
    )
    assert m.modules["pkg._impl"].all == ["pub", "extra", "more"]
    assert m.resolve("pkg.pub").target == "pkg._impl.pub"
    assert m.resolve("pkg.more").exists
    # not in _impl.__all__, so the star import does not carry it
    assert m.resolve("pkg.api.hidden").status == "absent"
    assert m.resolve("pkg.hidden").status == "absent"
    # private names are not carried by ``from .api import *`` (api has no __all__)
    assert m.resolve("pkg._h").status == "absent"
    assert m.resolve("pkg._impl.hidden").exists


def test_all_from_named_literal(tmp_path):
    m = build(
        tmp_path,
        {"mod.py": "_names = ['a', 'b']\n__all__ = _names + ['c']\na = b = c = 1\n"},
    )
    assert m.modules["pkg.mod"].all == ["a", "b", "c"]


def test_star_import_from_outside_opens_namespace(tmp_path):
    m = build(tmp_path, {"mod.py": "from numpy import *\n\ndef mine(): ...\n"})
    assert m.resolve("pkg.mod.mine").exists
    r = m.resolve("pkg.mod.anything")
    assert r.status == "unknown" and r.reason == "open-namespace"


# -- module __getattr__ (PEP 562) ---------------------------------------------------------

LAZY_INIT = """
    import importlib

    _GONE = {
        "oldthing": "Use 'pkg.sub.Lazy' instead.",
    }
    _SUBS = frozenset({"sub"})
    _LAZY: dict[str, str] = {"Lazy": ".sub.mod"}
    _PAIRS = {"Paired": ("sub.mod", "Lazy")}
    _EXTRA = ("late",)

    def __getattr__(name):
        if name in _SUBS:
            return importlib.import_module(f".{name}", __name__)
        if name in _LAZY:
            module = importlib.import_module(_LAZY[name], package=__name__)
            return getattr(module, name)
        if name in _PAIRS:
            mod, attr = _PAIRS[name]
            try:
                m = importlib.import_module(f".{mod}", package=__name__)
                value = getattr(m, attr)
            except Exception as exc:
                raise AttributeError(f"{name} is unavailable") from exc
            return value
        if name == "late":
            return 42
        if name in _GONE:
            raise AttributeError(f"'pkg.{name}' was removed.  {_GONE[name]}")
        raise AttributeError(f"module 'pkg' has no attribute {name!r}")
"""


def test_getattr_closed_namespace_extended_by_literals(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": LAZY_INIT,
            "sub/__init__.py": "",
            "sub/mod.py": "class Lazy:\n    def go(self): ...\n",
        },
    )
    ga = m.modules["pkg"].getattr
    assert ga["mode"] == "closed"
    assert set(ga["admitted"]) == {"sub", "Lazy", "Paired", "late"}
    assert m.resolve("pkg.sub").kind == "package"
    lazy = m.resolve("pkg.Lazy")
    assert lazy.exists and lazy.target == "pkg.sub.mod.Lazy"
    assert lazy.location == ("pkg/sub/mod.py", 1)
    assert m.resolve("pkg.Paired").target == "pkg.sub.mod.Lazy"
    assert m.resolve("pkg.Lazy.go").kind == "method"
    assert m.resolve("pkg.late").exists
    removed = m.resolve("pkg.oldthing")
    assert removed.status == "absent" and removed.reason == "removed"
    assert removed.message == "'pkg.oldthing' was removed.  Use 'pkg.sub.Lazy' instead."
    nothing = m.resolve("pkg.static_shift")
    assert nothing.status == "absent"
    assert nothing.message == "'pkg' has no attribute or submodule 'static_shift'"


def test_getattr_get_pattern_is_closed(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": """
                from importlib import import_module
                _MAP = {"Thing": "pkg.core"}
                def __getattr__(name):
                    target = _MAP.get(name)
                    if target is None:
                        raise AttributeError(name)
                    return getattr(import_module(target), name)
            """,
            "core.py": "class Thing: ...\n",
        },
    )
    assert m.resolve("pkg.Thing").target == "pkg.core.Thing"
    assert m.resolve("pkg.Other").status == "absent"


def test_lazy_name_with_missing_target_is_absent(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": """
                import importlib
                _SUBS = {"ghost"}
                def __getattr__(name):
                    if name in _SUBS:
                        return importlib.import_module("." + name, __name__)
                    raise AttributeError(name)
            """,
        },
    )
    r = m.resolve("pkg.ghost")
    assert r.status == "absent" and r.reason == "broken-lazy"


@pytest.mark.parametrize(
    "body",
    [
        "def __getattr__(name):\n    return _load(name)\n",
        "def __getattr__(name):\n    if name.startswith('x'):\n        return 1\n    raise AttributeError(name)\n",
        "def __getattr__(name):\n    for k in _X:\n        pass\n    raise AttributeError(name)\n",
    ],
)
def test_getattr_open_namespace(tmp_path, body):
    m = build(tmp_path, {"__init__.py": body, "real.py": ""})
    assert m.modules["pkg"].getattr["mode"] == "open"
    r = m.resolve("pkg.anything")
    assert r.status == "unknown" and r.reason == "open-namespace"
    # real submodules still exist
    assert m.resolve("pkg.real").exists


# -- stubs, conditional bindings, submodules, namespace, compiled, broken ----------------------


def test_pyi_stub_takes_precedence(tmp_path):
    m = build(
        tmp_path,
        {
            "mod.py": "def only_in_source(): ...\n",
            "mod.pyi": "declared: int\ndef typed(x: int) -> int: ...\n",
        },
    )
    info = m.modules["pkg.mod"]
    assert info.kind == "stub" and info.rel == "pkg/mod.pyi"
    assert m.resolve("pkg.mod.declared").exists
    assert m.resolve("pkg.mod.typed").location == ("pkg/mod.pyi", 2)
    assert m.resolve("pkg.mod.only_in_source").status == "absent"
    # deleting the stub falls back to the source
    m.update_file("pkg/mod.pyi", None)
    assert m.resolve("pkg.mod.only_in_source").exists


def test_conditional_bindings_count(tmp_path):
    m = build(
        tmp_path,
        {
            "mod.py": """
                from typing import TYPE_CHECKING
                try:
                    from ._fast import speed
                except ImportError:
                    speed = None
                if TYPE_CHECKING:
                    from .types import T
                with open(__file__) as _fh:
                    loaded = True
                for _k in ("a", "b"):
                    globals()[_k] = _k
                def setter():
                    global late
                    late = 1
                x = 1
                del x
            """,
            "_fast.py": "def speed(): ...\n",
            "types.py": "T = int\n",
        },
    )
    r = m.resolve("pkg.mod.speed")
    assert r.exists and r.conditional
    assert m.resolve("pkg.mod.T").exists
    assert m.resolve("pkg.mod.loaded").exists
    assert m.resolve("pkg.mod.a").exists and m.resolve("pkg.mod.b").exists
    assert m.resolve("pkg.mod.late").exists
    assert m.resolve("pkg.mod.x").status == "absent"
    assert m.modules["pkg.mod"].open_reason is None


def test_dynamic_globals_write_opens_namespace(tmp_path):
    m = build(tmp_path, {"mod.py": "def install(g): ...\ninstall(g=globals())\n"})
    r = m.resolve("pkg.mod.anything")
    assert r.status == "unknown" and r.reason == "open-namespace"


def test_submodule_vs_attribute(tmp_path):
    m = build(
        tmp_path,
        {
            "sub/__init__.py": "",
            "sub/mod.py": "def func(): ...\n",
            "plain.py": "def f(): ...\n",
        },
    )
    # a submodule not imported by its package still exists (import system)
    assert m.resolve("pkg.sub.mod").kind == "module"
    assert m.resolve_from("pkg.sub", "mod").exists
    # an attribute is not a module
    assert m.resolve("pkg.sub.mod.func").exists
    not_mod = m.resolve_module("pkg.sub.mod.func")
    assert not_mod.status == "absent"
    assert (
        not_mod.message
        == "No module named 'pkg.sub.mod.func'; 'pkg.sub.mod' is not a package"
    )
    missing = m.resolve_module("pkg.nothere.deeper")
    assert missing.message == "No module named 'pkg.nothere'" and missing.failed_at == 1
    assert m.resolve_module("pkg.plain").exists


def test_namespace_package(tmp_path):
    m = build(tmp_path, {"ns/inner.py": "VALUE = 1\n"})
    ns = m.resolve("pkg.ns")
    assert ns.exists and ns.kind == "namespace"
    assert m.resolve("pkg.ns.inner.VALUE").exists
    assert m.resolve("pkg.ns.other").status == "absent"
    assert m.resolve_module("pkg.ns.inner").exists


def test_compiled_module_is_opaque(tmp_path):
    root = write_pkg(tmp_path, {"__init__.py": ""})
    (root / "pkg" / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    m = PackageModel.build(root, "pkg")
    assert m.modules["pkg.fast"].kind == "compiled"
    assert m.resolve("pkg.fast").exists
    r = m.resolve("pkg.fast.anything")
    assert r.status == "unknown" and r.reason == "compiled"


def test_syntax_error_module_exists_with_unknown_names(tmp_path):
    m = build(tmp_path, {"bad.py": "def broken(:\n    pass\n", "good.py": "ok = 1\n"})
    assert m.modules["pkg.bad"].parse_error
    assert m.resolve("pkg.bad").exists
    r = m.resolve("pkg.bad.broken")
    assert r.status == "unknown" and r.reason == "parse-error"
    assert m.resolve("pkg.good.ok").exists


# -- classes ---------------------------------------------------------------------


CLASSES = """
    from abc import ABC
    from dataclasses import dataclass, field
    import numpy as np

    class Base(ABC):
        kind = "base"
        def shared(self): ...

    class Child(Base):
        def __init__(self, a, b=2, *args, c, d=None, **kw):
            self.a = a
            self.cached: int = 0
        def own(self): ...
        @staticmethod
        def helper(x, y): ...
        @classmethod
        def make(cls, z): ...

    class Plain:
        pass

    class FromNumpy(np.ndarray):
        pass

    class Dyn:
        def __getattr__(self, name): ...

    @dataclass
    class Rec:
        x: int
        y: float = 0.5
        z: list = field(default_factory=list)
        hidden: int = field(init=False, default=0)

    @dataclass
    class Rec2(Rec):
        w: str = "w"

    class Outer:
        class Inner:
            def deep(self): ...
"""


def test_class_attributes_and_inheritance(tmp_path):
    m = build(tmp_path, {"cls.py": CLASSES})
    assert m.resolve("pkg.cls.Child.own").kind == "method"
    assert m.resolve("pkg.cls.Child.shared").target == "pkg.cls.Base.shared"
    assert m.resolve("pkg.cls.Child.kind").exists
    assert m.resolve("pkg.cls.Child.a").exists  # instance attribute
    assert m.resolve("pkg.cls.Child.cached").exists
    nope = m.resolve("pkg.cls.Child.nope")
    assert nope.status == "absent"
    assert nope.message == "'pkg.cls.Child' has no attribute 'nope'"
    assert m.resolve("pkg.cls.Plain.nope").status == "absent"
    # inherited from outside the package: cannot know
    assert m.resolve("pkg.cls.FromNumpy.nope").status == "unknown"
    assert m.resolve("pkg.cls.Dyn.nope").reason == "dynamic-class"
    assert m.resolve("pkg.cls.Outer.Inner.deep").kind == "method"
    assert m.resolve("pkg.cls.Child.__init__").status != "absent"


def test_signatures(tmp_path):
    m = build(
        tmp_path,
        {
            "cls.py": CLASSES,
            "fn.py": "def f(a, /, b: int = 1, *, c: str = 'x') -> bool:\n    '''Doc.'''\n",
        },
    )
    sig = m.signature("pkg.fn.f")
    assert sig["returns"] == "bool" and sig["doc"] == "Doc."
    assert [
        (p["name"], p["kind"], p["default"], p["annotation"]) for p in sig["params"]
    ] == [
        ("a", "positional_only", None, None),
        ("b", "positional_or_keyword", "1", "int"),
        ("c", "keyword_only", "'x'", "str"),
    ]
    child = m.signature("pkg.cls.Child")
    assert [p["name"] for p in child["params"]] == ["a", "b", "args", "c", "d", "kw"]
    rec2 = m.call_signature("pkg.cls.Rec2")
    assert [p["name"] for p in rec2["params"]] == ["x", "y", "z", "w"]
    assert m.call_signature("pkg.cls.Plain")["params"] == []
    assert m.call_signature("pkg.cls.FromNumpy")["params"] is None
    assert m.call_signature("pkg.cls.Child")["var_keyword"] is True
    assert m.call_signature("pkg.cls.Child.make")["params"][0]["name"] == "z"
    assert m.call_signature("pkg.cls.Child.own", bound=True)["params"] == []
    assert m.signature("pkg.cls.nothing") is None


def test_members_public_first(tmp_path):
    m = build(
        tmp_path,
        {
            "mod.py": "import os\n_private = 1\n\ndef zeta(): ...\nclass Alpha: ...\n",
            "sub/__init__.py": "",
        },
    )
    names = m.members("pkg.mod")
    assert names == [("Alpha", "class"), ("zeta", "function"), ("_private", "variable")]
    assert ("sub", "module") in m.members("pkg")
    assert ("mod", "module") in m.members("pkg")


# -- suggestions --------------------------------------------------------------------


def test_suggest_by_identifier_parts(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": "from .agents import StaticShiftAgent\n",
            "agents.py": "class StaticShiftAgent: ...\nclass QCAgent: ...\n",
            "emtools/__init__.py": "",
            "emtools/ss.py": '"""Static shift correction."""\ndef estimate_ss_ama(): ...\n',
            "plot.py": "def plot_phase(): ...\n",
        },
    )
    got = m.suggest("pkg.static_shift", k=3)
    assert got[0] == "pkg.StaticShiftAgent"
    assert "pkg.agents.StaticShiftAgent" not in got  # same symbol, shortest path kept
    assert "pkg.emtools.ss" in m.suggest("static_shift", k=5)
    assert m.suggest("plot_phse") == ["pkg.plot.plot_phase"]
    assert m.suggest("static_shift", kind="module") == ["pkg.emtools.ss"]
    assert m.suggest("xyzzy") == []


# -- incremental updates and persistence -------------------------------------------------


def test_incremental_update(tmp_path):
    m = build(tmp_path, {"mod.py": "def a(): ...\n"})
    assert m.resolve("pkg.mod.b").status == "absent"
    assert m.update_file("pkg/mod.py", b"def a(): ...\ndef b(): ...\n")
    assert m.resolve("pkg.mod.b").exists
    assert m.update_file("pkg/new/thing.py", b"VALUE = 1\n")
    assert m.resolve("pkg.new.thing.VALUE").exists
    assert m.resolve("pkg.new").kind == "namespace"
    assert m.update_file("pkg/mod.py", None)
    assert m.resolve("pkg.mod").status == "absent"
    assert not m.update_file("docs/readme.md", b"x")
    assert not m.update_file("pkg/never.py", None)
    m.remove_directory("pkg/new")
    assert m.resolve("pkg.new").status == "absent"


def test_add_tree_from_existing_parse(tmp_path):
    m = PackageModel("pkg")
    src = b"from .b import g\n"
    m.add_tree("pkg/__init__.py", ast.parse(b""), b"")
    info = m.add_tree("pkg/a.py", ast.parse(src), src)
    assert info is not None and info.name == "pkg.a"
    m.add_module(ModuleInfo.from_source("def g(): ...\n", name="pkg.b", rel="pkg/b.py"))
    assert m.resolve("pkg.a.g").target == "pkg.b.g"
    assert m.add_tree("elsewhere/x.py", ast.parse(b"")) is None


def test_to_dict_round_trip(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": LAZY_INIT,
            "sub/__init__.py": "",
            "sub/mod.py": "class Lazy:\n    def go(self): ...\n",
            "cls.py": CLASSES,
            "ns/x.py": "",
        },
    )
    data = json.loads(json.dumps(m.to_dict()))
    m2 = PackageModel.from_dict(data)
    for dotted in [
        "pkg.Lazy",
        "pkg.oldthing",
        "pkg.cls.Child.shared",
        "pkg.cls.Rec2",
        "pkg.ns.x",
        "pkg.nope",
    ]:
        a, b = m.resolve(dotted), m2.resolve(dotted)
        assert (a.status, a.target, a.message, a.location) == (
            b.status,
            b.target,
            b.message,
            b.location,
        )
    for rel, info in m._files.items():
        assert ModuleInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info, rel
    assert m2.signature("pkg.cls.Child") == m.signature("pkg.cls.Child")
    with pytest.raises(ValueError):
        PackageModel.from_dict({**data, "model_version": -1})


def test_all_symbols_are_public_and_real(tmp_path):
    m = build(
        tmp_path,
        {
            "__init__.py": "from .core import Thing\nimport numpy as np\n",
            "core.py": "class Thing: ...\n_hidden = 1\n",
        },
    )
    syms = set(m.all_symbols())
    assert {"pkg", "pkg.core", "pkg.Thing", "pkg.core.Thing"} <= syms
    assert "pkg.np" not in syms and "pkg.core._hidden" not in syms
