"""Any Python package through a profile (issue 17), on small fixture trees.

Each shape is checked through the CLI (``pycsamt-lsp validate -`` with a
profile that sets only ``package``): real imports give no error,
made-up ones give an error when the model can prove them absent, and a
warning (never an error) when it cannot (positions: test_any_package_lsp.py). ``profile init`` and ``corpus fetch`` are run as a
user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "pycsamt_lsp"]


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def validate(root: Path, code: str, package: str = "pkg") -> tuple[int, dict]:
    prof = root.parent / f"{root.name}-{package}.toml"
    prof.write_text(f'package = "{package}"\n', encoding="utf-8")  # the shortest
    proc = subprocess.run(
        [
            *CLI,
            "validate",
            "-",
            "--json",
            "--profile",
            str(prof),
            "--root",
            str(root),
            "--index-dir",
            str(root.parent / f"{root.name}-idx"),
        ],
        input=textwrap.dedent(code),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, {"stderr": proc.stderr}


def errors_about(res: dict, *names: str) -> dict[str, bool]:
    return {n: any(n in e for e in res["errors"]) for n in names}


def warned_about(res: dict, name: str) -> bool:
    return any(name in w for w in res["warnings"])


# -- layouts -------------------------------------------------------------------


def test_src_layout_checkout(tmp_path):
    root = tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'pkg'\nversion = '1.0'\n",
            "src/pkg/__init__.py": "from .core import run\n",
            "src/pkg/core.py": "def run():\n    pass\n",
        },
    )
    code, res = validate(
        root, "from pkg import run\nfrom pkg.core import run\nimport pkg.core\n"
    )
    assert code == 0 and res["errors"] == [], res
    code, res = validate(root, "from pkg import walk\nimport pkg.kore\n")
    assert code == 1
    assert errors_about(res, "walk", "pkg.kore") == {"walk": True, "pkg.kore": True}


def test_profile_with_only_package(tmp_path):
    """``name`` is optional: it defaults to the package (stats and the
    persisted manifest show it); an empty or non-string one is an error."""
    root = tree(tmp_path / "proj", {"src/pkg/__init__.py": "def run():\n    pass\n"})
    prof = tmp_path / "only.toml"
    prof.write_text('package = "pkg"\n', encoding="utf-8")
    args = ["--profile", str(prof), "--root", str(root)]
    idx = ["--index-dir", str(tmp_path / "idx")]
    proc = subprocess.run(
        [*CLI, "validate", "-", "--json", *args, *idx],
        input="from pkg import run\nfrom pkg import walk\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    res = json.loads(proc.stdout)
    assert res["checked"] == ["pkg.run"] and errors_about(res, "walk")["walk"], res
    proc = subprocess.run(
        [*CLI, "stats", "--json", *args, *idx],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["profile"] == "pkg"
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text("utf-8"))
    assert manifest["profile"] == "pkg"
    for bad in ('name = ""\npackage = "pkg"\n', 'name = 3\npackage = "pkg"\n'):
        prof.write_text(bad, encoding="utf-8")
        proc = subprocess.run(
            [*CLI, "validate", "-", *args, "--index-dir", str(tmp_path / "i2")],
            input="import pkg\n",
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2 and "'name' must be" in proc.stderr, proc.stderr
    prof.write_text('name = "x"\n', encoding="utf-8")
    proc = subprocess.run(
        [*CLI, "validate", "-", *args, "--index-dir", str(tmp_path / "i3")],
        input="import pkg\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "'package' is required" in proc.stderr


def test_pep420_namespace_package(tmp_path):
    root = tree(tmp_path / "site", {"pkg/sub/mod.py": "X = 1\n"})
    code, res = validate(root, "from pkg.sub.mod import X\nimport pkg.sub\n")
    assert code == 0 and res["errors"] == [], res
    _, res = validate(root, "from pkg.sub.mod import Y\nimport pkg.sub.nope\n")
    assert errors_about(res, "'Y'", "pkg.sub.nope") == {
        "'Y'": True,
        "pkg.sub.nope": True,
    }
    # the top of a namespace package may be extended by other distributions
    _, res = validate(root, "from pkg import other\n")
    assert res["errors"] == [] and warned_about(res, "other"), res


def test_profile_package_not_in_corpus_is_an_error(tmp_path):
    root = tree(tmp_path / "elsewhere", {"other/__init__.py": "X = 1\n"})
    code, res = validate(root, "from pkg import anything\n")
    assert code == 2
    assert "package 'pkg' is not in the corpus" in res["stderr"]


def _site_with_editable(tmp_path: Path, how: str) -> Path:
    proj = tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'pkg'\nversion = '1.0'\n",
            "src/pkg/__init__.py": "def real():\n    pass\n",
        },
    )
    site = tmp_path / "site-packages"
    site.mkdir()
    if how == "pth":
        (site / "__editable__.pkg-1.0.pth").write_text(f"{proj / 'src'}\n")
    elif how == "finder":
        (site / "__editable___pkg_1_0_finder.py").write_text(
            f"MAPPING = {{'pkg': {str(proj / 'src' / 'pkg')!r}}}\nraise SystemExit\n"
        )
    else:
        info = site / "pkg-1.0.dist-info"
        info.mkdir()
        (info / "direct_url.json").write_text(
            json.dumps({"url": proj.as_uri(), "dir_info": {"editable": True}})
        )
    return site


@pytest.mark.parametrize("how", ["pth", "finder", "direct_url"])
def test_editable_install_found_from_site_packages(tmp_path, how):
    """--root at a site-packages folder that only points at the checkout."""
    site = _site_with_editable(tmp_path, how)
    code, res = validate(site, "from pkg import real\n")
    assert code == 0 and res["errors"] == [], res
    _, res = validate(site, "from pkg import fake\n")
    assert errors_about(res, "fake") == {"fake": True}
    proc = subprocess.run(
        [*CLI, "corpus", "path", "--root", str(site), "--profile", _prof(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(proc.stdout.strip()) == (tmp_path / "proj").resolve()


def _prof(tmp_path: Path) -> str:
    p = tmp_path / "pkg.toml"
    p.write_text('name = "pkg"\npackage = "pkg"\n')
    return str(p)


# -- compiled and generated modules ---------------------------------------------


def test_compiled_module_with_stub_and_without(tmp_path):
    root = tree(
        tmp_path / "site",
        {
            "pkg/__init__.py": "",
            "pkg/_fast.pyi": "def speed(x: int) -> int: ...\n",
            "pkg/_opaque.cpython-311-x86_64-linux-gnu.so": "",
        },
    )
    (root / "pkg/_fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    code, res = validate(
        root, "from pkg._fast import speed\nfrom pkg._opaque import whatever\n"
    )
    assert code == 0, res
    assert warned_about(res, "whatever"), res  # opaque: unknown, never an error
    _, res = validate(root, "from pkg._fast import slow\n")
    assert errors_about(res, "slow") == {"slow": True}


HEADERS = {
    "pkg/__init__.py": "",
    "pkg/includes/__init__.py": "",
    "pkg/includes/__init__.pxd": "",
    "pkg/includes/tree.pxd": "cdef extern from 'libx/tree.h':\n    pass\n",
    "pkg/includes/defs.h": "#define X 1\n",
}


def test_headers_only_package_unbuilt_and_built(tmp_path):
    """lxml's ``includes``: a package of C headers whose subpackages the
    build adds. In a checkout (no extension module yet) they are unknown;
    once built (an installed wheel: ``.so`` present, the header folders
    copied in) the package is closed like any other."""
    src = tree(tmp_path / "checkout", HEADERS)
    code, res = validate(src, "import pkg.includes\nimport pkg.includes.libx\n")
    assert code == 0 and warned_about(res, "pkg.includes.libx"), res
    built = tree(
        tmp_path / "site",
        {
            **HEADERS,
            "pkg/includes/libx/__init__.py": "",
            "pkg/includes/libx/tree.h": "#define Y 1\n",
        },
    )
    (built / "pkg/etree.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    code, res = validate(built, "import pkg.includes.libx\nimport pkg.etree\n")
    assert code == 0 and res["errors"] == [], res
    made_up = "import pkg.includes.core\nimport pkg.includes.libx.core\n"
    _, res = validate(built, made_up + "from pkg.includes.libx import Tree\n")
    assert errors_about(res, "pkg.includes.core", "pkg.includes.libx.core", "Tree") == {
        "pkg.includes.core": True,
        "pkg.includes.libx.core": True,
        "Tree": True,
    }, res


def test_vendored_aliases_through_locals_and_sys_modules(tmp_path):
    """requests/packages.py's shape: ``locals()[name] = __import__(name)`` in
    a loop over literal names binds those names (at module level
    ``locals()`` is ``globals()``); ``sys.modules[f"pkg.packages.{mod}"] =
    ...`` may register any module under that prefix, so those imports
    (``from requests.packages.urllib3.exceptions import ...``, a common
    idiom) are unknown, never errors. ``locals()`` in a function binds
    nothing."""
    root = tree(
        tmp_path / "site",
        {
            "pkg/__init__.py": "",
            "pkg/packages.py": "import sys\n"
            "for name in ('alpha', 'beta'):\n"
            "    locals()[name] = __import__(name)\n"
            "    for mod in list(sys.modules):\n"
            "        if mod == name or mod.startswith(name + '.'):\n"
            "            sys.modules[f'pkg.packages.{mod}'] = sys.modules[mod]\n",
            "pkg/plain.py": "def f(k):\n    locals()[k] = 1\n",
        },
    )
    code, res = validate(
        root,
        "from pkg.packages import alpha, beta\n"
        "import pkg.packages.alpha.sub\n"
        "from pkg.packages.beta.errors import Oops\n",
    )
    assert code == 0 and res["errors"] == [], res
    assert "pkg.packages.alpha" in res["checked"], res
    assert warned_about(res, "pkg.packages.alpha.sub"), res
    _, res = validate(root, "from pkg.plain import alpha\nimport pkg.elsewhere.x\n")
    assert errors_about(res, "alpha", "pkg.elsewhere") == {
        "alpha": True,
        "pkg.elsewhere": True,
    }, res


def test_six_shapes_name_keys_and_import_hooks(tmp_path):
    """six: ``sys.modules[__name__ + ".moves"] = ...`` registers that
    module (``from six.moves import urllib`` was a false "not a package"
    error), and ``sys.meta_path.append(importer)`` at module level means
    any module of the package may be served by the hook (unknown)."""
    root = tree(
        tmp_path / "site",
        {
            "pkg/__init__.py": "",
            "pkg/compat.py": "import sys\nsys.modules[__name__ + '.moves'] = object()\n"
            "sys.modules[f'{__name__}.extra'] = object()\n",
        },
    )
    code, res = validate(
        root, "import pkg.compat.moves\nfrom pkg.compat.extra import thing\n"
    )
    assert code == 0 and res["errors"] == [], res
    assert warned_about(res, "pkg.compat.moves"), res
    _, res = validate(root, "import pkg.compat.other\n")
    assert errors_about(res, "pkg.compat.other") == {"pkg.compat.other": True}, res
    single = tree(
        tmp_path / "single",
        {
            "hook.py": "import sys\nclass _Importer:\n    pass\n"
            "sys.meta_path.append(_Importer())\nPY3 = True\n",
        },
    )
    code, res = validate(
        single, "import hook.moves\nfrom hook.moves.urllib import parse\n", "hook"
    )
    assert code == 0 and res["errors"] == [], res
    assert warned_about(res, "hook.moves"), res
    _, res = validate(single, "from hook import PY3\n", "hook")
    assert res["errors"] == [] and res["warnings"] == [], res


def test_stubs_package_alone(tmp_path):
    """PEP 561 ``pkg-stubs/`` instead of ``pkg/`` (a ``types-*`` install
    without its runtime): what the stubs' ``.pyi`` declare exists (no error,
    no warning); what they omit is unknown, never an error, because such
    stubs leave out what is not public API (on types-requests alone,
    treating them as closed made 143 of 445 real imports errors, see
    tests/realpkgs); a ``.py`` in a stub-only package is no module."""
    root = tree(
        tmp_path / "site",
        {
            "pkg-stubs/__init__.pyi": "from . import sub as sub\n"
            "from .core import run as run\n",
            "pkg-stubs/core.pyi": "def run() -> None: ...\nclass Agent: ...\n",
            "pkg-stubs/sub/__init__.pyi": "X: int\n",
            "pkg-stubs/partial.pyi": "from _typeshed import Incomplete\n"
            "def known() -> int: ...\n"
            "def __getattr__(name: str) -> Incomplete: ...\n",
            "pkg-stubs/helper.py": "def helper():\n    pass\n",
            "pkg-stubs/METADATA.toml": 'version = "1.0"\n',
        },
    )
    code, res = validate(
        root,
        "import pkg\nimport pkg.sub\nfrom pkg import run, sub\n"
        "from pkg.core import Agent\nfrom pkg.sub import X\n"
        "from pkg.partial import known\n",
    )
    assert code == 0 and res["errors"] == [] and res["warnings"] == [], res
    assert "pkg.core.Agent" in res["checked"], res
    made_up = ("walk", "Agnet", "pkg.nope", "pkg.helper", "'Y'", "guessed")
    code, res = validate(
        root,
        "from pkg import walk\nfrom pkg.core import Agnet\nimport pkg.nope\n"
        "import pkg.helper\nfrom pkg.sub import Y\nfrom pkg.partial import guessed\n",
    )
    assert code == 0 and res["errors"] == [], res
    for name in made_up:
        assert warned_about(res, name.strip("'")), (name, res)


def test_stubs_only_install_found_without_root(tmp_path):
    """Without ``--root``, a venv whose site-packages hold only
    ``pkg-stubs`` (no ``pkg``) is the corpus (read, never imported)."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    tree(site, {"pkg-stubs/__init__.pyi": "def run() -> None: ...\n"})
    env = {**os.environ, "VIRTUAL_ENV": str(tmp_path / "venv")}
    proc = subprocess.run(
        [*CLI, "corpus", "path", "--profile", _prof(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == site.resolve()


def test_stubs_package_beside_the_package(tmp_path):
    """``pkg-stubs/`` beside ``pkg/`` (both installed): a stub describes the
    module, but what the module itself binds is real even when the stub
    omits it; a name neither has is an error; a compiled module's stub that
    omits a name leaves it unknown (the stub may be incomplete); modules
    only the runtime has (a partial stub package) exist."""
    root = tree(
        tmp_path / "site",
        {
            "pkg/__init__.py": "import os\nfrom .core import run, hidden\n",
            "pkg/core.py": "def run():\n    pass\n\n\ndef hidden():\n    pass\n",
            "pkg/extra.py": "Z = 1\n",
            "pkg-stubs/__init__.pyi": "from .core import run as run\n",
            "pkg-stubs/core.pyi": "def run() -> None: ...\n",
            "pkg-stubs/fast.pyi": "def speed() -> int: ...\n",
        },
    )
    (root / "pkg/fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    code, res = validate(
        root,
        "from pkg import run, hidden, os\nfrom pkg.core import hidden\n"
        "from pkg.extra import Z\nfrom pkg.fast import speed\n",
    )
    assert code == 0 and res["errors"] == [], res
    code, res = validate(
        root, "from pkg import walk\nfrom pkg.core import hiden\nimport pkg.nope\n"
    )
    assert errors_about(res, "walk", "hiden", "pkg.nope") == {
        "walk": True,
        "hiden": True,
        "pkg.nope": True,
    }, res
    code, res = validate(root, "from pkg.fast import slow\n")
    assert code == 0 and warned_about(res, "slow"), res


PYX = """\
    # cython: language_level=3
    from libc.math cimport sqrt
    cimport numpy as cnp
    import numpy as np
    include "helpers.pxi"

    DEF SIZE = 10
    cdef int hidden_counter = 0
    cdef double _c_only(double x) nogil:
        return sqrt(x)

    cpdef double norm(double[:] v):
        return 0.0

    def public(int n, *, scale=1.0):
        '''A docstring with "quotes" and a # hash'''
        return n

    cdef class Tree:
        cdef public int size
        def grow(self):
            pass

    class PyThing(object):
        pass

    cpdef enum Colour:
        RED = 1
        GREEN

    VERSION = (1, 2,
    3)
    LABEL = <bytes>b"x"
    if SIZE > 5:
        BIG = True
    """

PXI = """\
    cdef class _Private:
        pass
    cdef public class Included [object PyIncluded, type PyIncludedType]:
        pass
    def helper():
        pass
    """


def test_cython_pyx_names(tmp_path):
    root = tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'pkg'\n",
            "src/pkg/__init__.py": "",
            "src/pkg/_ext.pyx": PYX,
            "src/pkg/helpers.pxi": PXI,
        },
    )
    real = [
        "norm",
        "public",
        "Tree",
        "PyThing",
        "Colour",
        "RED",
        "GREEN",
        "VERSION",
        "LABEL",
        "BIG",
        "np",
        "Included",
        "helper",
        "_Private",
    ]
    code, res = validate(root, "".join(f"from pkg._ext import {n}\n" for n in real))
    assert code == 0 and res["errors"] == [], res
    fake = ["hidden_counter", "_c_only", "SIZE", "sqrt", "cnp", "grow", "nothing"]
    _, res = validate(root, "".join(f"from pkg._ext import {n}\n" for n in fake))
    assert all(errors_about(res, *[f"'{n}'" for n in fake]).values()), res


def test_cython_module_with_unreadable_include_stays_open(tmp_path):
    root = tree(
        tmp_path / "site",
        {
            "pkg/__init__.py": "",
            "pkg/m.pyx": 'include "missing.pxi"\ndef f():\n  pass\n',
        },
    )
    code, res = validate(root, "from pkg.m import f\nfrom pkg.m import g\n")
    assert code == 0 and warned_about(res, "g"), res


def test_build_declared_modules_are_unknown(tmp_path):
    root = tree(
        tmp_path / "proj",
        {
            "src/pkg/__init__.py": "",
            "src/pkg/meson.build": "py.extension_module('_gen',\n  ['_gen.c'])\n",
            "src/pkg/_tmpl.pyx.in": "def f():\n  pass\n",
        },
    )
    code, res = validate(root, "import pkg._gen\nfrom pkg._tmpl import f\n")
    assert code == 0, res
    _, res = validate(root, "import pkg._nothing\n")
    assert errors_about(res, "pkg._nothing") == {"pkg._nothing": True}


# -- module __getattr__ shapes (PEP 562) ----------------------------------------

LAZY_STUB = {
    "pkg/__init__.py": """\
        import lazy_loader as lazy
        __getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
        """,
    "pkg/__init__.pyi": """\
        from . import filters
        from ._core import gaussian, sobel as edge
        __all__ = ["filters", "gaussian", "edge"]
        """,
    "pkg/_core.py": "def gaussian():\n    pass\ndef sobel():\n    pass\n",
    "pkg/filters.py": "def median():\n    pass\n",
}

LAZY_ATTACH = {
    "pkg/__init__.py": """\
        import lazy_loader as lazy
        __getattr__, __dir__, __all__ = lazy.attach(
            __name__,
            submodules=["filters"],
            submod_attrs={"_core": ["gaussian", "sobel"]},
        )
        """,
    "pkg/_core.py": "def gaussian():\n    pass\ndef sobel():\n    pass\n",
    "pkg/filters.py": "def median():\n    pass\n",
}

DICT_DISPATCH = {
    "pkg/__init__.py": """\
        import importlib
        _LAZY = {"gaussian": "._core", "sobel": "._core"}
        def __getattr__(name):
            if name in _LAZY:
                return getattr(importlib.import_module(_LAZY[name], __name__), name)
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        """,
    "pkg/_core.py": "def gaussian():\n    pass\ndef sobel():\n    pass\n",
}

IF_CHAIN_GLOBALS_SHIM = {
    # scikit-image's skimage.io: a deprecation shim that warns, then returns
    # a private global by a literal key; every other name raises
    "pkg/__init__.py": """\
        import warnings
        _old_plugins = ["a"]
        def gaussian():
            pass
        def __getattr__(name):
            if name == "old_plugins":
                warnings.warn("deprecated", FutureWarning, stacklevel=2)
                return globals()["_old_plugins"]
            elif name == "older":
                return globals().get("_old_plugins")
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        """,
}


@pytest.mark.parametrize(
    ("shape", "files", "real", "fake"),
    [
        ("attach_stub", LAZY_STUB, ["gaussian", "edge", "filters"], ["sobel", "blur"]),
        ("attach", LAZY_ATTACH, ["gaussian", "sobel", "filters"], ["blur", "median"]),
        ("dict", DICT_DISPATCH, ["gaussian", "sobel"], ["blur"]),
        (
            "if-chain+globals",
            IF_CHAIN_GLOBALS_SHIM,
            ["gaussian", "old_plugins", "older"],
            ["plugins", "_old"],
        ),
    ],
)
def test_module_getattr_shapes(tmp_path, shape, files, real, fake):
    root = tree(tmp_path / "site", files)
    code, res = validate(root, "".join(f"from pkg import {n}\n" for n in real))
    assert code == 0 and res["errors"] == [] and res["warnings"] == [], (shape, res)
    _, res = validate(root, "".join(f"from pkg import {n}\n" for n in fake))
    assert all(errors_about(res, *[f"'{n}'" for n in fake]).values()), (shape, res)


def test_setattr_injected_names_are_never_errors(tmp_path):
    root = tree(
        tmp_path / "site",
        {
            "pkg/__init__.py": "",
            "pkg/plugin.py": "def imread():\n    pass\n",
            "pkg/manage.py": """\
                def load(modname):
                    mod = __import__("pkg." + modname, fromlist=[modname])
                    setattr(mod, "imread_collection", mod.imread)
                """,
        },
    )
    code, res = validate(root, "from pkg.plugin import imread_collection\n")
    assert code == 0 and warned_about(res, "imread_collection"), res
    _, res = validate(root, "from pkg.plugin import imwrite\n")
    assert errors_about(res, "imwrite") == {"imwrite": True}


# -- profile init and corpus fetch ----------------------------------------------


def test_profile_init_writes_a_usable_profile(tmp_path):
    root = tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'my-pkg'\nversion = '2.0'\n",
            "README.md": "# my pkg\n",
            "docs/index.rst": "Docs\n====\n",
            "examples/demo.py": "import pkg\n",
            "src/pkg/__init__.py": "def real():\n    pass\n",
            "src/pkg/tests/test_x.py": "def test():\n    pass\n",
        },
    )
    out = tmp_path / "pkg.toml"
    proc = subprocess.run(
        [*CLI, "profile", "init", "pkg", "--root", str(root), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    import tomllib

    prof = tomllib.loads(out.read_text())
    assert prof["package"] == "pkg" and prof["name"] == "pkg"
    assert prof["roots"] == ["src/pkg", "docs", "examples"]
    assert prof["root_docs"] == ["README.md"]
    assert prof["distribution"] == "my-pkg==2.0"
    assert "/tests/" in prof["excludes"]
    # the profile works for the validator on that root
    proc = subprocess.run(
        [*CLI, "validate", "-", "--profile", str(out), "--root", str(root)],
        input="from pkg import real\nfrom pkg import fake\n",
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 1 and "'fake'" in proc.stdout, proc.stdout
    # and refuses to overwrite
    again = subprocess.run(
        [*CLI, "profile", "init", "pkg", "--root", str(root), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 2 and "exists" in again.stderr


def test_profile_init_package_missing_says_so(tmp_path):
    proc = subprocess.run(
        [*CLI, "profile", "init", "nopkg", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "package 'nopkg' is not under" in proc.stderr


def test_corpus_fetch_unknown_distribution_is_a_clear_error(tmp_path):
    """Every way (sdist, wheel, installed copy) is tried and reported."""
    proc = subprocess.run(
        [
            *CLI,
            "corpus",
            "fetch",
            "pycsamt-lsp-no-such-distribution-xyz",
            "--dest",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 2
    err = proc.stderr
    assert "cannot fetch pycsamt-lsp-no-such-distribution-xyz" in err
    assert "sdist:" in err and "wheel:" in err and "installed:" in err
