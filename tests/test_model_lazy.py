"""The persisted package model loads lazily and answers exactly as a built one.

``load_model`` keeps each module's ``doc``/``functions``/``classes`` in the
file until first read (``model/lazy.py``); these tests pin that the facts,
the editor queries and a second persist are unchanged, that only what is read
gets decoded, that an LRU bound evicts and re-reads correctly, and that a
file the loader cannot walk lazily still loads (or is refused as before).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pycsamt_lsp.model.lazy import _MIN_KEPT, LazyModuleInfo
from pycsamt_lsp.model.package import ModuleInfo, PackageModel
from pycsamt_lsp.model.state import MODEL_FILE, load_model, module_files, save_model

FILES = {
    "__init__.py": '''
        """The package: static shift tools."""
        from .ss import estimate_ss, Corrector
        from . import sub
        __all__ = ["estimate_ss", "Corrector", "sub"]
    ''',
    "ss.py": '''
        """Static shift (ss) estimation."""
        def estimate_ss(data, *, window=5, method="ama"):
            """Estimate the static shift of *data*."""
            return data

        class Corrector:
            """Corrects the static shift."""
            def __init__(self, factor: float = 1.0):
                self.factor = factor
            def apply(self, z, inplace=False):
                """Apply the factor; ünïcode in a docstring."""
                return z
    ''',
    "sub/__init__.py": "from .tools import rotate\n",
    "sub/tools.py": '''
        def rotate(z, angle=0.0):
            """Rotate to strike."""
            return z
        class Rotator:
            class Inner:
                pass
    ''',
}


def _write(root: Path, extra: int = 0) -> Path:
    more = {f"m{i}.py": f"def f{i}(a, b={i}):\n    return a\n" for i in range(extra)}
    for rel, text in {**FILES, **more}.items():
        p = root / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _persisted(
    tmp_path: Path, extra: int = 0
) -> tuple[Path, Path, PackageModel, dict[str, str]]:
    root = _write(tmp_path / "corpus", extra)
    idx = tmp_path / "idx"
    idx.mkdir()
    files = module_files(root, "pkg")
    built, shas, changed = load_model(idx, root, "pkg", files)  # nothing persisted
    assert changed
    save_model(idx, built, shas)
    return root, idx, built, shas


def _facts(model: PackageModel):
    info = next(iter(model._files.values()))
    assert isinstance(info, LazyModuleInfo)
    return info._facts


def test_loaded_model_is_lazy_and_equal(tmp_path: Path) -> None:
    root, idx, built, shas = _persisted(tmp_path)
    files = module_files(root, "pkg")
    model, shas2, changed = load_model(idx, root, "pkg", files)
    assert not changed and shas2 == shas
    assert all(isinstance(i, LazyModuleInfo) for i in model._files.values())
    facts = _facts(model)
    # resolution of bindings and suggestions need no decoded module
    assert model.resolve("pkg.estimate_ss").exists
    assert model.resolve("pkg.static_shift").absent
    model.prepare()
    assert facts.decodes == 0
    # the facts and the editor answers equal the built model's
    assert model._files == built._files
    assert model.to_dict() == built.to_dict()
    for dotted in (
        "pkg.estimate_ss",
        "pkg.Corrector",
        "pkg.Corrector.apply",
        "pkg.sub.rotate",
    ):
        assert model.signature(dotted) == built.signature(dotted), dotted
        assert model.doc(dotted) == built.doc(dotted), dotted
        assert model.call_signature(dotted) == built.call_signature(dotted), dotted
    assert model.members("pkg.Corrector") == built.members("pkg.Corrector")
    assert model.members("pkg") == built.members("pkg")
    assert model.suggest("pkg.static_shift") == built.suggest("pkg.static_shift")
    assert facts.decodes > 0


def test_only_the_module_read_is_decoded(tmp_path: Path) -> None:
    _root, idx, _built, _shas = _persisted(tmp_path)
    model, _ = PackageModel.load_persisted(idx / MODEL_FILE)
    facts = _facts(model)
    sig = model.signature("pkg.sub.rotate")
    assert sig is not None and sig["doc"] == "Rotate to strike."
    assert facts.decodes == 1
    assert set(facts.kept) == {id(model._files["pkg/sub/tools.py"])}


def test_eviction_past_the_budget_reads_again(tmp_path: Path) -> None:
    _root, idx, built, _shas = _persisted(tmp_path, extra=20)
    model, _ = PackageModel.load_persisted(idx / MODEL_FILE, budget=0)
    facts = _facts(model)
    infos = list(model._files.values())
    assert len(infos) > 2 * _MIN_KEPT
    for info in infos:
        want = built._files[info.rel]
        assert (info.doc, info.functions, info.classes) == (
            want.doc,
            want.functions,
            want.classes,
        )
    assert facts.decodes == len(infos)  # one slice read per module
    assert len(facts.kept) == _MIN_KEPT  # budget 0: only the last few stay
    first = infos[0]
    assert id(first) not in facts.kept
    assert first.functions == built._files[first.rel].functions
    assert facts.decodes == len(infos) + 1  # evicted, so read again
    assert facts.kept_bytes == sum(size for _, size in facts.kept.values())


def test_assignment_pins_a_field(tmp_path: Path) -> None:
    _root, idx, built, _shas = _persisted(tmp_path)
    model, _ = PackageModel.load_persisted(idx / MODEL_FILE, budget=0)
    info = model._files["pkg/ss.py"]
    assert isinstance(info, LazyModuleInfo)
    info.doc = "replaced"
    assert info._span is None
    assert info.doc == "replaced"
    assert info.functions == built._files["pkg/ss.py"].functions


def test_file_replaced_after_load_still_reads_the_old_facts(tmp_path: Path) -> None:
    root, idx, built, shas = _persisted(tmp_path)
    model, _, _ = load_model(idx, root, "pkg", module_files(root, "pkg"))
    other = PackageModel("pkg", root)
    other.add_module(
        ModuleInfo.from_source(b"x = 1\n", name="pkg", rel="pkg/__init__.py")
    )
    save_model(idx, other, {})  # atomic replace of package_model.json
    assert model.to_dict() == built.to_dict()
    # and persisting the lazy model again writes what the built one wrote
    save_model(idx, model, shas)
    again, shas2 = PackageModel.load_persisted(idx / MODEL_FILE)
    assert again.to_dict() == built.to_dict() and shas2 == shas


def test_a_non_ascii_file_loads_eagerly(tmp_path: Path) -> None:
    _root, idx, built, shas = _persisted(tmp_path)
    path = idx / MODEL_FILE
    doc = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    assert not path.read_bytes().isascii()
    model, shas2 = PackageModel.load_persisted(path)
    assert not any(isinstance(i, LazyModuleInfo) for i in model._files.values())
    assert model.to_dict() == built.to_dict() and shas2 == shas


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["model"].update(model_version=-1),
        lambda d: d.pop("shas"),
        lambda d: d["model"]["files"].update({"pkg/x.py": [1, 2]}),
        lambda d: d.update(model=[1, 2]),
    ],
)
def test_a_foreign_document_is_refused(tmp_path: Path, mutate) -> None:
    _root, idx, _built, _shas = _persisted(tmp_path)
    path = idx / MODEL_FILE
    doc = json.loads(path.read_text("utf-8"))
    mutate(doc)
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises((ValueError, KeyError, TypeError, AttributeError)):
        PackageModel.load_persisted(path)


def test_a_dropped_model_closes_its_file_without_the_cyclic_gc(tmp_path: Path) -> None:
    import gc
    import weakref

    _root, idx, _built, _shas = _persisted(tmp_path)
    model, _ = PackageModel.load_persisted(idx / MODEL_FILE)
    for info in model._files.values():
        _ = info.functions  # decoded modules sit in the LRU
    facts_ref = weakref.ref(_facts(model))
    gc.disable()
    try:
        del model, info
        assert facts_ref() is None  # no cycle: reference counting frees it
    finally:
        gc.enable()


def test_iter_json_is_json_dumps_and_persisting_decodes_nothing(tmp_path: Path) -> None:
    _root, idx, built, shas = _persisted(tmp_path)
    assert b"".join(built.iter_json()) == json.dumps(built.to_dict()).encode()
    model, _ = PackageModel.load_persisted(idx / MODEL_FILE)
    facts = _facts(model)
    before = (idx / MODEL_FILE).read_bytes()
    save_model(idx, model, shas)  # unchanged lazy modules: copied, not decoded
    assert facts.decodes == 0
    assert (idx / MODEL_FILE).read_bytes() == before
    # a module replaced after the load is encoded from its new facts
    model.update_file("pkg/sub/tools.py", b"def rotate(z):\n    return z\n")
    save_model(idx, model, shas)
    again, _ = PackageModel.load_persisted(idx / MODEL_FILE)
    assert again.to_dict() == model.to_dict()
    assert again.signature("pkg.sub.tools.rotate")["params"][0]["name"] == "z"
    assert b"".join(again.iter_json()) == json.dumps(again.to_dict()).encode()
