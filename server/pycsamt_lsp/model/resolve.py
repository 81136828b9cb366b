"""Resolution: exists / absent / unknown for a dotted name of the package.

The cross-module steps of the model (re-export chains, star imports, lazy
``__getattr__`` targets, class bases and their attributes) run here at query
time over the per-module facts, with a cache that every update of the model
clears. Absence is only claimed when it is provable: the namespace the name
would live in is closed and holds no such name or submodule.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pycsamt_lsp.model.extract import ModuleInfo
from pycsamt_lsp.model.facts import (
    _NEUTRAL_CLASS_DECORATORS,
    _NEUTRAL_METACLASSES,
    ABSENT,
    EXISTS,
    UNKNOWN,
    Binding,
    ClassInfo,
    Resolution,
    _Fail,
    _package_parts,
    _Ref,
    _Step,
    in_stubs_package,
)

#: Bases that contribute no public attributes a generated script could use.
_EMPTY_BASES = frozenset(
    {
        "builtins.object",
        "abc.ABC",
        "typing.Generic",
        "typing.Protocol",
        "typing_extensions.Protocol",
    }
)


_EXCEPTION_ATTRS = frozenset({"args", "with_traceback", "add_note"})


_BUILTIN_NAMES = frozenset(dir(builtins))


#: Which file describes a module when several have its name (see ``modules``).
_KIND_RANK = MappingProxyType({"stub": 4, "cython": 3, "source": 2, "compiled": 1})


def _stub_only(mod: str, name: str) -> _Fail:
    """Unknown: *mod* is only described by a ``pkg-stubs`` package here."""
    return _Fail(
        UNKNOWN,
        "stub-only",
        f"'{mod}' is only described by a stub-only package (no module file); "
        f"'{name}' cannot be verified",
    )


class _ResolverBase:
    """The resolution half of :class:`~pycsamt_lsp.model.package.PackageModel`
    (a base class, so its methods moved here unchanged; the state is set by
    ``PackageModel.__init__``)."""

    package: str
    root: Path | None
    _files: dict[str, ModuleInfo]
    _dirs: set[str]
    _modules: dict[str, ModuleInfo] | None
    _registered: set[str] | None
    _injects: dict[str, str] | None
    _cache: dict[tuple[str, str], _Step]
    _resolve_cache: dict[str, Resolution]

    @property
    def modules(self) -> dict[str, ModuleInfo]:
        """Dotted module name -> the ModuleInfo Python would load.

        Precedence follows the import system: a package directory beats a
        module file beats a namespace directory; within one, a ``.pyi`` stub
        (for names) beats the source a compiled extension is built from
        (``.pyx``, or a ``.py`` compiled by Cython, as lxml ships them) beats
        the opaque extension itself.
        """
        if self._modules is None:
            best: dict[str, tuple[tuple[int, int], ModuleInfo]] = {}
            for info in self._files.values():
                if info.kind == "build":
                    continue
                key = (2 if info.is_package else 1, _KIND_RANK.get(info.kind, 0))
                cur = best.get(info.name)
                if cur is None or key > cur[0]:
                    best[info.name] = (key, info)
            mods = {k: v[1] for k, v in best.items()}
            for d in self._dirs:
                parts = _package_parts(d, self.package)
                if parts is None or not all(p.isidentifier() for p in parts):
                    continue
                dotted = ".".join(parts)
                if dotted not in mods:
                    mods[dotted] = ModuleInfo(
                        name=dotted, rel=d, is_package=True, kind="namespace"
                    )
            self._modules = mods
        return self._modules

    # -- resolution ------------------------------------------------------------------

    def resolve(self, dotted: str, *, module: str | None = None) -> Resolution:
        """Exists / absent / unknown for a dotted name (attribute semantics:
        a module's namespace first, then its submodules).

        ``module``: a prefix of ``dotted`` known to be bound to that module
        (``import a.b.c as x`` binds the module ``a.b.c`` even when package
        ``a.b`` rebinds the name ``c``); the walk starts there.
        """
        key = dotted if module is None else f"{module}|{dotted}"
        hit = self._resolve_cache.get(key)
        if hit is not None:
            return hit
        res = self._resolve(dotted, module)
        self._resolve_cache[key] = res
        return res

    def _outside(self, dotted: str) -> Resolution:
        """A name of another package: never ours to prove absent."""
        return Resolution(
            dotted,
            UNKNOWN,
            reason="outside-package",
            message=f"'{dotted}' is not in package '{self.package}'",
            failed_at=0,
        )

    def _resolve(self, dotted: str, module: str | None = None) -> Resolution:
        parts = dotted.split(".")
        if parts[0] != self.package:
            return self._outside(dotted)
        top = self.modules.get(self.package)
        if top is None:
            return Resolution(
                dotted,
                UNKNOWN,
                reason="empty-model",
                message=f"package '{self.package}' is not modelled",
                failed_at=0,
            )
        start = 1
        ref: _Ref = self._module_ref(self.package)
        if (
            module is not None
            and module in self.modules
            and dotted.startswith(module + ".")
        ):
            ref = self._module_ref(module)
            start = module.count(".") + 1
        for i, part in enumerate(parts[start:], start):
            step = self._attr(ref, part, frozenset())
            if isinstance(step, _Fail):
                return Resolution(
                    dotted,
                    step.status,
                    reason=step.reason,
                    message=step.message,
                    failed_at=i,
                    parent=".".join(parts[:i]),
                )
            ref = step
        return self._found(dotted, ref)

    def resolve_module(self, dotted: str) -> Resolution:
        """For ``import a.b.c`` / ``from a.b.c import x``: every prefix must
        be a module (import-system semantics, not attribute lookup)."""
        parts = dotted.split(".")
        if parts[0] != self.package:
            return self._outside(dotted)
        mods = self.modules
        for i in range(len(parts)):
            name = ".".join(parts[: i + 1])
            if name in mods:
                continue
            if self._is_registered(name):
                return Resolution(
                    dotted,
                    UNKNOWN,
                    kind="module",
                    reason="registered-module",
                    message=f"'{name}' is registered in sys.modules at import time",
                    failed_at=i,
                    parent=".".join(parts[:i]),
                )
            parent = ".".join(parts[:i])
            pinfo = mods.get(parent)
            if (
                pinfo is not None
                and in_stubs_package(pinfo.rel, self.package)
                and self._runtime_beside_stub(pinfo) is None
            ):
                step = _stub_only(parent, parts[i])
                return Resolution(
                    dotted,
                    UNKNOWN,
                    kind="module",
                    reason=step.reason,
                    message=step.message,
                    failed_at=i,
                    parent=parent,
                )
            if pinfo is not None and pinfo.kind == "compiled":
                return Resolution(
                    dotted,
                    UNKNOWN,
                    reason="compiled",
                    message=f"'{parent}' is a compiled extension module",
                    failed_at=i,
                    parent=parent,
                )
            if pinfo is not None and self._headers_only(parent):
                return Resolution(
                    dotted,
                    UNKNOWN,
                    kind="module",
                    reason="build-generated",
                    message=(
                        f"'{parent}' ships C headers only; its build may add '{name}'"
                    ),
                    failed_at=i,
                    parent=parent,
                )
            if pinfo is not None and not pinfo.is_package:
                msg = f"No module named '{name}'; '{parent}' is not a package"
            else:
                msg = f"No module named '{name}'"
            return Resolution(
                dotted,
                ABSENT,
                reason="no-such-module",
                message=msg,
                failed_at=i,
                parent=parent,
            )
        return self._found(dotted, self._module_ref(dotted))

    def resolve_from(self, module: str, name: str) -> Resolution:
        """``from module import name``: the module by import semantics, then
        the name in its namespace or as a submodule."""
        mres = self.resolve_module(module)
        if not mres.exists:
            return mres
        dotted = f"{module}.{name}"
        step = self._attr(self._module_ref(module), name, frozenset())
        if isinstance(step, _Fail):
            return Resolution(
                dotted,
                step.status,
                reason=step.reason,
                message=step.message,
                failed_at=len(module.split(".")),
                parent=module,
            )
        return self._found(dotted, step)

    def _headers_only(self, package: str) -> bool:
        """A package of C headers / ``.pxd`` and no module but its
        ``__init__`` (lxml's ``includes``) in an unbuilt tree: builds add
        header subpackages. Once built (the package holds an extension
        module: an installed wheel, an in-place build) the folders are all
        there and the package is closed like any other."""
        has_headers = False
        prefix = package + "."
        for info in self._files.values():
            if info.kind == "build" and info.name == package:
                has_headers = has_headers or info.rel.endswith((".h", ".pxd"))
            elif info.name.startswith(prefix):
                return False
        return has_headers and not self._built()

    def _built(self) -> bool:
        """True when an extension module (``.so`` / ``.pyd``) is present."""
        return any(
            info.kind == "compiled" and info.rel.endswith((".so", ".pyd"))
            for info in self._files.values()
        )

    def _registered_modules(self) -> set[str]:
        if self._registered is None:
            self._registered = {
                m for info in self._files.values() for m in info.registered_modules
            }
        return self._registered

    def _is_registered(self, name: str) -> bool:
        """True when *name* is put in ``sys.modules`` at import time: a
        literal key, or a key with a literal prefix (``"p.vendored.*"``, from
        ``sys.modules[f"p.vendored.{mod}"] = ...``)."""
        reg = self._registered_modules()
        if name in reg:
            return True
        return any(
            r.endswith("*") and name.startswith(r[:-1]) and len(name) >= len(r)
            for r in reg
        )

    def _found(self, dotted: str, ref: _Ref) -> Resolution:
        path, line = self._location(ref)
        return Resolution(
            dotted,
            EXISTS,
            kind=ref.kind,
            target=ref.dotted,
            path=path,
            line=line,
            conditional=ref.conditional,
            module=ref.module,
        )

    def _location(self, ref: _Ref) -> tuple[str | None, int | None]:
        if ref.module is None:
            return None, None
        info = self.modules.get(ref.module)
        if info is None:
            return None, None
        if ref.kind in ("package", "module", "namespace"):
            return info.rel, 1
        if not ref.qual:
            return info.rel, None
        b = info.bindings.get(ref.qual[0])
        if len(ref.qual) == 1:
            return info.rel, b.line if b else None
        ci = info.classes.get(ref.qual[0])
        for q in ref.qual[1:-1]:
            ci = ci.classes.get(q) if ci else None
        last = ref.qual[-1]
        if ci is None:
            return info.rel, None
        if last in ci.methods:
            return info.rel, ci.methods[last].line
        if last in ci.classes:
            return info.rel, ci.classes[last].line
        return info.rel, ci.attributes.get(last) or ci.instance_attributes.get(last)

    def _module_ref(self, dotted: str) -> _Ref:
        info = self.modules[dotted]
        kind = (
            "namespace"
            if info.kind == "namespace"
            else ("package" if info.is_package else "module")
        )
        return _Ref(kind, dotted, dotted)

    def _attr(self, ref: _Ref, name: str, seen: frozenset[Any]) -> _Step:
        if ref.kind in ("package", "module", "namespace"):
            if seen:
                # Results computed inside a chain depend on the chain (cycle
                # detection), so only top-level lookups are cached.
                return self._module_attr(ref.dotted, name, seen)
            key = (ref.dotted, name)
            hit = self._cache.get(key)
            if hit is None:
                hit = self._module_attr(ref.dotted, name, seen)
                self._cache[key] = hit
            return hit
        if ref.kind == "class":
            return self._class_attr(ref, name, seen)
        if ref.kind == "external":
            return _Fail(
                UNKNOWN,
                "external",
                f"'{ref.dotted}' is outside the package; '{name}' was not checked",
            )
        return _Fail(
            UNKNOWN,
            "value",
            f"attributes of {ref.kind} '{ref.dotted}' are not modelled",
        )

    def _module_attr(self, mod: str, name: str, seen: frozenset[Any]) -> _Step:
        info = self.modules.get(mod)
        if info is None:  # pragma: no cover - callers pass known modules
            return _Fail(ABSENT, "no-such-module", f"No module named '{mod}'")
        if (mod, name) in seen or len(seen) > 64:
            return _Fail(UNKNOWN, "cycle", f"re-export cycle through '{mod}.{name}'")
        seen = seen | {(mod, name)}
        step = self._info_attr(info, mod, name, seen)
        if isinstance(step, _Fail) and in_stubs_package(info.rel, self.package):
            # A ``pkg-stubs`` stub is a third party's description of the
            # module, and such stubs leave out what is not public API (the
            # modules it imports, version strings...): what the module's own
            # files bind is real all the same, and without them the stub
            # cannot prove a name absent.
            runtime = self._runtime_beside_stub(info)
            if runtime is None:
                return step if step.status == UNKNOWN else _stub_only(mod, name)
            got = self._info_attr(runtime, mod, name, seen)
            return got if isinstance(got, _Ref) or step.status == ABSENT else step
        return step

    def _runtime_beside_stub(self, info: ModuleInfo) -> ModuleInfo | None:
        """The module Python loads when *info* comes from ``pkg-stubs/``
        (best by the ``modules`` ranking among the package's own files)."""
        if not in_stubs_package(info.rel, self.package):
            return None
        best: tuple[tuple[int, int], ModuleInfo] | None = None
        for other in self._files.values():
            if (
                other.name != info.name
                or other.kind == "build"
                or in_stubs_package(other.rel, self.package)
            ):
                continue
            key = (2 if other.is_package else 1, _KIND_RANK.get(other.kind, 0))
            if best is None or key > best[0]:
                best = (key, other)
        return None if best is None else best[1]

    def _info_attr(
        self, info: ModuleInfo, mod: str, name: str, seen: frozenset[Any]
    ) -> _Step:
        """``mod.name`` in the namespace of *info* (a file of module ``mod``)."""
        if info.kind == "compiled":
            if f"{mod}.{name}" in self.modules:
                return self._module_ref(f"{mod}.{name}")
            return _Fail(UNKNOWN, "compiled", f"'{mod}' is a compiled extension module")
        b = info.bindings.get(name) if info.known else None
        sub = f"{mod}.{name}"
        if b is not None and b.kind in ("variable", "global") and sub in self.modules:
            # ``globals()[name] = import_module(...)`` and friends: a plain
            # variable named like an existing submodule is that submodule
            # (importing the submodule rebinds the name anyway).
            return self._module_ref(sub)
        if b is not None and b.kind != "lazy":
            return self._binding(info, b, seen)
        if name.startswith("__") and name.endswith("__"):
            return _Ref("attribute", f"{mod}.{name}", mod, (name,))
        if sub in self.modules:
            return self._module_ref(sub)
        if not info.known:
            reason = "parse-error" if info.parse_error else "compiled"
            return _Fail(
                UNKNOWN, reason, f"'{mod}' could not be read ({info.parse_error})"
            )
        uncertain: _Fail | None = None
        for star in info.star_imports:
            step = self._star(star, name, seen)
            if isinstance(step, _Ref):
                return step
            if step is not None:
                uncertain = uncertain or step
        ga = info.getattr
        if ga is not None:
            if ga["mode"] == "closed":
                if name in ga["admitted"]:
                    return self._binding(
                        info,
                        b or Binding(name, ga["line"], "lazy", conditional=True),
                        seen,
                    )
                if name in ga["removed"]:
                    return _Fail(ABSENT, "removed", ga["removed"][name])
            else:
                uncertain = uncertain or _Fail(
                    UNKNOWN,
                    "open-namespace",
                    f"'{mod}' defines __getattr__ ({ga['reason']}); '{name}' cannot be verified",
                )
        if info.open_reason:
            uncertain = uncertain or _Fail(
                UNKNOWN,
                "open-namespace",
                f"'{mod}' {info.open_reason}; '{name}' cannot be verified",
            )
        if mod == self.package and info.kind == "namespace":
            uncertain = uncertain or _Fail(
                UNKNOWN,
                "open-namespace",
                f"'{mod}' is a namespace package that other distributions may extend",
            )
        if uncertain is not None:
            return uncertain
        if self._is_registered(sub):
            return _Fail(
                UNKNOWN,
                "registered-module",
                f"'{sub}' is registered at import time or declared by the build",
            )
        injector = self._injected().get(name)
        if injector is not None:
            return _Fail(
                UNKNOWN,
                "injected",
                f"'{name}' may be set on '{mod}' at run time by setattr() in {injector}",
            )
        return _Fail(
            ABSENT, "no-such-name", f"'{mod}' has no attribute or submodule '{name}'"
        )

    def _injected(self) -> dict[str, str]:
        """Name -> a module that ``setattr``s it (``ModuleInfo.injects``)."""
        if self._injects is None:
            out: dict[str, str] = {}
            for info in self._files.values():
                for n in info.injects:
                    out.setdefault(n, info.name)
            self._injects = out
        return self._injects

    def _binding(self, info: ModuleInfo, b: Binding, seen: frozenset[Any]) -> _Step:
        mod = info.name
        if b.kind == "class":
            return _Ref("class", f"{mod}.{b.name}", mod, (b.name,), b.conditional)
        if b.kind == "function":
            return _Ref("function", f"{mod}.{b.name}", mod, (b.name,), b.conditional)
        if b.kind in ("variable", "global"):
            return _Ref("variable", f"{mod}.{b.name}", mod, (b.name,), b.conditional)
        target = b.target
        if target is None:
            if b.kind == "lazy":
                return _Ref("lazy", f"{mod}.{b.name}", mod, (b.name,), True)
            return _Fail(
                UNKNOWN,
                "broken-reexport",
                f"'{mod}.{b.name}' is imported from outside the top-level package",
            )
        if not self._inside(target):
            return _Ref("external", target, None, (), b.conditional)
        if b.kind == "module" or (b.kind == "lazy" and b.attr is None):
            if target in self.modules:
                step: _Step = self._module_ref(target)
            else:
                res = self.resolve_module(target)
                step = _Fail(
                    res.status, res.reason or "no-such-module", res.message or ""
                )
        elif b.module in self.modules:
            assert b.attr is not None
            sub = f"{b.module}.{b.attr}"
            if b.module == mod and sub in self.modules:
                # ``from . import sub`` in a package's __init__: getattr fails
                # while the package initialises, so the import system loads
                # the submodule.
                return self._module_ref(sub)
            step = self._attr(self._module_ref(b.module), b.attr, seen)
            if (
                isinstance(step, _Fail)
                and step.reason == "cycle"
                and sub in self.modules
            ):
                return self._module_ref(sub)
        else:
            res = self.resolve_module(b.module or "")
            step = _Fail(res.status, res.reason or "no-such-module", res.message or "")
        if isinstance(step, _Fail):
            if step.status == ABSENT and b.kind == "lazy":
                # The name exists only through its lazy target.
                return _Fail(
                    ABSENT,
                    "broken-lazy",
                    f"'{mod}.{b.name}' is loaded lazily from '{target}', which does not exist ({step.message})",
                )
            if step.status == ABSENT:
                return _Fail(
                    UNKNOWN,
                    "broken-reexport",
                    f"'{mod}.{b.name}' re-exports '{target}', which was not found ({step.message})",
                )
            return step
        if b.conditional and not step.conditional:
            return _Ref(step.kind, step.dotted, step.module, step.qual, True)
        return step

    def _walk(
        self, dotted: str, seen: frozenset[Any], module: str | None = None
    ) -> _Step:
        """Attribute walk from the top package (or from ``module``, a prefix
        of ``dotted`` known to be that module)."""
        parts = dotted.split(".")
        if parts[0] != self.package or self.package not in self.modules:
            return _Fail(
                UNKNOWN, "outside-package", f"'{dotted}' is outside the package"
            )
        ref: _Step = self._module_ref(self.package)
        start = 1
        if (
            module is not None
            and module in self.modules
            and (dotted == module or dotted.startswith(module + "."))
        ):
            ref = self._module_ref(module)
            start = module.count(".") + 1
        for part in parts[start:]:
            ref = self._attr(ref, part, seen)  # type: ignore[arg-type]
            if isinstance(ref, _Fail):
                return ref
        return ref

    def _inside(self, dotted: str) -> bool:
        return dotted == self.package or dotted.startswith(self.package + ".")

    def _star(self, star: str, name: str, seen: frozenset[Any]) -> _Step | None:
        """What ``from star import *`` contributes for ``name`` (None: nothing)."""
        if not self._inside(star):
            return _Fail(
                UNKNOWN,
                "open-namespace",
                f"star import from external '{star}' may provide '{name}'",
            )
        sinfo = self.modules.get(star)
        if sinfo is None:
            return None
        if not sinfo.known:
            return _Fail(
                UNKNOWN,
                "open-namespace",
                f"star import from unreadable '{star}' may provide '{name}'",
            )
        if sinfo.all is not None and not sinfo.all_dynamic:
            if name not in sinfo.all:
                return None
        elif name.startswith("_"):
            return None
        step = self._attr(self._module_ref(star), name, seen)
        if isinstance(step, _Fail) and step.status == ABSENT:
            # Not in the star-imported module at all (with a dynamic
            # __all__ it may still be unexported, never invented).
            return None
        return step

    # -- classes -----------------------------------------------------------------------

    def class_info(self, ref_or_dotted: _Ref | str) -> ClassInfo | None:
        """The ClassInfo of a class ref or a dotted name that resolves to one."""
        if isinstance(ref_or_dotted, str):
            step = self._walk(ref_or_dotted, frozenset())
            if not isinstance(step, _Ref) or step.kind != "class":
                return None
            ref = step
        else:
            ref = ref_or_dotted
        info = self.modules.get(ref.module or "")
        if info is None or not ref.qual:
            return None
        ci = info.classes.get(ref.qual[0])
        for q in ref.qual[1:]:
            ci = ci.classes.get(q) if ci else None
        return ci

    def _base_refs(
        self, ref: _Ref, ci: ClassInfo, seen: frozenset[Any]
    ) -> list[_Step | str]:
        """Each base as a class ref, an external/builtin dotted string, or a
        failure. Base names are looked up in the defining module."""
        out: list[_Step | str] = []
        mod = ref.module or ""
        info = self.modules.get(mod)
        for base in ci.bases:
            if base is None:
                out.append(
                    _Fail(
                        UNKNOWN,
                        "unknown-base",
                        f"'{ref.dotted}' has a computed base class",
                    )
                )
                continue
            root = base.split(".")[0]
            if info is not None and root in info.bindings:
                step = self._walk(f"{mod}.{base}", seen)
                if isinstance(step, _Ref) and step.kind == "external":
                    out.append(step.dotted)
                else:
                    out.append(step)
            elif root in _BUILTIN_NAMES:
                out.append(f"builtins.{base}")
            else:
                out.append(
                    _Fail(
                        UNKNOWN,
                        "unknown-base",
                        f"base '{base}' of '{ref.dotted}' is not resolvable",
                    )
                )
        if not ci.bases:
            out.append("builtins.object")
        return out

    def _class_attr(self, ref: _Ref, name: str, seen: frozenset[Any]) -> _Step:
        if (ref.dotted, name, "cls") in seen or len(seen) > 64:
            return _Fail(UNKNOWN, "cycle", f"class hierarchy cycle at '{ref.dotted}'")
        seen = seen | {(ref.dotted, name, "cls")}
        ci = self.class_info(ref)
        if ci is None:
            return _Fail(UNKNOWN, "value", f"class '{ref.dotted}' is not modelled")
        member = f"{ref.dotted}.{name}"
        if name in ci.methods:
            return _Ref("method", member, ref.module, (*ref.qual, name))
        if name in ci.classes:
            return _Ref("class", member, ref.module, (*ref.qual, name))
        if name in ci.attributes or name in ci.instance_attributes:
            return _Ref("attribute", member, ref.module, (*ref.qual, name))
        if name.startswith("__") and name.endswith("__"):
            return _Fail(UNKNOWN, "dunder", f"'{name}' may be inherited from object")
        uncertain: _Fail | None = None
        if ci.dynamic:
            uncertain = _Fail(
                UNKNOWN,
                "dynamic-class",
                f"'{ref.dotted}' {ci.dynamic}; '{name}' cannot be verified",
            )
        for base in self._base_refs(ref, ci, seen):
            if isinstance(base, str):
                if base in _EMPTY_BASES:
                    continue
                if base.startswith("builtins.") and base.endswith(
                    ("Error", "Exception", "Warning")
                ):
                    if name in _EXCEPTION_ATTRS:
                        return _Ref("attribute", member, None)
                    continue
                uncertain = uncertain or _Fail(
                    UNKNOWN,
                    "unknown-base",
                    f"'{ref.dotted}' inherits from '{base}'; '{name}' cannot be verified",
                )
                continue
            if isinstance(base, _Fail):
                uncertain = uncertain or _Fail(UNKNOWN, "unknown-base", base.message)
                continue
            if base.kind != "class":
                uncertain = uncertain or _Fail(
                    UNKNOWN,
                    "unknown-base",
                    f"base '{base.dotted}' of '{ref.dotted}' is not a modelled class",
                )
                continue
            step = self._class_attr(base, name, seen)
            if isinstance(step, _Ref):
                return step
            if step.status == UNKNOWN:
                uncertain = uncertain or step
        if uncertain is not None:
            return uncertain
        return _Fail(
            ABSENT, "no-such-name", f"'{ref.dotted}' has no attribute '{name}'"
        )

    def _constructor(
        self, ref: _Ref, seen: frozenset[str] = frozenset()
    ) -> tuple[list[dict[str, Any]] | None, str | None, bool]:
        """(params without self, reason when unknown, trusted) for a class call."""
        if ref.dotted in seen or len(seen) > 32:
            return None, "class hierarchy cycle", True
        seen = seen | {ref.dotted}
        ci = self.class_info(ref)
        if ci is None:
            return None, "class not modelled", True
        if ci.metaclass and ci.metaclass not in _NEUTRAL_METACLASSES:
            return None, f"uses metaclass {ci.metaclass}", True
        odd = [d for d in ci.decorators if d not in _NEUTRAL_CLASS_DECORATORS]
        trusted = not odd
        for special in ("__init__", "__new__"):
            fn = ci.methods.get(special)
            if fn is not None:
                return fn.params[1:], None, trusted and fn.trusted
        own_fields = ci.fields if ci.is_dataclass and ci.dataclass_init else None
        inherited: list[dict[str, Any]] = []
        for base in self._base_refs(ref, ci, frozenset()):
            if isinstance(base, str):
                if base in _EMPTY_BASES:
                    continue
                if base.startswith("builtins.") and base.endswith(
                    ("Error", "Exception", "Warning")
                ):
                    return (
                        [
                            {
                                "name": "args",
                                "kind": "var_positional",
                                "default": None,
                                "annotation": None,
                            }
                        ],
                        None,
                        trusted,
                    )
                return None, f"inherits its constructor from '{base}'", trusted
            if isinstance(base, _Fail) or base.kind != "class":
                return None, "a base class is not modelled", trusted
            params, why, t = self._constructor(base, seen)
            if params is None:
                return None, why, trusted
            if own_fields is None:
                return params, None, trusted and t
            bci = self.class_info(base)
            if bci is not None and not bci.is_dataclass:
                return None, "dataclass with a non-dataclass base", trusted
            inherited = params
            break
        if own_fields is not None:
            merged = {p["name"]: p for p in inherited}
            for p in own_fields:
                merged[p["name"]] = p
            return list(merged.values()), None, trusted
        return [], None, trusted
