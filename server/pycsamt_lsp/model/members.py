"""What completion and hover need: signatures, docstrings and members.

The editor-facing queries of
:class:`~pycsamt_lsp.model.package.PackageModel`, answered on top of
resolution (:mod:`pycsamt_lsp.model.resolve`): a call's parameters (following
constructors and trusted decorators), a symbol's signature and docstring, a
namespace's members, and every public dotted symbol of the package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pycsamt_lsp.model.extract import ModuleInfo
from pycsamt_lsp.model.facts import FunctionInfo, _Ref
from pycsamt_lsp.model.resolve import _ResolverBase


class _MembersBase(_ResolverBase):
    """The editor queries of :class:`~pycsamt_lsp.model.package.PackageModel`
    (a base class, so its methods moved here unchanged)."""

    _call_cache: dict[tuple[Any, ...], dict[str, Any] | None]

    # -- queries for the editor ---------------------------------------------------------

    def call_signature(
        self, dotted: str, *, bound: bool = False, module: str | None = None
    ) -> dict[str, Any] | None:
        """What a call to ``dotted`` accepts, for keyword checks.

        Returns None when ``dotted`` is not a modelled callable, else
        ``{"params", "var_keyword", "trusted", "reason"}``: ``params`` is
        None when the signature cannot be known (``reason`` says why);
        ``trusted`` is False when a decorator may have changed it. ``bound``
        drops ``self`` of a method reached through an instance.
        """
        key = (dotted, bound, module)
        if key not in self._call_cache:
            self._call_cache[key] = self._call_signature(dotted, bound, module)
        return self._call_cache[key]

    def _call_signature(
        self, dotted: str, bound: bool, module: str | None
    ) -> dict[str, Any] | None:
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref):
            return None
        params: list[dict[str, Any]] | None
        reason = None
        trusted = True
        if step.kind == "class":
            params, reason, trusted = self._constructor(step)
        elif step.kind == "function":
            fn = (
                self.modules[step.module or ""].functions.get(step.qual[0])
                if step.module
                else None
            )
            if fn is None:
                return None
            params, trusted = fn.params, fn.trusted
        elif step.kind == "method":
            ci = self.class_info(_Ref("class", "", step.module, step.qual[:-1]))
            fn = ci.methods.get(step.qual[-1]) if ci else None
            if fn is None:
                return None
            params, trusted = fn.params, fn.trusted
            if fn.method_kind == "classmethod" or (
                bound and fn.method_kind == "function"
            ):
                params = params[1:]
        else:
            return None
        return {
            "params": params,
            "var_keyword": bool(params)
            and any(p["kind"] == "var_keyword" for p in params or ()),
            "trusted": trusted,
            "reason": reason,
        }

    def signature(
        self, dotted: str, *, module: str | None = None
    ) -> dict[str, Any] | None:
        """Hover data: ``{dotted, kind, params, returns, doc, path, line,
        end_line, decorators}`` for a function, method or class; None otherwise."""
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref) or step.module is None:
            return None
        info = self.modules[step.module]
        if step.kind == "function":
            fn = info.functions.get(step.qual[0])
            if fn is None:
                return None
            return self._sig_dict(step, info, fn)
        if step.kind == "method":
            ci = self.class_info(_Ref("class", "", step.module, step.qual[:-1]))
            fn = ci.methods.get(step.qual[-1]) if ci else None
            return self._sig_dict(step, info, fn) if fn else None
        if step.kind == "class":
            ci = self.class_info(step)
            if ci is None:
                return None
            params, _, _ = self._constructor(step)
            return {
                "dotted": step.dotted,
                "kind": "class",
                "params": params,
                "returns": None,
                "doc": ci.doc,
                "path": info.rel,
                "line": ci.line,
                "end_line": ci.end_line,
                "decorators": ci.decorators,
                "bases": ci.bases,
            }
        return None

    @staticmethod
    def _sig_dict(step: _Ref, info: ModuleInfo, fn: FunctionInfo) -> dict[str, Any]:
        return {
            "dotted": step.dotted,
            "kind": step.kind,
            "params": fn.params,
            "returns": fn.returns,
            "doc": fn.doc,
            "path": info.rel,
            "line": fn.line,
            "end_line": fn.end_line,
            "decorators": fn.decorators,
            "is_async": fn.is_async,
        }

    def doc(self, dotted: str, *, module: str | None = None) -> str | None:
        """The docstring of what ``dotted`` resolves to (module, class,
        function or method), if any."""
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref) or step.module is None:
            return None
        info = self.modules.get(step.module)
        if info is None:
            return None
        if step.kind in ("package", "module", "namespace"):
            return info.doc
        if step.kind == "function":
            fn = info.functions.get(step.qual[0])
            return fn.doc if fn else None
        if step.kind == "class":
            ci = self.class_info(step)
            return ci.doc if ci else None
        if step.kind == "method":
            ci = self.class_info(_Ref("class", "", step.module, step.qual[:-1]))
            fn = ci.methods.get(step.qual[-1]) if ci else None
            return fn.doc if fn else None
        return None

    def members(
        self, dotted: str, *, module: str | None = None
    ) -> list[tuple[str, str]]:
        """``(name, kind)`` of a module's or class's members, public first.

        A dotted name that is a module path lists that module (what
        ``import a.b.c as x; x.`` completes), even if its package rebinds
        the name."""
        if module is None and dotted in self.modules:
            module = dotted
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref):
            return []
        names: dict[str, str] = {}
        if step.kind in ("package", "module", "namespace"):
            info = self.modules[step.dotted]
            prefix = step.dotted + "."
            for m in self.modules:
                if m.startswith(prefix) and "." not in m[len(prefix) :]:
                    names[m[len(prefix) :]] = "module"
            candidates = set(info.bindings) | set(info.all or ())
            for star in info.star_imports:
                sinfo = self.modules.get(star)
                if sinfo is not None:
                    candidates |= set(sinfo.all or sinfo.public_names())
            for n in candidates:
                if n in names or (n.startswith("__") and n.endswith("__")):
                    continue
                r = self._attr(step, n, frozenset())
                if isinstance(r, _Ref):
                    if r.kind == "external" and n not in (info.all or ()):
                        continue
                    names[n] = r.kind
        elif step.kind == "class":
            seen: set[str] = set()
            stack = [step]
            while stack:
                cref = stack.pop(0)
                if cref.dotted in seen:
                    continue
                seen.add(cref.dotted)
                ci = self.class_info(cref)
                if ci is None:
                    continue
                for n, fn in ci.methods.items():
                    names.setdefault(
                        n, "property" if fn.method_kind == "property" else "method"
                    )
                for n in ci.classes:
                    names.setdefault(n, "class")
                for n in (*ci.attributes, *ci.instance_attributes):
                    names.setdefault(n, "attribute")
                for b in self._base_refs(cref, ci, frozenset()):
                    if isinstance(b, _Ref) and b.kind == "class":
                        stack.append(b)
        return sorted(
            names.items(), key=lambda kv: (kv[0].startswith("_"), kv[0].lower())
        )

    def all_symbols(
        self,
        include_private: bool = False,
        skip: Callable[[str], bool] | None = None,
        names_of: Callable[[str], bool] | None = None,
    ) -> Iterator[str]:
        """Dotted names of every module and module-level definition or
        in-package re-export (public ones unless ``include_private``);
        ``skip(module)`` True leaves a module and its names out unread (a
        deferred module is then not parsed: ``model.deferred``);
        ``names_of(module)`` False yields the module but not its names
        (unread too: the module's name comes from its path)."""
        for mod in sorted(self.modules):
            if not include_private and any(p.startswith("_") for p in mod.split(".")):
                continue
            if skip is not None and skip(mod):
                continue
            yield mod
            if names_of is None or names_of(mod):
                yield from self.module_symbols(mod, include_private)

    def module_symbols(self, mod: str, include_private: bool = False) -> Iterator[str]:
        """The names :meth:`all_symbols` yields after the module *mod*
        (reads its bindings: a deferred module is parsed)."""
        info = self.modules[mod]
        for n, b in info.bindings.items():
            if n.startswith("_") and not include_private:
                continue
            if b.kind in ("import", "module") and not (
                b.target and self._inside(b.target)
            ):
                continue
            yield f"{mod}.{n}"
