"""What a module's namespace gains at run time: the dynamic-namespace scans.

Part of the extraction (:mod:`pycsamt_lsp.model.extract`): ``globals()``
writes and ``global`` rebindings (which open the namespace unless every write
is a literal name), ``setattr(obj, "name", v)`` injections (names another
module may gain), and a ``__getattr__`` bound by assignment
(``lazy_loader.attach`` with literal arguments closes the namespace on its
names; any other opens it).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.model.facts import Binding, _dotted, _literal

if TYPE_CHECKING:
    from pycsamt_lsp.model.extract import ModuleInfo

#: ``globals().<method>`` calls that only read the namespace.
_READONLY_GLOBALS_METHODS = frozenset(
    {"get", "keys", "items", "values", "copy", "__contains__", "__getitem__"}
)


_READONLY_GLOBALS_WRAPPERS = frozenset(
    {"set", "list", "sorted", "len", "dict", "tuple", "frozenset", "iter"}
)


_GLOBAL_RE = re.compile(rb"^[ \t]*global[ \t]+[A-Za-z_]|\bglobals\s*\(", re.MULTILINE)


def _is_locals_call(node: ast.AST) -> bool:
    """``locals()`` / ``vars()``: the module's own namespace when written at
    module level (``extract._target`` treats it as ``globals()`` there)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("locals", "vars")
        and not node.args
        and not node.keywords
    )


def _is_globals_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "globals"
        and not node.args
        and not node.keywords
    )


