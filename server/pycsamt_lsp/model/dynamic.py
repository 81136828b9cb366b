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
from collections import deque
from collections.abc import Iterator
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
_GLOBAL_STMT = re.compile(rb"[ \t]*global[ \t]+[A-Za-z_]")
_GLOBALS_CALL = re.compile(rb"globals\s*\(")
_WORD_BYTES = frozenset(b"0123456789_" + bytes(range(65, 91)) + bytes(range(97, 123)))
_SETATTR_RE = re.compile(rb"setattr")


def _global_lines(data: bytes) -> tuple[list[int], list[int]]:
    """``(hits, mentions)``: the lines where :data:`_GLOBAL_RE` matches and the
    lines that say ``global`` anywhere (both sorted, 1-based).

    The same lines as ``_GLOBAL_RE.finditer``, found from the occurrences of
    ``global`` (every match holds one, on the line it starts): that regex has
    no literal prefix and scanned every byte of every module, 0.55 s of a
    build of the sdist, where 1 file in 9 says ``global`` at all.
    """
    hits: list[int] = []
    mentions: list[int] = []
    line, pos = 1, 0
    at = data.find(b"global")
    while at != -1:
        line += data.count(b"\n", pos, at)
        pos = at
        if not mentions or mentions[-1] != line:
            mentions.append(line)
        if not hits or hits[-1] != line:
            start = data.rfind(b"\n", 0, at) + 1  # where ``^`` matches
            if (
                not data[start:at].strip(b" \t")
                and _GLOBAL_STMT.match(data, start) is not None
            ) or (
                (at == 0 or data[at - 1] not in _WORD_BYTES)
                and _GLOBALS_CALL.match(data, at) is not None
            ):
                hits.append(line)
        at = data.find(b"global", at + 1)
    return hits, mentions


def _hit_lines(data: bytes, pattern: re.Pattern[bytes]) -> list[int]:
    """1-based numbers of the lines where *pattern* matches (sorted, maybe
    repeated), counting newlines once rather than per hit."""
    hits: list[int] = []
    line, pos = 1, 0
    for m in pattern.finditer(data):
        line += data.count(b"\n", pos, m.start())
        pos = m.start()
        hits.append(line)
    return hits


def _lines_match_ast(data: bytes) -> bool:
    """True when counting ``\n`` numbers lines as the parser does (a lone
    ``\r`` also ends a line for it)."""
    return b"\r" not in data or data.count(b"\r") == data.count(b"\r\n")


def _walk_hits(top: ast.AST, hits: list[int] | None) -> Iterator[ast.AST]:
    """``ast.walk(top)``, in its order, without the subtrees whose lines hold
    no hit (none of them can hold the pattern; *hits* None walks everything).

    A node's lines run from its first decorator to ``end_lineno``; nodes
    without a position (``arguments``, ``comprehension``...) are always
    entered, and so is everything inside an f-string, whose parts carry the
    whole string's position before Python 3.12. A whole-tree walk of a
    module with one ``global`` in a large class was most of a build's scans.
    """
    todo = deque([top])
    free: set[int] = set()  # inside an f-string: never pruned
    while todo:
        node = todo.popleft()
        yield node
        if hits is None or id(node) in free or isinstance(node, ast.JoinedStr):
            for child in ast.iter_child_nodes(node):
                if hits is not None:
                    free.add(id(child))
                todo.append(child)
            continue
        for child in ast.iter_child_nodes(node):
            first = getattr(child, "lineno", None)
            last = getattr(child, "end_lineno", None)
            if first is None or last is None:
                todo.append(child)
                continue
            decorators = getattr(child, "decorator_list", None)
            if decorators:
                first = min(first, decorators[0].lineno)
            i = bisect_left(hits, first)
            if i < len(hits) and hits[i] <= last:
                todo.append(child)


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
        prune: list[int] | None = None
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "replace")
            if b"setattr" not in data:
                return
            # walk only the top-level statements whose lines mention it (a
            # whole-tree walk was most of a large module's refresh), and in
            # them only the nodes on the way to those lines
            hits = _hit_lines(data, _SETATTR_RE)
            prune = hits if _lines_match_ast(data) else None
            tops = []
            for top in self.tree.body:
                i = bisect_left(hits, top.lineno)
                if i < len(hits) and hits[i] <= (top.end_lineno or top.lineno):
                    tops.append(top)
        found: set[str] = set()
        for node in (n for top in tops for n in _walk_hits(top, prune)):
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
        prune: list[int] | None = None
        if raw is not None:
            # Only walk the top-level statements whose lines mention them,
            # and in them only the nodes on the way to a line that says
            # ``global`` anywhere (``if x: global y`` is not a hit above)
            data = (
                raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
            )
            hits, mentions = _global_lines(data)
            if not hits:
                return
            if _lines_match_ast(data):
                prune = mentions
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
            for node in _walk_hits(top, prune):
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
