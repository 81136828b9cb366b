"""Extraction: one module's source (or parsed tree) -> its :class:`ModuleInfo`.

One pass over the module-level statements (plus targeted walks for
``global``/``globals()`` writes, ``setattr`` injections and
``lazy_loader.attach``), then the PEP 562 analysis of a module
``__getattr__`` (:mod:`pycsamt_lsp.model.pep562`). Cython ``.pyx`` files go
through :mod:`pycsamt_lsp.model.cython` first; ``meson.build`` files only
register extension modules. The extractor never looks at another module:
cross-module steps happen at query time (:mod:`pycsamt_lsp.model.resolve`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pycsamt_lsp.corpus.safety import MODEL_MAX_BYTES, read_regular
from pycsamt_lsp.index.heap import paused_gc
from pycsamt_lsp.model.dynamic import _DynamicScans, _is_globals_call, _is_locals_call
from pycsamt_lsp.model.facts import (
    _DATACLASS_DECORATORS,
    _NEUTRAL_CLASS_DECORATORS,
    _NEUTRAL_METACLASSES,
    Binding,
    ClassInfo,
    FunctionInfo,
    _dotted,
    _literal,
    _params,
    _resolve_relative,
    _Src,
    _text,
    module_name_for,
)
from pycsamt_lsp.model.pep562 import _GetattrAnalyzer
from pycsamt_lsp.pyast.docstrings import docstring, known_clean
from pycsamt_lsp.text.secrets import mask, mask_params


def _block_fields(cls: type) -> tuple[tuple[str, ...], bool, bool]:
    """``(statement-list fields, has handlers, has cases)`` of a statement type."""
    fields = cls._fields  # type: ignore[attr-defined]
    blocks = tuple(n for n in ("body", "orelse", "finalbody") if n in fields)
    return blocks, "handlers" in fields, "cases" in fields


def _stmt_types(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _stmt_types(sub)


#: Per statement type, where its nested statements are: most statements have
#: none, and five ``getattr`` per statement were most of this walk.
_BLOCKS = MappingProxyType({cls: _block_fields(cls) for cls in _stmt_types(ast.stmt)})


def _iter_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested blocks included (no expressions)."""
    stack = list(reversed(body))
    blocks_of = _BLOCKS.get
    while stack:
        st = stack.pop()
        yield st
        spec = blocks_of(type(st))
        if spec is not None:
            blocks, handlers, cases = spec
            if not blocks and not handlers and not cases:
                continue
        nested: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            nested.extend(getattr(st, name, ()) or ())
        for h in getattr(st, "handlers", ()) or ():
            nested.extend(h.body)
        for c in getattr(st, "cases", ()) or ():
            nested.extend(c.body)
        stack.extend(reversed(nested))


def _str_members(value: Any) -> list[str] | None:
    """The string members of a literal collection (dict keys), or None."""
    if isinstance(value, dict):
        items = list(value.keys())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        return None
    if not all(isinstance(v, str) for v in items):
        return None
    return items


def _doc(node: ast.AST) -> str | None:
    """The docstring as hover and completion show it: credential values
    masked (a docstring example with a real key; issue 19)."""
    doc = docstring(node)  # the chunker's, when it chunked this tree
    # a docstring the chunker's masking found clean needs no second scan
    return mask(doc) if doc and not known_clean(node) else doc