class _DynamicScans:
    """The dynamic-namespace scans of ``_ModuleExtractor`` (a base class, so its
    methods moved here unchanged; the state is set by its ``__init__``)."""

    tree: ast.Module
    raw: bytes | str | None
    info: ModuleInfo
    literals: dict[str, ast.AST]
    getattr_node: ast.FunctionDef | ast.AsyncFunctionDef | None
    handled_globals: set[int]

    def _bind(
        self,
        name: str,
        line: int,
        kind: str,
        cond: bool,
        module: str | None = None,
        attr: str | None = None,
    ) -> None:
        self.info.bindings[name] = Binding(name, line, kind, module, attr, cond)

    def _assigned_getattr(self, st: ast.Assign) -> None:
        """``__getattr__`` bound by an assignment (PEP 562 without a def).

        ``lazy_loader.attach(__name__, submodules=[...], submod_attrs={...})``
        with literal arguments admits exactly those names (each resolved to
        its submodule or ``submodule.name``) and closes the namespace; any
        other value (``attach_stub`` whose ``.pyi`` is missing, a factory the
        model cannot follow) opens it."""
        names = {
            n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)
        }
        if "__getattr__" not in names:
            return
        info = self.info
        call = st.value
        fn = _dotted(call.func) if isinstance(call, ast.Call) else None
        if fn is None or fn.rsplit(".", 1)[-1] != "attach":
            info.open_reason = info.open_reason or (
                f"binds __getattr__ to {fn or 'a value'}() at line {st.lineno}"
            )
            return
        assert isinstance(call, ast.Call)
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        pos = call.args

        def value(key: str, i: int) -> Any:
            node: ast.AST | None = kw.get(key, pos[i] if len(pos) > i else None)
            if isinstance(node, ast.Name) and node.id in self.literals:
                node = self.literals[node.id]
            if node is None or (isinstance(node, ast.Constant) and node.value is None):
                return None
            return _literal(node)

        pkg = info.name if info.is_package else info.name.rpartition(".")[0]
        admitted: dict[str, list[Any]] = {}
        try:
            subs = value("submodules", 1) or ()
            attrs = value("submod_attrs", 2) or {}
            if not isinstance(attrs, dict):
                raise ValueError("submod_attrs is not a dict")
            for sub in subs:
                admitted[str(sub)] = [f"{pkg}.{sub}", None]
            for mod, members in attrs.items():
                for n in members:
                    admitted[str(n)] = [f"{pkg}.{mod}", str(n)]
        except (ValueError, TypeError, SyntaxError):
            info.open_reason = info.open_reason or (
                f"lazy_loader.attach with non-literal arguments at line {st.lineno}"
            )
            return
        info.getattr = {
            "mode": "closed",
            "line": st.lineno,
            "reason": None,
            "admitted": admitted,
            "removed": {},
        }
        for n, (mod, attr) in admitted.items():
            if n not in info.bindings or n in ("__getattr__", "__dir__", "__all__"):
                info.bindings[n] = Binding(n, st.lineno, "lazy", mod, attr, True)

    def _scan_injects(self) -> None:
        """Record ``setattr(obj, "lit", v)`` names (see ``ModuleInfo.injects``)."""
        raw = self.raw
        tops: list[ast.stmt] = self.tree.body
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "replace")
            if b"setattr" not in data:
                return
            # walk only the top-level statements whose lines mention it (a
            # whole-tree walk was most of a large module's refresh)
            hits: list[int] = []
            line, pos = 1, 0
            for m in re.finditer(rb"setattr", data):
                line += data.count(b"\n", pos, m.start())
                pos = m.start()
                hits.append(line)
            tops = []
            for top in self.tree.body:
                i = bisect_left(hits, top.lineno)
                if i < len(hits) and hits[i] <= (top.end_lineno or top.lineno):
                    tops.append(top)
        found: set[str] = set()
        for node in (n for top in tops for n in ast.walk(top)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                first = node.args[0]
                if isinstance(first, ast.Name) and (
                    first.id in ("self", "cls") or first.id in self.info.classes
                ):
                    continue
                found.add(node.args[1].value)
        self.info.injects = sorted(found)

    def _scan_globals(self) -> None:
        """Find ``global X`` declarations and uses of ``globals()`` anywhere.

        ``globals()`` read in a test (``"x" in globals()``) or copied is
        harmless; ``globals()["lit"] = v`` binds ``lit``; inside the module's
        ``__getattr__`` the common ``globals()[name] = obj`` cache is part of
        the lazy protocol; anything else makes the namespace open.
        """
        raw = self.raw
        hits: list[int] | None = None
        if raw is not None:
            # Only walk the top-level statements whose lines mention them.
            data = (
                raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
            )
            hits = []
            line, pos = 1, 0
            for m in _GLOBAL_RE.finditer(data):  # count newlines once, not per hit
                line += data.count(b"\n", pos, m.start())
                pos = m.start()
                hits.append(line)
            if not hits:
                return
        info = self.info
        for top in self.tree.body:
            if hits is not None:
                first, last = top.lineno, top.end_lineno or top.lineno
                i = bisect_left(hits, first)
                if i == len(hits) or hits[i] > last:
                    continue
            in_getattr = top is self.getattr_node
            calls: list[ast.Call] = []
            handled: set[int] = set()
            for node in ast.walk(top):
                if isinstance(node, ast.Global):
                    for n in node.names:
                        if n not in info.bindings:
                            self._bind(n, node.lineno, "global", True)
                elif isinstance(node, ast.Call):
                    if _is_globals_call(node):
                        calls.append(node)
                    elif (
                        isinstance(node.func, ast.Name)
                        and node.func.id in _READONLY_GLOBALS_WRAPPERS
                        and node.args
                        and _is_globals_call(node.args[0])
                    ):
                        handled.add(id(node.args[0]))
                elif isinstance(node, ast.Compare):
                    for c in (node.left, *node.comparators):
                        if _is_globals_call(c):
                            handled.add(id(c))
                elif (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Load)
                    and _is_globals_call(node.value)
                ) or (
                    isinstance(node, ast.Attribute)
                    and node.attr in _READONLY_GLOBALS_METHODS
                    and _is_globals_call(node.value)
                ):
                    # ``globals()["_x"]`` / ``globals().get(name)``: a read of
                    # the module's own names (deprecation shims return one)
                    handled.add(id(node.value))
                elif isinstance(node, (ast.Assign, ast.AugAssign)) and not isinstance(
                    top, (ast.Assign, ast.For, ast.AsyncFor, ast.If, ast.Try, ast.With)
                ):
                    targets = (
                        node.targets if isinstance(node, ast.Assign) else [node.target]
                    )
                    for t in targets:
                        if isinstance(t, ast.Subscript) and _is_globals_call(t.value):
                            handled.add(id(t.value))
                            if isinstance(t.slice, ast.Constant) and isinstance(
                                t.slice.value, str
                            ):
                                if t.slice.value not in info.bindings:
                                    self._bind(
                                        t.slice.value, node.lineno, "global", True
                                    )
                            elif not in_getattr:
                                info.open_reason = info.open_reason or (
                                    f"writes to globals() at line {node.lineno}"
                                )
            for c in calls:
                if id(c) not in handled and id(c) not in self.handled_globals:
                    info.open_reason = (
                        info.open_reason
                        or f"passes globals() around at line {c.lineno}"
                    )
