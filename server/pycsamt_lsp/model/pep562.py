"""PEP 562: what a module-level ``__getattr__`` admits, refuses or leaves open.

A small abstract interpretation (:class:`_GetattrAnalyzer`): when the function
only admits names drawn from module-level literal collections (or
``name == "x"`` tests) and raises otherwise, the namespace stays closed and is
extended by exactly the admitted names, each mapped to the target its body
would import; names it raises for under a finite test are absent, with the
package's own message rendered from the literal. Anything it cannot follow
makes the namespace open.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.model.facts import _dotted, _literal, _NameSet, _resolve_relative

if TYPE_CHECKING:
    from pycsamt_lsp.model.extract import _ModuleExtractor


class _GetattrAnalyzer:
    """Abstract interpretation of a module-level ``__getattr__`` (PEP 562).

    Tracks the set of names that can reach each statement (finite when drawn
    from literal collections, co-finite otherwise). A ``return`` reached by a
    finite set admits those names, each with the target its body computes
    (``import_module(".x")``, ``getattr(mod, name)``...); a ``return`` reached
    by a co-finite set opens the namespace. A ``raise`` reached by a finite
    set records removals (message rendered from the literal); raises inside
    ``except`` handlers are runtime failures of admitted names, not removals.
    """

    def __init__(self, ex: _ModuleExtractor) -> None:
        self.ex = ex
        self.module = ex.info.name
        self.package = (
            ex.info.name if ex.info.is_package else ex.info.name.rpartition(".")[0]
        )
        self.admitted: dict[str, tuple[str, str | None] | None] = {}
        self.removed: dict[str, str] = {}
        self.open_reason: str | None = None
        self.param = "name"
        self._lit_cache: dict[str, Any] = {}

    def run(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
        args = [*fn.args.posonlyargs, *fn.args.args]
        if len(args) != 1:
            self.open_reason = "__getattr__ has an unexpected signature"
        else:
            self.param = args[0].arg
            try:
                rest = self._block(fn.body, _NameSet.all(), [], False)
                if not rest.empty:
                    self._admit(rest, [], None)
            except RecursionError:  # pragma: no cover - defensive
                self.open_reason = "__getattr__ too complex"
        mode = "open" if self.open_reason else "closed"
        return {
            "mode": mode,
            "line": fn.lineno,
            "reason": self.open_reason,
            "admitted": {k: list(v) if v else None for k, v in self.admitted.items()}
            if mode == "closed"
            else {},
            "removed": self.removed if mode == "closed" else {},
        }

    # -- control flow -------------------------------------------------------------

    def _block(
        self,
        stmts: list[ast.stmt],
        names: _NameSet,
        path: list[ast.stmt],
        in_handler: bool,
    ) -> _NameSet:
        path = list(path)
        for st in stmts:
            if names.empty or self.open_reason:
                return names
            if isinstance(st, ast.Return):
                self._admit(names, path, st.value)
                return _NameSet.of(())
            if isinstance(st, ast.Raise):
                if not in_handler:
                    self._raise(names, path, st.exc)
                return _NameSet.of(())
            if isinstance(st, ast.If):
                pred = self._pred(st.test, path)
                yes, no = (
                    (names, names) if pred is None else (names & pred, names - pred)
                )
                names = self._block(st.body, yes, path, in_handler) | self._block(
                    st.orelse, no, path, in_handler
                )
            elif isinstance(st, (ast.Try, ast.TryStar)):
                through = self._block(st.body, names, path, in_handler)
                handled = _NameSet.of(())
                for h in st.handlers:
                    handled = handled | self._block(h.body, names, path, True)
                if st.orelse:
                    through = self._block(
                        st.orelse, through, [*path, *st.body], in_handler
                    )
                names = through | handled
                if st.finalbody:
                    names = self._block(st.finalbody, names, path, in_handler)
                path = [*path, *st.body]
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                names = self._block(st.body, names, path, in_handler)
                path = [*path, *st.body]
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.Match)):
                self.open_reason = f"__getattr__ loops at line {st.lineno}"
                return _NameSet.of(())
            else:
                path.append(st)
        return names

    def _admit(
        self, names: _NameSet, path: list[ast.stmt], value: ast.AST | None
    ) -> None:
        if not names.finite:
            self.open_reason = (
                "__getattr__ returns for names not drawn from a literal collection"
            )
            return
        for n in sorted(names.names):  # a frozenset: hash order (issue 18)
            if n in self.admitted:
                continue
            target = None
            if value is not None:
                got = self._eval_path(path, value, n)
                if got is not None and got[0] in ("module", "attr"):
                    mod, _, attr = got[1].rpartition(".")
                    target = (got[1], None) if got[0] == "module" else (mod, attr)
            self.admitted[n] = target

    def _raise(
        self, names: _NameSet, path: list[ast.stmt], exc: ast.AST | None
    ) -> None:
        if not names.finite:
            return  # the closing "otherwise AttributeError"
        arg = None
        if isinstance(exc, ast.Call) and exc.args:
            arg = exc.args[0]
        for n in sorted(names.names):  # persisted order: not hash order
            if n in self.admitted or n in self.removed:
                continue
            msg = None
            if arg is not None:
                got = self._eval_path(path, arg, n)
                if got is not None and got[0] == "str":
                    msg = got[1]
            self.removed[n] = (
                msg
                or f"'{self.module}.{n}' is listed as unavailable by {self.module}.__getattr__"
            )

    # -- predicates -----------------------------------------------------------------

    def _collection(self, node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Name):
            if node.id not in self._lit_cache:
                self._lit_cache[node.id] = self.ex._literal_strings(node)
            return self._lit_cache[node.id]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "keys"
            and not node.args
        ):
            return self._collection(node.func.value)
        return self.ex._literal_strings(node)

    def _is_param(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.param

    def _pred(self, test: ast.AST, path: list[ast.stmt]) -> _NameSet | None:
        if isinstance(test, ast.BoolOp):
            parts = [self._pred(v, path) for v in test.values]
            if any(p is None for p in parts):
                return None
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if isinstance(test.op, ast.And) else (out | p)  # type: ignore[operator]
            return out
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._pred(test.operand, path)
            return None if inner is None else inner.complement()
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if self._is_param(test.left):
                if isinstance(op, (ast.In, ast.NotIn)):
                    coll = self._collection(right)
                    if coll is None:
                        return None
                    s = _NameSet.of(coll)
                    return s if isinstance(op, ast.In) else s.complement()
                if (
                    isinstance(op, (ast.Eq, ast.NotEq))
                    and isinstance(right, ast.Constant)
                    and isinstance(right.value, str)
                ):
                    s = _NameSet.of([right.value])
                    return s if isinstance(op, ast.Eq) else s.complement()
            # ``v is None`` / ``v is not None`` where v = COLL.get(name)
            if (
                isinstance(test.left, ast.Name)
                and isinstance(right, ast.Constant)
                and right.value is None
            ):
                got = self._get_var(test.left.id, path)
                if got is not None and isinstance(
                    op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)
                ):
                    return (
                        got
                        if isinstance(op, (ast.IsNot, ast.NotEq))
                        else got.complement()
                    )
            return None
        if isinstance(test, ast.Name):
            return self._get_var(test.id, path)
        return None

    def _get_var(self, var: str, path: list[ast.stmt]) -> _NameSet | None:
        """Names for which ``var`` (assigned ``COLL.get(name)``) is set."""
        for st in reversed(path):
            if isinstance(st, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == var for t in st.targets
            ):
                v = st.value
                if (
                    isinstance(v, ast.Call)
                    and isinstance(v.func, ast.Attribute)
                    and v.func.attr == "get"
                    and v.args
                    and self._is_param(v.args[0])
                    and (
                        len(v.args) == 1
                        or (
                            isinstance(v.args[1], ast.Constant)
                            and v.args[1].value is None
                        )
                    )
                ):
                    coll = self._collection(v.func.value)
                    return None if coll is None else _NameSet.of(coll)
                return None
        return None

    # -- value evaluation ---------------------------------------------------------------

    def _eval_path(
        self, path: list[ast.stmt], expr: ast.AST, name: str
    ) -> tuple[str, Any] | None:
        env: dict[str, tuple[str, Any] | None] = {self.param: ("str", name)}
        for st in path:
            try:
                self._exec(st, env)
            except Exception:  # noqa: BLE001  # pragma: no cover - best effort
                return None
        try:
            return self._eval(expr, env)
        except Exception:  # noqa: BLE001  # pragma: no cover - best effort
            return None

    def _exec(self, st: ast.stmt, env: dict[str, tuple[str, Any] | None]) -> None:
        if isinstance(st, ast.Assign):
            val = self._eval(st.value, env)
            for t in st.targets:
                self._assign(t, val, env)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            self._assign(st.target, self._eval(st.value, env), env)
        elif isinstance(st, ast.ImportFrom):
            mod = (
                _resolve_relative(
                    st.module or "", st.level, self.module, self.ex.info.is_package
                )
                if st.level
                else st.module
            )
            for a in st.names:
                if mod is not None:
                    env[a.asname or a.name] = ("attr", f"{mod}.{a.name}")
        elif isinstance(st, ast.Import):
            for a in st.names:
                env[a.asname or a.name.split(".")[0]] = (
                    "module",
                    a.name if a.asname else a.name.split(".")[0],
                )

    def _assign(
        self,
        t: ast.AST,
        val: tuple[str, Any] | None,
        env: dict[str, tuple[str, Any] | None],
    ) -> None:
        if isinstance(t, ast.Name):
            env[t.id] = val
        elif isinstance(t, (ast.Tuple, ast.List)):
            items = val[1] if val is not None and val[0] == "tuple" else None
            for i, e in enumerate(t.elts):
                self._assign(
                    e, items[i] if items is not None and i < len(items) else None, env
                )

    def _wrap(self, value: Any) -> tuple[str, Any] | None:
        if isinstance(value, str):
            return ("str", value)
        if isinstance(value, (tuple, list)):
            return ("tuple", [self._wrap(v) for v in value])
        return None

    def _eval(
        self, node: ast.AST | None, env: dict[str, tuple[str, Any] | None]
    ) -> tuple[str, Any] | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return self._wrap(node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id == "__name__":
                return ("str", self.module)
            if node.id == "__package__":
                return ("str", self.package)
            b = self.ex.info.bindings.get(node.id)
            if b is not None and b.kind in ("import", "module") and b.target:
                return ("module" if b.kind == "module" else "attr", b.target)
            return None
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.format_spec is None:
                    inner = self._eval(v.value, env)
                    if inner is None or inner[0] != "str":
                        return None
                    out.append(
                        repr(inner[1]) if v.conversion == ord("r") else str(inner[1])
                    )
                else:
                    return None
            return ("str", "".join(out))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if left and right and left[0] == right[0] == "str":
                return ("str", left[1] + right[1])
            return None
        if isinstance(node, ast.Subscript):
            key = self._eval(node.slice, env)
            if key is None or key[0] != "str":
                return None
            if isinstance(node.value, ast.Name):
                lit = self.ex.literals.get(node.value.id)
                try:
                    table = _literal(lit)
                except Exception:  # noqa: BLE001 - not a literal table: unknown
                    return None
                if isinstance(table, dict) and key[1] in table:
                    return self._wrap(table[key[1]])
            return None
        if isinstance(node, ast.Attribute):
            base = self._eval(node.value, env)
            if base is not None and base[0] in ("module", "attr"):
                return ("attr", f"{base[1]}.{node.attr}")
            return None
        if isinstance(node, ast.Call):
            fname = _dotted(node.func) or ""
            fb = self._eval(node.func, env) if isinstance(node.func, ast.Name) else None
            target = fb[1] if fb is not None and fb[0] in ("attr", "module") else fname
            if target.endswith("import_module") and node.args:
                spec = self._eval(node.args[0], env)
                anchor = None
                if len(node.args) > 1:
                    anchor = self._eval(node.args[1], env)
                for kw in node.keywords:
                    if kw.arg == "package":
                        anchor = self._eval(kw.value, env)
                if spec is None or spec[0] != "str":
                    return None
                mod = spec[1]
                if mod.startswith("."):
                    if anchor is None or anchor[0] != "str":
                        return None
                    level = len(mod) - len(mod.lstrip("."))
                    mod = _resolve_relative(mod.lstrip("."), level, anchor[1], True)
                    if mod is None:
                        return None
                return ("module", mod)
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
            ):
                # ``TABLE.get(name)`` on a module-level literal dict
                return self._eval(
                    ast.Subscript(
                        value=node.func.value, slice=node.args[0], ctx=ast.Load()
                    ),
                    env,
                )
            if fname == "getattr" and len(node.args) >= 2:
                base = self._eval(node.args[0], env)
                attr = self._eval(node.args[1], env)
                if base and attr and base[0] in ("module", "attr") and attr[0] == "str":
                    return ("attr", f"{base[1]}.{attr[1]}")
            return None
        return None
