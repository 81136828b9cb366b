"""Deferred modules (``model.deferred``) give the answers an eager model gives.

A build lists the module files the index leaves out (UI glue, the package's
own tests, ...) without parsing them; they are parsed on first use. These
tests hold every answer of such a model (built and persisted by the real
build, then loaded as a server or CLI loads it) equal to the eager
``PackageModel.build`` of the same tree: ``resolve`` of every name each
module binds and of names that do not exist, ``validate_generated_code`` of
imports, re-exports, star imports and hallucinations, and suggestions; on a
fixture tree with every case, and on the real pyCSAMT sdist.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from pycsamt_lsp.analysis.validate import validate_generated_code
from pycsamt_lsp.corpus.profile import profile_from_dict
from pycsamt_lsp.model.deferred import DeferredModuleInfo, HeadModuleInfo
from pycsamt_lsp.model.facts import MODEL_VERSION
from pycsamt_lsp.model.package import PackageModel
from pycsamt_lsp.model.state import MODEL_FILE
from pycsamt_lsp.workspace import facade
from pycsamt_lsp.workspace.facade import Workspace

PROFILE = profile_from_dict(
    {
        "name": "fixture",
        "package": "geo",
        "roots": ["geo"],
        "excludes": ["geo/app/"],
    }
)

FILES = {
    "geo/__init__.py": (
        '"""Geo."""\n'
        "from geo.app.tools import helper as helper\n"
        "from geo.app.star import *\n"
        "from geo.core import shift\n"
        "__all__ = ['helper', 'shift', 'Shown']\n"
    ),
    "geo/core/__init__.py": "from .shift import correct\n",
    "geo/core/shift.py": (
        "def correct(x, *, factor=1.0):\n"
        '    """Correct."""\n'
        "    return x\n\n\n"
        "class Agent:\n"
        "    def run(self, band=None):\n"
        "        self.band = band\n"
    ),
    # excluded by the profile: modelled, not indexed -> deferred
    "geo/app/__init__.py": "",
    "geo/app/tools.py": (
        "import os\n\n"
        "def helper(path, mode='r'):\n"
        '    """Help."""\n'
        "    return os.path.basename(path)\n\n\n"
        "class Tool:\n"
        "    def use(self, n: int = 2):\n"
        "        return n\n"
    ),
    "geo/app/star.py": (
        "__all__ = ['Shown']\n\n\nclass Shown:\n    pass\n\n\nclass _Hidden:\n    pass\n"
    ),
    "geo/app/nested/__init__.py": "from geo.app.nested.deep import Deep\n",
    "geo/app/nested/deep.py": "class Deep:\n    x = 1\n",
    "geo/app/broken.py": "def f(:\n    pass\n",
    "geo/app/_private.py": "def _glue(widget, size=3):\n    return widget\n",
    "geo/app/_broken.py": "def g(:\n    pass\n",
    "geo/app/opened.py": "def __getattr__(name):\n    return name\n",
    # text the package-wide scans read: parsed by the build, never deferred
    "geo/app/dyn.py": "import geo.core\nsetattr(geo.core, 'injected_name', 1)\n",
    "geo/app/reg.py": "import sys\nsys.modules['geo.virtual'] = object()\n",
    # unit tests inside the package: modelled, not indexed -> deferred
    "geo/tests/__init__.py": "",
    "geo/tests/test_shift.py": (
        "from geo.core.shift import correct\n\n\ndef test_correct():\n"
        "    assert correct(1) == 1\n"
    ),
    "geo/tests/conftest.py": "import pytest\n",
    # identifiers are NFKC-normalised: this file binds "file" and "Agent"
    "geo/tests/test_nfkc.py": "\ufb01le = 1\n\uff21gent = 2\n# caf\u00e9\n",
    "geo/tests/test_latin.py": "# -*- coding: latin-1 -*-\nx = 1\n",
    "geo/tests/test_computed.py": (
        "for _n in ('alpha', 'beta'):\n    globals()['make_' + _n] = len\n"
    ),
    "geo/tests/test_local.py": "def test_x():\n    from geo import helper\n",
    # a method named setattr is no injection: still deferred
    "geo/tests/test_patch.py": (
        "def test_patch(monkeypatch):\n"
        "    monkeypatch.setattr('geo.core.shift.correct', len)\n"
        "    # see sys.path and the loaded submodules\n"
    ),
}

GOOD_AND_BAD = [
    "from geo import helper",
    "from geo import Shown",
    "from geo import _Hidden",
    "from geo import shift, correct",
    "from geo.app.tools import helper, Tool",
    "from geo.app.tools import helpr",
    "from geo.app.star import Shown, _Hidden, nothing",
    "from geo.app.nested import Deep",
    "from geo.app.nested.deep import Deep, Shallow",
    "from geo.app.broken import anything",
    "from geo.app.opened import anything",
    "from geo.app.missing import x",
    "from geo.tests.test_shift import test_correct, correct, nope",
    "from geo.tests import conftest",
    "import geo.virtual",
    "from geo.core import injected_name",
    "from geo.core.shift import corect",
    "from geo.app.tools import helper\nhelper('a', mode='w', colour=1)\n",
    "from geo.app.tools import Tool\nTool().use(n=3)\nTool().missing()\n",
    "import geo.app.tools as t\nt.helper('x')\nt.Tool.nope\n",
    "from geo.app import tols\n",
    "from geo.app._private import _glue, _glu\n_glue(1, size=2, colour=3)\n",
    "from geo.app._broken import g\n",
    "from geo.tests import test_patch, test_pach\n",
    "from geo.tests.test_nfkc import file, Agent, fil\n",
    "from geo.tests.test_computed import make_alpha, make_gamma\n",
    "from geo.nothere import helper\n",
    "from geo.nothere import file\n",
    "from geo.nothere import make_beta, x\n",
    "from geo.nothere import invented_name\n",
]


def make_tree(root: Path) -> None:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def names_to_ask(model: PackageModel) -> list[str]:
    """Every module, every name each binds, and names that do not exist."""
    out: list[str] = []
    for mod, info in sorted(model.modules.items()):
        out += [mod, f"{mod}.not_there", f"{mod}.__version__"]
        out += [f"{mod}.{n}" for n in info.bindings]
        for cname, ci in info.classes.items():
            out += [f"{mod}.{cname}.{m}" for m in ci.methods]
            out.append(f"{mod}.{cname}.no_such_method")
    return out


def answers(model: PackageModel, names: list[str], codes: list[str]) -> dict:
    res = {}
    for n in names:
        r = model.resolve(n)
        res[n] = (r.status, r.target, r.message, r.location)
    for code in codes:
        res[code] = validate_generated_code(code, model)
    return res


def deferred_of(model: PackageModel) -> dict[str, DeferredModuleInfo]:
    return {
        rel: info
        for rel, info in model._files.items()
        if isinstance(info, DeferredModuleInfo)
    }


def built_model(root: Path, index_dir: Path, *, workers: int = 1) -> Workspace:
    ws = Workspace(root, PROFILE, index_dir=index_dir, workers=workers)
    ws.rebuild()
    return ws


def test_build_defers_the_modules_the_index_leaves_out(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_tree(root)
    ws = built_model(root, tmp_path / "idx")
    doc = json.loads((tmp_path / "idx" / MODEL_FILE).read_text())
    assert doc["model"]["model_version"] == MODEL_VERSION
    files = doc["model"]["files"]
    # the excluded modules whose text may inject or register names: what
    # they bind is extracted by the build, their defs and classes parsed
    # when used
    assert {r for r, d in files.items() if "head" in d} == {
        "geo/app/dyn.py",
        "geo/app/reg.py",
    }
    assert files["geo/app/dyn.py"]["head"]["injects"] == ["injected_name"]
    assert "functions" not in files["geo/app/tools.py"]
    recorded = {r for r, d in files.items() if "deferred" in d and "head" not in d}
    # tests, private modules and the rest of what the profile excludes: the
    # suggestion index never reads their names, and nothing in their text
    # can register or inject a name: not parsed (broken.py neither)
    assert recorded == {
        "geo/app/__init__.py",
        "geo/app/tools.py",
        "geo/app/star.py",
        "geo/app/nested/__init__.py",
        "geo/app/nested/deep.py",
        "geo/app/broken.py",
        "geo/app/opened.py",
        "geo/app/_private.py",
        "geo/app/_broken.py",
        "geo/tests/__init__.py",
        "geo/tests/test_shift.py",
        "geo/tests/conftest.py",
        "geo/tests/test_patch.py",
        "geo/tests/test_nfkc.py",
        "geo/tests/test_latin.py",
        "geo/tests/test_computed.py",
        "geo/tests/test_local.py",
    }
    for rel in recorded:  # the record carries the hash of the bytes listed
        assert doc["model"]["files"][rel]["deferred"] == doc["shas"][rel]
    model = ws.model  # loaded from the persisted file, as a CLI or server does
    lazy = {r: i for r, i in deferred_of(model).items() if r in recorded}
    assert set(lazy) == recorded
    assert not any(i.materialised for i in lazy.values())
    # the module table and the package-wide scans read none of them
    assert "geo.app.tools" in model.modules
    assert model.resolve("geo.core.injected_name").status == "unknown"
    assert not any(i.materialised for i in lazy.values())
    # a name inside one parses that one only
    assert model.resolve("geo.tests.test_shift.test_correct").status == "exists"
    assert sorted(r for r, i in lazy.items() if i.materialised) == [
        "geo/tests/__init__.py",
        "geo/tests/test_shift.py",
    ]
    # an excluded module is parsed when a name in it is asked for
    tools = deferred_of(model)["geo/app/tools.py"]
    assert not isinstance(tools, HeadModuleInfo)
    assert not tools.materialised
    assert model.resolve("geo.app.tools.helper").status == "exists"
    assert model.resolve("geo.app.tools.nothing").status == "absent"
    assert tools.materialised
    assert model.members("geo.app.tools.Tool") == [("use", "method")]
    # the package-wide suggestions never read the excluded modules' names
    assert model.suggest("helpr") == ["geo.helper"]
    assert "geo.tests.test_shift.test_correct" not in model.suggest("test_corect")
    # (resolving geo.app.tools.helper read the package geo.app too)
    parsed = {"geo/app/__init__.py", "geo/app/tools.py"}
    parsed |= {"geo/tests/__init__.py", "geo/tests/test_shift.py"}
    assert sorted(r for r, i in lazy.items() if not i.materialised) == sorted(
        recorded - parsed
    )
    # geo.app.nested(.deep).Deep: left out (the module's name is not)
    assert model.suggest("Deep", k=5) == ["geo.app.nested.deep"]
    # a typo inside one of them: that module's names (it is parsed), first
    assert model.suggest("geo.app.nested.deep.Deeep") == ["geo.app.nested.deep.Deep"]
    assert model.suggest("Deeep", within="geo.app.nested.deep") == [
        "geo.app.nested.deep.Deep"
    ]
    assert lazy["geo/app/nested/deep.py"].materialised
    assert not lazy["geo/app/star.py"].materialised


@pytest.mark.parametrize("workers", [1, 2])
def test_deferred_answers_equal_the_eager_model(
    tmp_path: Path, monkeypatch, workers: int
) -> None:
    root = tmp_path / "corpus"
    make_tree(root)
    if workers > 1:
        monkeypatch.setattr(facade, "_PARALLEL_MIN_FILES", 1)
    ws = built_model(root, tmp_path / "idx", workers=workers)
    deferred = ws.model
    eager = PackageModel.build(root, "geo")
    for m in (deferred, eager):
        m.suggest_demote = lambda rel: not PROFILE.should_index(rel)
    assert deferred_of(deferred) and not deferred_of(eager)
    names = names_to_ask(eager)
    assert len(names) > 60
    assert answers(deferred, names, GOOD_AND_BAD) == answers(eager, names, GOOD_AND_BAD)
    for name in ("helpr", "Tol", "shown", "geo.app.tols", "corect", "Dep", "glue"):
        assert deferred.suggest(name, k=5) == eager.suggest(name, k=5)
        assert deferred.suggest(name, kind="module") == eager.suggest(
            name, kind="module"
        )
    assert deferred.members("geo") == eager.members("geo")
    assert deferred.members("geo.app.tools.Tool") == eager.members("geo.app.tools.Tool")
    assert list(deferred.all_symbols()) == list(eager.all_symbols())
    # and every module's facts are the same (this parses the rest)
    assert set(deferred._files) == set(eager._files)
    for rel, info in eager._files.items():
        assert deferred._files[rel] == info, rel


def test_in_memory_build_defers_the_same_modules(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_tree(root)
    ws = Workspace(root, PROFILE, index_dir=tmp_path / "a", workers=1)
    ws.build()
    held = ws.package_model.model
    assert held is not None
    assert set(deferred_of(held)) == set(
        deferred_of(built_model(root, tmp_path / "b").model)
    )
    names = names_to_ask(PackageModel.build(root, "geo"))
    assert answers(held, names, GOOD_AND_BAD) == answers(
        PackageModel.build(root, "geo"), names, GOOD_AND_BAD
    )


def test_a_deferred_file_gone_or_changed_is_read_as_it_is(
    tmp_path: Path, caplog
) -> None:
    root = tmp_path / "corpus"
    make_tree(root)
    model = built_model(root, tmp_path / "idx").model
    (root / "geo/tests/test_shift.py").unlink()
    (root / "geo/app/_private.py").write_text("def other():\n    pass\n")
    with caplog.at_level(logging.INFO, logger="pycsamt_lsp.model.deferred"):
        gone = model.resolve("geo.tests.test_shift.test_correct")
        changed = model.resolve("geo.app._private.other")
    assert gone.status == "unknown"  # not readable: never "absent", no crash
    assert changed.status == "exists"
    assert "changed since the build" in caplog.text
    assert "unreadable" in caplog.text


def test_a_model_of_the_previous_version_is_rebuilt_with_a_reason(
    tmp_path: Path, caplog
) -> None:
    root = tmp_path / "corpus"
    make_tree(root)
    idx = tmp_path / "idx"
    built_model(root, idx)
    path = idx / MODEL_FILE
    doc = json.loads(path.read_text())
    doc["model"]["model_version"] = MODEL_VERSION - 1
    path.write_text(json.dumps(doc))
    ws = Workspace(root, PROFILE, index_dir=idx, workers=1)
    with caplog.at_level(logging.WARNING):
        model = ws.model
    assert "rebuilding the package model" in caplog.text
    assert f"!= {MODEL_VERSION}" in caplog.text
    assert model.resolve("geo.app.tools.helper").status == "exists"


def test_a_reloaded_model_round_trips_deferred_records(tmp_path: Path) -> None:
    """Persisting a loaded model (some deferred modules parsed since) writes
    the same bytes: the record says deferred, not what was read."""
    root = tmp_path / "corpus"
    make_tree(root)
    idx = tmp_path / "idx"
    model = built_model(root, idx).model
    before = (idx / MODEL_FILE).read_bytes()
    model.resolve("geo.tests.test_shift.test_correct")
    loaded, _shas = PackageModel.load_persisted(idx / MODEL_FILE, root)
    loaded.resolve("geo.app._private._glue")
    assert isinstance(loaded._files["geo/app/_private.py"], DeferredModuleInfo)
    again = b"".join(loaded.iter_json())
    assert again == b"".join(
        PackageModel.from_dict(json.loads(before)["model"], root).iter_json()
    )
    assert json.loads(before)["model"] == json.loads(again)


# -- the real sdist -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sdist_models(real_corpus: Path, pycsamt_profile, tmp_path_factory):
    """(deferred model from a real build + load, eager PackageModel.build)."""
    idx = tmp_path_factory.mktemp("deferred_idx")
    ws = Workspace(real_corpus, pycsamt_profile, index_dir=idx, workers=2)
    ws.rebuild()  # writes into idx only, never into the cached corpus
    deferred = ws.model
    eager = PackageModel.build(real_corpus, "pycsamt")
    eager.suggest_demote = lambda rel: not pycsamt_profile.should_index(rel)
    eager.prepare()
    return deferred, eager


@pytest.mark.corpus
def test_sdist_defers_only_what_suggestions_never_read(sdist_models) -> None:
    deferred, _ = sdist_models
    later = deferred_of(deferred)
    full = {r for r, i in later.items() if not isinstance(i, HeadModuleInfo)}
    # the UI glue, RAG internals and private modules: not parsed; a module
    # whose text may inject or register names: its names read
    assert len(full) > 250 and len(later) - len(full) < 20
    assert all(
        r.startswith("pycsamt/app/") or "/_" in r
        for r in full
        if "/rag/" not in r and "/evals/" not in r and "/cli/commands/" not in r
    )
    deferred.suggest("static_shift")  # the first suggestion parses none of these
    assert not any(later[r].materialised for r in full)


@pytest.mark.corpus
def test_sdist_answers_equal_the_eager_model(sdist_models, real_corpus) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import test_validate_corpus as tvc
    finally:
        sys.path.pop(0)
    deferred, eager = sdist_models
    stmts = sorted({s for _, _, s in tvc._corpus_import_statements(real_corpus)})
    assert len(stmts) > 2000
    codes = stmts + [code for _, code in tvc._hallucinations(real_corpus)]
    codes += [
        "from pycsamt import static_shift",
        "from pycsamt.agents import StaticShiftAgent",
        "from pycsamt.app.desktop import nothing_here",
        "from pycsamt.assistant.rag import retriever",
    ]
    names = [
        "pycsamt.static_shift",
        "pycsamt.agents.StaticShiftAgent",
        "pycsamt.geodrill",
        "pycsamt.emtools.ss.estimate_ss_ama",
        "pycsamt.seg.EDIFile",
        "pycsamt.app",
        "pycsamt.app.not_there",
    ]
    got, want = answers(deferred, names, codes), answers(eager, names, codes)
    assert [k for k in want if got[k] != want[k]] == []
    for name in ("static_shift", "EDI_file", "rotate_strike", "ss_correction"):
        assert deferred.suggest(name) == eager.suggest(name)
    # every problem the validation found in pyCSAMT itself is still found
    broken = {s for _, s in tvc.KNOWN_BROKEN_IMPORTS}
    assert all(not got[s]["ok"] for s in broken if s in got)


@pytest.mark.parametrize(
    ("text", "deferred"),
    [
        (b"setattr(mod, 'x', 1)\n", False),
        (b"f = setattr\n", False),
        (b"obj. setattr(a, 'b', 1)\n", False),  # a false match: parsed, still right
        (b"monkeypatch.setattr(a, 'b', 1)\n", True),
        (b"import sys\nsys.modules['a.b'] = m\n", False),
        (b"import sys\n(sys .  # note\n  modules)['a'] = m\n", False),
        (b"import sys\nsys.\\\n    modules['a'] = m\n", False),
        (b"import sys\nsys.meta_path.append(f)\n", False),
        (b"# the submodules of this package\nimport modules\n", True),
        (b"x = 1\n", True),
    ],
)
def test_only_files_without_scanned_facts_are_deferred(text: bytes, deferred: bool):
    """A deferred file's injects and sys.modules registrations are taken as
    empty: whatever could make them not empty is parsed by the build."""
    from pycsamt_lsp.model.deferred import deferrable
    from pycsamt_lsp.model.extract import ModuleInfo

    assert deferrable("geo.tests.x", "source", text) is deferred
    assert deferrable("geo.app._x", "source", text) is deferred
    if deferred:
        info = ModuleInfo.from_source(text, name="geo.app.x", rel="geo/app/x.py")
        assert info.injects == [] and info.registered_modules == []
    assert not deferrable("geo.tests.x", "stub", b"x = 1\n")
    assert not deferrable("geo.app.x", "source", b"x = 1\n")  # its names are suggested
    # unless the profile leaves it out of the index (not suggested)
    assert deferrable("geo.app.x", "source", text, suggested=False) is deferred


def test_binds_answers_as_the_parsed_bindings(tmp_path: Path) -> None:
    """``binds`` skips the parse only when the text proves the answer."""
    root = tmp_path / "corpus"
    make_tree(root)
    eager = PackageModel.build(root, "geo")
    names = sorted({n for info in eager._files.values() for n in info.bindings})
    names += ["file", "Agent", "make_alpha", "make_gamma", "invented", "caf\u00e9"]
    for rel, want in eager._files.items():
        model = built_model(root, tmp_path / f"idx{len(rel)}").model
        info = model._files[rel]
        if not isinstance(info, DeferredModuleInfo):
            continue
        got = {n: info.binds(n) for n in names}
        assert got == {n: n in want.bindings for n in names}, rel
    model = built_model(root, tmp_path / "idx").model
    later = deferred_of(model)
    assert not later["geo/tests/test_patch.py"].binds("invented")
    assert not later["geo/tests/test_patch.py"].materialised  # the text said no
    assert later["geo/tests/test_nfkc.py"].binds("file")
    computed = later["geo/tests/test_computed.py"]
    computed.binds("make_beta")
    assert computed.materialised  # globals() writes: only a parse can say


@pytest.mark.parametrize(
    "declared", [b"# -*- coding: latin-1 -*-\n", b"# vim: set fileencoding=utf-8 :\n"]
)
def test_binds_of_a_non_ascii_file_with_a_coding_line(tmp_path: Path, declared):
    """A non-ASCII file that declares its encoding: ``binds`` answers as the
    parsed bindings do (the declared name was compared as bytes to str and
    raised before)."""
    import hashlib

    body = "caf\u00e9 = 'cr\u00e8me'\n\ndef r\u00e9sum\u00e9():\n    return 1\n"
    enc = "latin-1" if b"latin" in declared else "utf-8"
    data = declared + body.encode(enc)
    (tmp_path / "geo" / "tests").mkdir(parents=True)
    (tmp_path / "geo" / "tests" / "test_enc.py").write_bytes(data)
    info = DeferredModuleInfo.of(
        name="geo.tests.test_enc",
        rel="geo/tests/test_enc.py",
        is_package=False,
        sha=hashlib.sha256(data).hexdigest(),
        root=tmp_path,
    )
    answers = {n: info.binds(n) for n in ("caf\u00e9", "r\u00e9sum\u00e9", "absent")}
    assert answers == {n: n in info.bindings for n in answers}
    assert answers["absent"] is False and answers["r\u00e9sum\u00e9"] is True