@dataclass(slots=True)
class ModuleInfo:
    """Facts about one module file, extracted from one parsed ``ast.Module``.

    ``kind`` is ``source``, ``stub``, ``compiled`` (opaque: every name is
    unknown) or ``namespace`` (a directory without ``__init__``: only its
    submodules exist). ``parse_error`` set means the module exists but its
    namespace is unknown. ``open_reason`` set means the namespace can gain
    names the model cannot see (``globals()`` writes, ``exec``...).
    """

    name: str
    rel: str
    is_package: bool = False
    kind: str = "source"
    doc: str | None = None
    bindings: dict[str, Binding] = field(default_factory=dict)
    all: list[str] | None = None
    all_dynamic: bool = False
    star_imports: list[str] = field(default_factory=list)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    getattr: dict[str, Any] | None = None
    open_reason: str | None = None
    parse_error: str | None = None
    registered_modules: list[str] = field(default_factory=list)
    #: Literal names this module's code sets with ``setattr(obj, "name", v)``
    #: on objects that are not its own classes or ``self``/``cls``: another
    #: module may be the target (scikit-image's plugin manager injects
    #: ``imread_collection`` into plugin modules), so the model never calls
    #: such a name absent anywhere in the package.
    injects: list[str] = field(default_factory=list)

    # -- constructors -------------------------------------------------------

    @classmethod
    def from_tree(
        cls,
        tree: ast.Module,
        *,
        name: str,
        rel: str,
        is_package: bool = False,
        kind: str = "source",
        source: bytes | str | None = None,
    ) -> ModuleInfo:
        """Extract the module's facts from an already-parsed tree.

        ``source`` (the bytes or text the tree was parsed from) is optional:
        with it, defaults and annotations are sliced from the text instead of
        unparsed, and whole-tree walks for ``global``/``globals()`` are
        skipped when the text does not mention them.
        """
        return _ModuleExtractor(tree, name, rel, is_package, kind, source).run()

    @classmethod
    def from_source(
        cls,
        data: bytes | str,
        *,
        name: str,
        rel: str,
        is_package: bool = False,
        kind: str = "source",
    ) -> ModuleInfo:
        """Parse and extract; a parse failure gives a module whose namespace
        is unknown (never raises). The cyclic GC is paused for the file
        (``heap.paused_gc``).
        """
        with paused_gc():
            try:
                tree = ast.parse(data, filename=rel, type_comments=False)
            except (SyntaxError, ValueError) as exc:
                return cls(
                    name=name,
                    rel=rel,
                    is_package=is_package,
                    kind=kind,
                    parse_error=str(exc),
                )
            except RecursionError:  # pragma: no cover - pathological nesting
                return cls(
                    name=name,
                    rel=rel,
                    is_package=is_package,
                    kind=kind,
                    parse_error="too deeply nested",
                )
            return cls.from_tree(
                tree, name=name, rel=rel, is_package=is_package, kind=kind, source=data
            )

    # -- queries --------------------------------------------------------------

    @property
    def known(self) -> bool:
        """True when the namespace was read (not compiled, parsed fine)."""
        return self.kind != "compiled" and self.parse_error is None

    def binds(self, name: str) -> bool:
        """``name in self.bindings`` (a deferred module answers most of
        these without a parse: ``model.deferred``)."""
        return name in self.bindings

    def may_bind(self, name: str) -> bool:
        """False when :meth:`binds` is False, True when it may be True (a
        deferred module answers from its text, without a parse)."""
        return name in self.bindings

    def public_names(self) -> list[str]:
        """Bound names without a leading underscore (a star import without
        ``__all__`` takes these).
        """
        return [n for n in self.bindings if not n.startswith("_")]

    # -- persistence ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON form saved in ``package_model.json``."""
        return {
            "name": self.name,
            "rel": self.rel,
            "is_package": self.is_package,
            "kind": self.kind,
            "doc": self.doc,
            "bindings": {k: b.to_list() for k, b in self.bindings.items()},
            "all": self.all,
            "all_dynamic": self.all_dynamic,
            "star_imports": self.star_imports,
            "functions": {k: f.to_dict() for k, f in self.functions.items()},
            "classes": {k: c.to_dict() for k, c in self.classes.items()},
            "getattr": self.getattr,
            "open_reason": self.open_reason,
            "parse_error": self.parse_error,
            "registered_modules": self.registered_modules,
            "injects": self.injects,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModuleInfo:
        """The inverse of :meth:`to_dict`."""
        d = dict(d)
        d["bindings"] = {k: Binding.from_list(k, v) for k, v in d["bindings"].items()}
        d["functions"] = {
            k: FunctionInfo.from_dict(v) for k, v in d["functions"].items()
        }
        d["classes"] = {k: ClassInfo.from_dict(v) for k, v in d["classes"].items()}
        return cls(**d)


def _key_text(node: ast.AST, module: str) -> tuple[str, bool]:
    """What a ``sys.modules`` key built from literals and ``__name__`` (this
    module's name) is: ``(known start, whole key known)``, for an f-string
    or a ``+`` chain; ``("", False)`` when its start is not known."""
    parts: list[ast.AST] = []

    def flat(n: ast.AST) -> None:
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            flat(n.left)
            flat(n.right)
        elif isinstance(n, ast.JoinedStr):
            for v in n.values:
                plain = isinstance(v, ast.FormattedValue) and (
                    v.conversion == -1 and v.format_spec is None
                )
                parts.append(v.value if plain else v)  # type: ignore[attr-defined]
        else:
            parts.append(n)

    flat(node)
    out = []
    for p in parts:
        if isinstance(p, ast.Constant) and isinstance(p.value, str):
            out.append(p.value)
        elif isinstance(p, ast.Name) and p.id == "__name__":
            out.append(module)
        else:
            return "".join(out), False
    return "".join(out), True


class _ModuleExtractor(_DynamicScans):
    """One pass over the module-level statements (plus targeted walks)."""

    def __init__(
        self,
        tree: ast.Module,
        name: str,
        rel: str,
        is_package: bool,
        kind: str,
        source: bytes | str | None,
        heads_only: bool = False,
    ) -> None:
        #: only what a module binds and exports (:func:`module_head`): defs
        #: and classes are recorded by name, their facts not extracted
        self.heads_only = heads_only
        self.tree = tree
        self.src = _Src(source) if source is not None else None
        self.raw = source
        self.info = ModuleInfo(name=name, rel=rel, is_package=is_package, kind=kind)
        self.literals: dict[str, ast.AST] = {}
        self.getattr_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.handled_globals: set[int] = set()

    # -- driver ---------------------------------------------------------------

    def run(self) -> ModuleInfo:
        info = self.info
        if not self.heads_only:
            info.doc = _doc(self.tree)
        self._stmts(self.tree.body, False, {})
        self._scan_globals()
        self._scan_injects()
        if self.getattr_node is not None:
            info.getattr = _GetattrAnalyzer(self).run(self.getattr_node)
            for n, target in info.getattr.get("admitted", {}).items():
                if n not in info.bindings:
                    mod, attr = target if target else (None, None)
                    info.bindings[n] = Binding(
                        n, self.getattr_node.lineno, "lazy", mod, attr, True
                    )
        return info

    def _normalise(self, node: ast.AST) -> str:
        """Dotted name of a decorator/base with import aliases expanded."""
        if isinstance(node, ast.Call):
            node = node.func
        d = _dotted(node)
        if d is None:
            return _text(node, self.src) or "?"
        root, _, rest = d.partition(".")
        b = self.info.bindings.get(root)
        if b is not None and b.kind in ("import", "module") and b.target:
            return f"{b.target}.{rest}" if rest else b.target
        return d

    # -- statements -------------------------------------------------------------

    def _stmts(
        self, body: list[ast.stmt], cond: bool, loop_env: dict[str, list[str]]
    ) -> None:
        for st in body:
            self._stmt(st, cond, loop_env)

    def _stmt(self, st: ast.stmt, cond: bool, loop_env: dict[str, list[str]]) -> None:
        info = self.info
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._bind(st.name, st.lineno, "function", cond)
            info.functions[st.name] = (
                FunctionInfo(st.name, st.lineno, st.lineno, [])
                if self.heads_only
                else self._function(st)
            )
            info.classes.pop(st.name, None)
            if st.name == "__getattr__":
                self.getattr_node = st
        elif isinstance(st, ast.ClassDef):
            self._bind(st.name, st.lineno, "class", cond)
            info.classes[st.name] = (
                ClassInfo(st.name, st.lineno, st.lineno)
                if self.heads_only
                else self._class(st)
            )
            info.functions.pop(st.name, None)
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                self._target(t, st, cond, loop_env)
            self._assigned_getattr(st)
            if len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                self.literals[st.targets[0].id] = st.value
                if st.targets[0].id == "__all__":
                    self._set_all(st.value, replace=True)
        elif isinstance(st, ast.AnnAssign):
            if isinstance(st.target, ast.Name):
                if st.value is not None or info.kind == "stub":
                    self._bind(st.target.id, st.lineno, "variable", cond)
                if st.value is not None:
                    self.literals[st.target.id] = st.value
                    if st.target.id == "__all__":
                        self._set_all(st.value, replace=True)
            else:
                self._target(st.target, st, cond, loop_env)
        elif isinstance(st, ast.AugAssign):
            if isinstance(st.target, ast.Name):
                if st.target.id == "__all__" and isinstance(st.op, ast.Add):
                    self._set_all(st.value, replace=False)
                elif st.target.id not in info.bindings:
                    self._bind(st.target.id, st.lineno, "variable", cond)
        elif isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    self._bind(a.asname, st.lineno, "module", cond, a.name)
                else:
                    root = a.name.split(".")[0]
                    self._bind(root, st.lineno, "module", cond, root)
        elif isinstance(st, ast.ImportFrom):
            self._import_from(st, cond)
        elif isinstance(st, ast.If):
            self._stmts(st.body, True, loop_env)
            self._stmts(st.orelse, True, loop_env)
        elif isinstance(st, (ast.Try, ast.TryStar)):
            self._stmts(st.body, True, loop_env)
            for h in st.handlers:
                self._stmts(h.body, True, loop_env)
            self._stmts(st.orelse, True, loop_env)
            self._stmts(st.finalbody, True, loop_env)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                if item.optional_vars is not None:
                    self._target(item.optional_vars, st, True, loop_env)
            self._stmts(st.body, True, loop_env)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            env = dict(loop_env)
            self._target(st.target, st, True, loop_env)
            if isinstance(st.target, ast.Name):
                values = self._literal_strings(st.iter)
                if values is not None:
                    env[st.target.id] = values
            self._stmts(st.body, True, env)
            self._stmts(st.orelse, True, loop_env)
        elif isinstance(st, ast.While):
            self._stmts(st.body, True, loop_env)
            self._stmts(st.orelse, True, loop_env)
        elif isinstance(st, ast.Match):
            for case in st.cases:
                self._stmts(case.body, True, loop_env)
        elif isinstance(st, ast.Delete):
            if not cond:
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        info.bindings.pop(t.id, None)
        elif isinstance(st, ast.Expr):
            self._expr_stmt(st.value)

    def _target(
        self, t: ast.AST, st: ast.stmt, cond: bool, loop_env: dict[str, list[str]]
    ) -> None:
        info = self.info
        if isinstance(t, ast.Name):
            self._bind(t.id, st.lineno, "variable", cond)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._target(e, st, cond, loop_env)
        elif isinstance(t, ast.Starred):
            self._target(t.value, st, cond, loop_env)
        elif isinstance(t, ast.Subscript):
            # module level: ``locals()`` is ``globals()`` (requests.packages)
            if _is_globals_call(t.value) or _is_locals_call(t.value):
                self.handled_globals.add(id(t.value))
                keys = self._key_strings(t.slice, loop_env)
                if keys is None:
                    info.open_reason = (
                        info.open_reason or f"writes to globals() at line {st.lineno}"
                    )
                for k in keys or ():
                    self._bind(k, st.lineno, "variable", True)
            elif _dotted(t.value) == "sys.modules":
                keys = self._key_strings(t.slice, loop_env)
                if keys is None:
                    if isinstance(t.slice, ast.Name) and t.slice.id == "__name__":
                        info.open_reason = (
                            f"replaces itself in sys.modules at line {st.lineno}"
                        )
                    else:
                        # ``__name__ + ".moves"`` (six): that module;
                        # ``f"pkg.vendored.{mod}"``: any module under it may
                        # be registered (a trailing ``*`` marks a prefix)
                        known, whole = _key_text(t.slice, info.name)
                        if whole:
                            info.registered_modules.append(known)
                        elif known:
                            info.registered_modules.append(known + "*")
                else:
                    info.registered_modules.extend(keys)
        elif isinstance(t, ast.Attribute):
            root = t.value
            if isinstance(root, ast.Name) and root.id in info.classes:
                info.classes[root.id].attributes.setdefault(t.attr, st.lineno)
            elif (
                isinstance(root, ast.Subscript) and _dotted(root.value) == "sys.modules"
            ):
                info.open_reason = f"patches its sys.modules entry at line {st.lineno}"

    def _key_strings(
        self, node: ast.AST, loop_env: dict[str, list[str]]
    ) -> list[str] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name) and node.id in loop_env:
            return list(loop_env[node.id])
        if isinstance(node, ast.JoinedStr):
            names = [
                v.value.id
                for v in node.values
                if isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
            ]
            if (
                len(names) == 1
                and names[0] in loop_env
                and all(
                    isinstance(v, ast.Constant)
                    or (
                        isinstance(v, ast.FormattedValue)
                        and v.conversion == -1
                        and v.format_spec is None
                    )
                    for v in node.values
                )
            ):
                out = []
                for val in loop_env[names[0]]:
                    out.append(
                        "".join(
                            # an f-string's literal parts are str constants
                            str(v.value) if isinstance(v, ast.Constant) else val
                            for v in node.values
                        )
                    )
                return out
        return None

    def _literal_strings(self, node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Name):
            node = self.literals.get(node.id)  # type: ignore[assignment]
            if node is None:
                return None
        try:
            return _str_members(_literal(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    def _import_from(self, st: ast.ImportFrom, cond: bool) -> None:
        info = self.info
        if st.module == "__future__":
            return
        if st.level:
            mod = _resolve_relative(
                st.module or "", st.level, info.name, info.is_package
            )
        else:
            mod = st.module
        for a in st.names:
            if a.name == "*":
                if mod is None:
                    info.open_reason = (
                        info.open_reason or "star import beyond the top-level package"
                    )
                else:
                    info.star_imports.append(mod)
                continue
            self._bind(a.asname or a.name, st.lineno, "import", cond, mod, a.name)

    def _set_all(self, value: ast.AST, replace: bool) -> None:
        info = self.info
        names = self._all_value(value)
        if names is None:
            info.all_dynamic = True
            return
        if replace or info.all is None:
            info.all = list(names)
        else:
            info.all.extend(n for n in names if n not in info.all)

    def _all_value(self, value: ast.AST) -> list[str] | None:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = self._all_value(value.left), self._all_value(value.right)
            return None if left is None or right is None else left + right
        if isinstance(value, ast.Name) and value.id == "__all__":
            return list(self.info.all or [])
        return self._literal_strings(value)

    def _expr_stmt(self, value: ast.AST) -> None:
        info = self.info
        if not isinstance(value, ast.Call):
            return
        func = value.func
        if _dotted(func) in ("sys.meta_path.append", "sys.meta_path.insert"):
            # an import hook (six's _SixMetaPathImporter) may serve any
            # module of the package: every one not on disk is unknown
            info.registered_modules.append(info.name.split(".")[0] + ".*")
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "__all__"
        ):
            if func.attr == "extend" and len(value.args) == 1:
                self._set_all(value.args[0], replace=False)
            elif func.attr == "append" and len(value.args) == 1:
                arg = value.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    info.all = [*(info.all or []), arg.value]
                else:
                    info.all_dynamic = True
            else:
                info.all_dynamic = True
        elif isinstance(func, ast.Name) and func.id == "exec":
            info.open_reason = (
                info.open_reason or f"calls exec() at line {value.lineno}"
            )
        elif isinstance(func, ast.Name) and func.id == "setattr" and value.args:
            first = value.args[0]
            if (
                isinstance(first, ast.Subscript)
                and _dotted(first.value) == "sys.modules"
            ):
                info.open_reason = (
                    info.open_reason or f"setattr on its module at line {value.lineno}"
                )
            elif isinstance(first, ast.Name) and first.id in info.classes:
                info.classes[
                    first.id
                ].dynamic = f"setattr() on the class at line {value.lineno}"

    # -- defs and classes ---------------------------------------------------------

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionInfo:
        return FunctionInfo(
            name=node.name,
            line=node.lineno,
            end_line=node.end_lineno or node.lineno,
            params=mask_params(_params(node.args, self.src)),
            returns=_text(node.returns, self.src),
            doc=_doc(node),
            decorators=[self._normalise(d) for d in node.decorator_list],
            is_async=isinstance(node, ast.AsyncFunctionDef),
        )

    def _class(self, node: ast.ClassDef) -> ClassInfo:
        ci = ClassInfo(
            name=node.name,
            line=node.lineno,
            end_line=node.end_lineno or node.lineno,
            doc=_doc(node),
        )
        for b in node.bases:
            if isinstance(b, ast.Subscript):
                b = b.value
            ci.bases.append(_dotted(b))
        ci.decorators = [self._normalise(d) for d in node.decorator_list]
        for kw in node.keywords:
            if kw.arg == "metaclass":
                ci.metaclass = self._normalise(kw.value)
        for d, dnode in zip(ci.decorators, node.decorator_list, strict=False):
            if d in _DATACLASS_DECORATORS:
                ci.is_dataclass = True
                if isinstance(dnode, ast.Call):
                    for kw in dnode.keywords:
                        if (
                            kw.arg == "init"
                            and isinstance(kw.value, ast.Constant)
                            and kw.value.value is False
                        ):
                            ci.dataclass_init = False
        if ci.metaclass and ci.metaclass not in _NEUTRAL_METACLASSES:
            ci.dynamic = f"uses metaclass {ci.metaclass}"
        odd = [d for d in ci.decorators if d not in _NEUTRAL_CLASS_DECORATORS]
        if odd and ci.dynamic is None:
            ci.dynamic = f"is decorated by {odd[0]}"
        self._class_body(ci, node.body)
        if "__getattr__" in ci.methods or "__getattribute__" in ci.methods:
            ci.dynamic = ci.dynamic or "defines __getattr__"
        if ci.is_dataclass:
            ci.fields = self._dataclass_fields(node, ci)
        return ci

    def _class_body(self, ci: ClassInfo, body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ci.methods[st.name] = self._function(st)
                self._instance_attrs(ci, st)
            elif isinstance(st, ast.ClassDef):
                ci.classes[st.name] = self._class(st)
                ci.attributes.setdefault(st.name, st.lineno)
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            ci.attributes[n.id] = st.lineno
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and any(
                    isinstance(t, ast.Name) and t.id == "__slots__" for t in targets
                ):
                    for s in self._literal_strings(st.value) or ():  # type: ignore[arg-type]
                        ci.instance_attributes.setdefault(s, st.lineno)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    ci.attributes[(a.asname or a.name).split(".")[0]] = st.lineno
            elif isinstance(st, ast.If):
                self._class_body(ci, st.body)
                self._class_body(ci, st.orelse)
            elif isinstance(st, (ast.Try, ast.TryStar)):
                self._class_body(ci, st.body)
                for h in st.handlers:
                    self._class_body(ci, h.body)
                self._class_body(ci, st.orelse)
                self._class_body(ci, st.finalbody)
            elif isinstance(st, (ast.With, ast.For, ast.While)):
                ci.dynamic = (
                    ci.dynamic
                    or f"computes its body in a loop/with at line {st.lineno}"
                )
                self._class_body(ci, st.body)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                f = _dotted(st.value.func) or ""
                if f in ("locals", "vars") or f.startswith(("locals()", "vars()")):
                    ci.dynamic = ci.dynamic or "writes to its namespace dynamically"

    def _instance_attrs(
        self, ci: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> None:
        """Record ``self.x = ...`` targets and notice dynamic attribute writes.

        Only statements are visited (attribute stores cannot hide inside
        expressions), which keeps this cheap on large method bodies.
        """
        args = [*fn.args.posonlyargs, *fn.args.args]
        if not args:
            return
        me = args[0].arg

        def is_dict_of_me(x: ast.AST) -> bool:
            return (
                isinstance(x, ast.Attribute)
                and x.attr == "__dict__"
                and isinstance(x.value, ast.Name)
                and x.value.id == me
            ) or (
                isinstance(x, ast.Call)
                and isinstance(x.func, ast.Name)
                and x.func.id == "vars"
                and len(x.args) == 1
                and isinstance(x.args[0], ast.Name)
                and x.args[0].id == me
            )

        def store(t: ast.AST, line: int) -> None:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == me
            ):
                ci.instance_attributes.setdefault(t.attr, line)
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in t.elts:
                    store(e, line)
            elif isinstance(t, ast.Starred):
                store(t.value, line)
            elif isinstance(t, ast.Subscript) and is_dict_of_me(t.value):
                ci.dynamic = ci.dynamic or f"writes {me}.__dict__ in {fn.name}"

        for st in _iter_statements(fn.body):
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    store(t, st.lineno)
            elif isinstance(st, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                store(st.target, st.lineno)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    if item.optional_vars is not None:
                        store(item.optional_vars, st.lineno)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                call = st.value
                f = call.func
                if isinstance(f, ast.Name) and f.id == "setattr" and call.args:
                    a0 = call.args[0]
                    if isinstance(a0, ast.Name) and a0.id == me:
                        ci.dynamic = (
                            ci.dynamic or f"uses setattr({me}, ...) in {fn.name}"
                        )
                elif (
                    isinstance(f, ast.Attribute)
                    and f.attr in ("update", "setdefault", "__setitem__")
                    and is_dict_of_me(f.value)
                ):
                    ci.dynamic = ci.dynamic or f"updates {me}.__dict__ in {fn.name}"
        # ``store`` calls itself through its closure cell: a reference cycle
        # that would keep this method's whole subtree alive until a cyclic
        # collection (most of every parse tree, during a build)
        store = None  # type: ignore[assignment]

    def _dataclass_fields(
        self, node: ast.ClassDef, ci: ClassInfo
    ) -> list[dict[str, Any]] | None:
        out: list[dict[str, Any]] = []
        kw_only_all = False
        for d in node.decorator_list:
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if (
                        kw.arg == "kw_only"
                        and isinstance(kw.value, ast.Constant)
                        and kw.value.value is True
                    ):
                        kw_only_all = True
        kw_only = kw_only_all
        for st in node.body:
            if not isinstance(st, ast.AnnAssign) or not isinstance(st.target, ast.Name):
                continue
            ann = _text(st.annotation, self.src) or ""
            if re.match(r"^(typing\.)?ClassVar\b", ann):
                continue
            if re.match(r"^(dataclasses\.)?KW_ONLY$", ann):
                kw_only = True
                continue
            default: str | None = None
            this_kw = kw_only
            if st.value is not None:
                default = _text(st.value, self.src)
                v = st.value
                if (
                    isinstance(v, ast.Call)
                    and (_dotted(v.func) or "").rsplit(".", 1)[-1] == "field"
                ):
                    default = None
                    for kw in v.keywords:
                        if (
                            kw.arg == "init"
                            and isinstance(kw.value, ast.Constant)
                            and kw.value.value is False
                        ):
                            default = "<no-init>"
                        elif kw.arg == "kw_only" and isinstance(kw.value, ast.Constant):
                            this_kw = bool(kw.value.value)
                        elif kw.arg in ("default", "default_factory"):
                            default = default or _text(kw.value, self.src)
                    if default == "<no-init>":
                        continue
            out.append(
                {
                    "name": st.target.id,
                    "kind": "keyword_only" if this_kw else "positional_or_keyword",
                    "default": default,
                    "annotation": ann or None,
                }
            )
        return out


def _extract_files(root: str, package: str, rels: list[str]) -> list[ModuleInfo]:
    """Read, parse and extract files (a process-pool worker in ``build``)."""
    out: list[ModuleInfo] = []
    for rel in rels:
        meta = module_name_for(rel, package)
        if meta is None:
            continue
        dotted, is_pkg, kind = meta
        try:
            data = read_regular(Path(root) / rel, MODEL_MAX_BYTES)
            if data is None:
                raise OSError(f"larger than {MODEL_MAX_BYTES} bytes")
        except OSError as exc:  # a FIFO fails at once (issue 19)
            out.append(
                ModuleInfo(
                    name=dotted,
                    rel=rel,
                    is_package=is_pkg,
                    kind=kind,
                    parse_error=f"unreadable: {exc}",
                )
            )
            continue
        out.append(module_info_from_bytes(data, dotted, rel, is_pkg, kind, Path(root)))
    return out


def module_head(
    data: bytes, name: str, rel: str, is_package: bool
) -> ModuleInfo | None:
    """What a plain source module binds and exports (every field of its
    :class:`ModuleInfo` but ``doc``, ``functions`` and ``classes``, which
    hold placeholders), from one parse; None when it does not parse (the
    caller models it whole: there is nothing more to read later).

    The fields it fills never depend on what a def or class holds, only on
    their names (the extractor's one pass reads nothing else of them), so
    they equal a full extraction's; about half of extracting a module is
    its defs and classes."""
    with paused_gc():
        try:
            tree = ast.parse(data, filename=rel, type_comments=False)
        except (SyntaxError, ValueError, RecursionError):
            return None
        return _ModuleExtractor(
            tree, name, rel, is_package, "source", data, heads_only=True
        ).run()


_MESON_EXT_RE = re.compile(r"extension_module\(\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")


def module_info_from_bytes(
    data: bytes,
    name: str,
    rel: str,
    is_package: bool,
    kind: str,
    root: Path | None = None,
) -> ModuleInfo:
    """Facts of one module file of any kind but ``compiled``.

    A ``.pyx`` goes through :func:`~pycsamt_lsp.model.cython.cython_stub`;
    its ``include`` files are read relative to it under ``root`` (without a
    root the namespace stays open, and ``PackageModel.add_module`` completes
    it when the model has one)."""
    if kind == "build":
        info = ModuleInfo(name=name, rel=rel, kind="build")
        if rel.endswith("meson.build"):
            text = data.decode("utf-8", errors="replace")
            info.registered_modules = [
                f"{name}.{m}" for m in _MESON_EXT_RE.findall(text)
            ]
        return info
    if kind != "cython":
        return ModuleInfo.from_source(
            data, name=name, rel=rel, is_package=is_package, kind=kind
        )
    from pycsamt_lsp.model.cython import cython_stub

    here = (Path(root) / rel).parent if root is not None else None

    def read(path: str) -> str | None:
        if here is None:
            return None
        try:
            return (here / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    stub = cython_stub(data.decode("utf-8", errors="replace"), read)
    info = ModuleInfo.from_source(
        stub.source, name=name, rel=rel, is_package=is_package, kind="cython"
    )
    for b in info.bindings.values():
        b.line = stub.lines.get(b.line, b.line)
    for obj in (*info.functions.values(), *info.classes.values()):
        for attr in ("line", "end_line"):
            v = getattr(obj, attr, None)
            if isinstance(v, int):
                setattr(obj, attr, stub.lines.get(v, v))
    if stub.open_reason and info.open_reason is None:
        info.open_reason = stub.open_reason
    return info
