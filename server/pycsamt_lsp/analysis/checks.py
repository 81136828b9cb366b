"""The checks themselves: one parsed text against the static package model.

:class:`_Analyzer` verifies imports (``import``/``from ... import``, with
did-you-mean fixes), flags imported bindings that are reassigned or shadowed,
then follows attribute chains, instance attributes and calls (keyword
arguments against the resolved signature). Errors only for what the model
proves absent; what it cannot verify is a warning.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable

from pycsamt_lsp.analysis.nodeindex import NodeIndex
from pycsamt_lsp.analysis.problems import _LINE_SPLIT, Edit, Fix, Problem
from pycsamt_lsp.model.package import ABSENT, EXISTS, UNKNOWN, PackageModel, Resolution

#: Unknown reasons that are not worth a warning: beyond an external object,
#: an untyped value, or a dunder inherited from ``object``.
_SILENT_REASONS = frozenset({"external", "value", "dunder", "outside-package"})


_IDENT = re.compile(r"[^\W\d]\w*")


_DOT = re.compile(r"\s*\.\s*")


_FROM = re.compile(r"from\s+")


_QUOTED_DOTTED = re.compile(r"'([A-Za-z_][\w.]*)'")


def _dotted_text(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _did_you_mean(candidates: list[str]) -> str:
    if not candidates:
        return ""
    quoted = [f"`{c}`" for c in candidates]
    if len(quoted) == 1:
        return f"; did you mean {quoted[0]}?"
    return f"; did you mean {', '.join(quoted[:-1])} or {quoted[-1]}?"


class _Analysis:
    """Problems of one buffer plus the imports that were verified."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.checked: list[str] = []
        self.syntax_ok = True


class _Analyzer:
    """Analyse one parsed text (a whole buffer or a re-parsed fragment).

    ``line_offset``/``col_offset`` place the fragment in the buffer; the
    fragment's own text is used to find exact name ranges.
    """

    def __init__(
        self,
        model: PackageModel,
        text: str,
        out: _Analysis,
        *,
        line_offset: int = 0,
        col_offset: int = 0,
        imports_only: bool = False,
        rank: Callable[[str, list[str]], list[str]] | None = None,
    ) -> None:
        self.model = model
        #: optional re-ranking of quick-fix candidates (e.g. blended with retrieval)
        self.rank = rank
        self.pkg = model.package
        self.lines = _LINE_SPLIT.split(text)
        self.out = out
        self.dl = line_offset
        self.dc = col_offset
        self.imports_only = imports_only
        #: local name -> dotted package object (None: broken or unverifiable)
        self.aliases: dict[str, str | None] = {}
        #: aliases bound to a module by ``import a.b as x``
        self.module_aliases: set[str] = set()
        #: local name -> class dotted, for ``x = Cls(...)`` assigned once
        self.instances: dict[str, str] = {}
        self._warned: set[str] = set()
        self._stores: dict[str, int] = {}
        #: ``(name, attr)`` pairs tested with ``hasattr(name, "attr")``: the
        #: code guards them, so their absence is not an error.
        self._guarded: set[tuple[str, str]] = set()

    # -- positions --------------------------------------------------------------

    def _char(self, line1: int, bcol: int) -> int:
        if not 0 < line1 <= len(self.lines):
            return bcol
        line = self.lines[line1 - 1]
        if line.isascii():
            return bcol
        return len(line.encode("utf-8")[:bcol].decode("utf-8", "ignore"))

    def _pos(self, line1: int, ccol: int) -> tuple[int, int]:
        """Buffer position (0-based) of a fragment position (1-based line,
        code-point column)."""
        return line1 - 1 + self.dl, ccol + self.dc

    def _node_range(self, node: ast.AST) -> tuple[int, int, int, int]:
        l0, c0 = self._pos(node.lineno, self._char(node.lineno, node.col_offset))  # type: ignore[attr-defined]
        end_l = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        l1, c1 = self._pos(end_l, self._char(end_l, node.end_col_offset or 0))  # type: ignore[attr-defined]
        return l0, c0, l1, c1

    def _dotted_segments(
        self, line1: int, start: int, parts: list[str]
    ) -> list[tuple[int, int]] | None:
        """Code-point ranges of each part of a dotted name written at
        ``(line1, start)``, or None when it is not laid out simply."""
        if not 0 < line1 <= len(self.lines):
            return None
        line = self.lines[line1 - 1]
        pos = start
        out: list[tuple[int, int]] = []
        for i, part in enumerate(parts):
            if i:
                m = _DOT.match(line, pos)
                if m is None:
                    return None
                pos = m.end()
            m = _IDENT.match(line, pos)
            if m is None or m.group() != part:
                return None
            out.append((m.start(), m.end()))
            pos = m.end()
        return out

    # -- problems ------------------------------------------------------------------

    def _add(
        self,
        code: str,
        severity: str,
        rng: tuple[int, int, int, int],
        message: str,
        summary: str,
        dotted: str,
        candidates: list[str] | None = None,
        fixes: list[Fix] | None = None,
    ) -> None:
        cands = list(candidates or [])[:3]
        self.out.problems.append(
            Problem(
                code=code,
                severity=severity,
                message=message + (_did_you_mean(cands) if severity == "error" else ""),
                line=rng[0],
                col=rng[1],
                end_line=rng[2],
                end_col=rng[3],
                dotted=dotted,
                candidates=cands,
                fixes=fixes or [],
                summary=summary,
            )
        )

    def _warn_once(
        self,
        key: str,
        rng: tuple[int, int, int, int],
        message: str,
        summary: str,
        dotted: str,
    ) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        self._add("unverifiable", "warning", rng, message, summary, dotted)

    def _inside(self, dotted: str) -> bool:
        return dotted == self.pkg or dotted.startswith(self.pkg + ".")

    # -- driver ------------------------------------------------------------------

    def run(self, tree: ast.Module) -> None:
        nodes = NodeIndex(tree)
        imports = nodes.of(ast.Import, ast.ImportFrom)
        imports.sort(key=lambda n: (n.lineno, n.col_offset))
        for node in imports:
            if isinstance(node, ast.Import):
                self._import(node)
            elif node.level == 0 and node.module and self._inside(node.module):
                self._import_from(node)
        if self.imports_only or not self.aliases:
            return
        self._shadowing(nodes, imports)
        for n in nodes.of(ast.Call):
            if (
                isinstance(n.func, ast.Name)
                and n.func.id == "hasattr"
                and len(n.args) == 2
                and isinstance(n.args[1], ast.Constant)
                and isinstance(n.args[1].value, str)
            ):
                key = _dotted_text(n.args[0])
                if key is not None:
                    self._guarded.add((key, n.args[1].value))
        self._track_instances(nodes)
        self._chains_and_calls(nodes)

    # -- imports -----------------------------------------------------------------

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not self._inside(alias.name):
                continue
            local = alias.asname or alias.name.split(".")[0]
            res = self.model.resolve_module(alias.name)
            parts = alias.name.split(".")
            segs = self._dotted_segments(
                alias.lineno, self._char(alias.lineno, alias.col_offset), parts
            )
            if res.status == EXISTS:
                self.out.checked.append(alias.name)
                self.aliases[local] = alias.name if alias.asname else self.pkg
                self.module_aliases.add(local)
                continue
            self.aliases[local] = None
            rng = self._seg_range(alias, segs, res.failed_at)
            if res.status == UNKNOWN:
                msg = f"Cannot verify '{alias.name}': {res.message}"
                self._add("unverifiable", "warning", rng, msg, msg, alias.name)
                continue
            cands, fixes = self._module_fixes(alias, segs, res, parts)
            message = res.message or f"No module named '{alias.name}'"
            attr = self.model.resolve(alias.name)
            if attr.exists and attr.kind not in ("package", "module", "namespace"):
                # ``import pkg.mod.Class``: the name is real, the statement is not.
                parent, _, name = alias.name.rpartition(".")
                message += f" ('{alias.name}' is a {attr.kind}, not a module)"
                suffix = f" as {alias.asname}" if alias.asname else ""
                stmt = f"from {parent} import {name}{suffix}"
                fix = Fix(
                    f"Import `{name}` from `{parent}`",
                    alias.name,
                    [Edit(*self._node_range(node), stmt)],
                )
                if len(node.names) == 1:
                    cands, fixes = [alias.name, *cands][:3], [fix, *fixes][:3]
            self._add(
                "unknown-module",
                "error",
                rng,
                message,
                message,
                alias.name,
                cands,
                fixes,
            )

    def _seg_range(
        self, node: ast.AST, segs: list[tuple[int, int]] | None, failed_at: int | None
    ) -> tuple[int, int, int, int]:
        if segs is not None and failed_at is not None and failed_at < len(segs):
            s, e = segs[failed_at]
            l0, c0 = self._pos(node.lineno, s)  # type: ignore[attr-defined]
            return l0, c0, l0, c0 + (e - s)
        return self._node_range(node)

    def _module_fixes(
        self,
        node: ast.AST,
        segs: list[tuple[int, int]] | None,
        res: Resolution,
        parts: list[str],
        names: list[str] | None = None,
    ) -> tuple[list[str], list[Fix]]:
        """Real modules to use instead of a missing one: first those that
        provide every imported name, then modules named alike."""
        model = self.model
        dotted = ".".join(parts)
        cands: list[str] = []
        if names:
            holders = [
                m
                for m, info in model.modules.items()
                # may_bind first: a deferred module lacking one of the names
                # in its text is not parsed for the others (model.deferred)
                if all(info.may_bind(n) or f"{m}.{n}" in model.modules for n in names)
                and all(info.binds(n) or f"{m}.{n}" in model.modules for n in names)
                and all(model.resolve_from(m, n).exists for n in names)
            ]
            holders.sort(
                key=lambda m: (
                    m.count("."),
                    any(p.startswith("_") for p in m.split(".")),
                    m,
                )
            )
            cands.extend(holders[:3])
        fail = res.failed_at if res.failed_at is not None else len(parts) - 1
        rest = parts[fail + 1 :]
        if rest:
            # Fix the failing segment and keep the rest when that is real:
            # ``pkg.toolz.ss`` -> ``pkg.tools.ss``.
            for p in model.suggest(".".join(parts[: fail + 1]), k=3, kind="module"):
                full = ".".join([p, *rest])
                if full not in cands and model.resolve_module(full).exists:
                    cands.append(full)
        for c in model.suggest(dotted, k=3, kind="module"):
            if c not in cands:
                cands.append(c)
        cands = cands[:3]
        fixes: list[Fix] = []
        if segs is not None:
            l0, c0 = self._pos(node.lineno, segs[0][0])  # type: ignore[attr-defined]
            _, c1 = self._pos(node.lineno, segs[-1][1])  # type: ignore[attr-defined]
            for c in cands:
                fixes.append(Fix(f"Use module `{c}`", c, [Edit(l0, c0, l0, c1, c)]))
        return cands, fixes

    def _import_from(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        parts = mod.split(".")
        line = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        m = _FROM.match(line, self._char(node.lineno, node.col_offset))
        segs = self._dotted_segments(node.lineno, m.end(), parts) if m else None
        mres = self.model.resolve_module(mod)
        if mres.status != EXISTS:
            for a in node.names:
                self.aliases[a.asname or a.name] = None
            rng = self._seg_range(node, segs, mres.failed_at)
            if mres.status == UNKNOWN:
                msg = f"Cannot verify '{mod}': {mres.message}"
                self._add("unverifiable", "warning", rng, msg, msg, mod)
                return
            names = [a.name for a in node.names if a.name != "*"]
            cands, fixes = self._module_fixes(node, segs, mres, parts, names)
            self._add(
                "unknown-module",
                "error",
                rng,
                mres.message or "",
                mres.message or "",
                mod,
                cands,
                fixes,
            )
            return
        for i, a in enumerate(node.names):
            arng = self._alias_name_range(a)
            if a.name == "*":
                msg = f"Relative/wildcard import: {mod}.*"
                self._add("unverifiable", "warning", arng, msg, msg, f"{mod}.*")
                continue
            dotted = f"{mod}.{a.name}"
            local = a.asname or a.name
            res = self.model.resolve_from(mod, a.name)
            if res.status == EXISTS:
                self.out.checked.append(dotted)
                self.aliases[local] = dotted
                continue
            self.aliases[local] = None
            if res.status == UNKNOWN:
                msg = f"Cannot verify '{dotted}': {res.message}"
                self._add("unverifiable", "warning", arng, msg, msg, dotted)
                continue
            cands = self._name_candidates(dotted, res)
            fixes = [self._from_fix(node, i, c, arng) for c in cands]
            message = res.message or f"'{mod}' has no attribute or submodule '{a.name}'"
            code = "unknown-name"
            self._add(code, "error", arng, message, message, dotted, cands, fixes)

    def _binding_range(self, name: str, node: ast.AST) -> tuple[int, int, int, int]:
        """The range of *name* where *node* binds it: the identifier after
        ``def``/``class``/``as`` rather than the whole statement."""
        l0, c0, l1, c1 = self._node_range(node)
        if isinstance(
            node,
            (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler),
        ):
            line1 = node.lineno
            if 0 < line1 <= len(self.lines):
                text = self.lines[line1 - 1]
                start = self._char(line1, node.col_offset)
                kw = (
                    r"\bas\s+"
                    if isinstance(node, ast.ExceptHandler)
                    else (r"\b(?:def|class)\s+")
                )
                m = re.compile(kw + re.escape(name) + r"\b").search(text, start)
                if m is not None:
                    c = m.end() - len(name)
                    return (*self._pos(line1, c), *self._pos(line1, m.end()))
            return l0, c0, l0, c0
        return l0, c0, l1, c1

    def _alias_local_range(self, a: ast.alias) -> tuple[int, int, int, int]:
        """The range of the name an import alias binds (``x`` in ``y as x``)."""
        if a.asname and 0 < a.lineno <= len(self.lines):
            text = self.lines[a.lineno - 1]
            start = self._char(a.lineno, a.col_offset)
            m = re.compile(r"\bas\s+" + re.escape(a.asname) + r"\b").search(text, start)
            if m is not None:
                c = m.end() - len(a.asname)
                return (*self._pos(a.lineno, c), *self._pos(a.lineno, m.end()))
        return self._alias_name_range(a)

    def _alias_name_range(self, a: ast.alias) -> tuple[int, int, int, int]:
        c0 = self._char(a.lineno, a.col_offset)
        l0, c0 = self._pos(a.lineno, c0)
        return l0, c0, l0, c0 + len(a.name)

    def _name_candidates(
        self, dotted: str, res: Resolution, within: str | None = None
    ) -> list[str]:
        """Real symbols for a missing name: those a removal message points
        to, then name-alike symbols (``within`` a prefix first, if given)."""
        out: list[str] = []
        if res.reason == "removed" and res.message:
            for q in _QUOTED_DOTTED.findall(res.message):
                if (
                    q != dotted
                    and self._inside(q)
                    and self.model.resolve(q).exists
                    and q not in out
                ):
                    out.append(q)
        pinned = len(out)
        depth = 8 if self.rank else 3
        if within:
            for c in self.model.suggest(dotted, k=depth, within=within):
                if c not in out:
                    out.append(c)
        for c in self.model.suggest(dotted, k=depth):
            if c not in out:
                out.append(c)
        if self.rank is not None:
            out = out[:pinned] + [
                c for c in self.rank(dotted, out[pinned:]) if c not in out[:pinned]
            ]
        return out[:3]

    def _from_fix(
        self, node: ast.ImportFrom, idx: int, cand: str, arng: tuple[int, int, int, int]
    ) -> Fix:
        """Edits that make ``from M import ..., bad, ...`` import ``cand``."""
        mod = node.module or ""
        alias = node.names[idx]
        parent, _, name = cand.rpartition(".")
        suffix = f" as {alias.asname}" if alias.asname else ""
        if parent == mod:
            return Fix(
                f"Replace with `{name}`",
                cand,
                [Edit(arng[0], arng[1], arng[2], arng[3], name)],
                replacement=name,
            )
        stmt = f"from {parent} import {name}{suffix}"
        l0, c0, l1, c1 = self._node_range(node)
        if len(node.names) == 1:
            return Fix(
                f"Import `{name}` from `{parent}`", cand, [Edit(l0, c0, l1, c1, stmt)]
            )
        # Several names: drop this one (with its comma) and import the real
        # symbol on a new line with the statement's indentation.
        here = self._node_range(alias)
        if idx + 1 < len(node.names):
            nxt = self._node_range(node.names[idx + 1])
            cut = Edit(here[0], here[1], nxt[0], nxt[1], "")
        else:
            prev = self._node_range(node.names[idx - 1])
            cut = Edit(prev[2], prev[3], here[2], here[3], "")
        indent = " " * c0
        return Fix(
            f"Import `{name}` from `{parent}`",
            cand,
            [cut, Edit(l1, c1, l1, c1, "\n" + indent + stmt)],
        )

    # -- bindings in the rest of the code -----------------------------------------------

    def _shadowing(self, nodes: NodeIndex, imports: list[ast.stmt]) -> None:
        """Drop aliases rebound anywhere else (pyCSAMT's rule: global alias
        inference is unsafe once a name is reassigned or shadowed)."""
        targets: dict[str, set[str | None]] = {}
        #: where each local name is rebound to a *different* target by a
        #: later import (the warning goes there, not to the file's start)
        rebound_at: dict[str, ast.alias] = {}
        for n in imports:
            for a in n.names:  # type: ignore[attr-defined]
                if a.name == "*":
                    continue
                local = a.asname or a.name.split(".")[0]
                if isinstance(n, ast.ImportFrom):
                    full = f"{n.module}.{a.name}" if n.level == 0 and n.module else None
                else:
                    full = a.name if a.asname else a.name.split(".")[0]
                seen = targets.setdefault(local, set())
                if seen and full not in seen and local not in rebound_at:
                    rebound_at[local] = a
                seen.add(full)
        sites: list[tuple[str, ast.AST]] = []
        for n in nodes.of(ast.Name):
            if not isinstance(n.ctx, ast.Load):
                sites.append((n.id, n))
        for n in nodes.of(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            sites.append((n.name, n))
        for n in nodes.of(ast.arg):
            sites.append((n.arg, n))
        for n in nodes.of(ast.ExceptHandler, ast.MatchAs, ast.MatchStar):
            if n.name:
                sites.append((n.name, n))
        sites.sort(
            key=lambda s: (getattr(s[1], "lineno", 0), getattr(s[1], "col_offset", 0))
        )
        for name, node in sites:
            if name not in self.aliases:
                continue
            was = self.aliases.pop(name)
            if was is not None:
                msg = f"Imported binding is reassigned or shadowed: {name}"
                self._warn_once(
                    f"shadow:{name}", self._binding_range(name, node), msg, msg, was
                )
        for local, tgts in targets.items():
            if local in self.aliases and len(tgts) > 1:
                was = self.aliases.pop(local)
                if was is not None:
                    msg = f"Imported binding is reassigned or shadowed: {local}"
                    a = rebound_at.get(local)
                    if a is not None:
                        rng = self._alias_local_range(a)
                    else:  # pragma: no cover - a second target implies a rebinding
                        rng = (self.dl, self.dc, self.dl, self.dc)
                    self._warn_once(f"shadow:{local}", rng, msg, msg, was)
        self._stores = {}
        for name, node in sites:
            weight = 1 if isinstance(node, ast.Name) else 2
            self._stores[name] = self._stores.get(name, 0) + weight

    def _resolve_expr(
        self, node: ast.AST
    ) -> tuple[str, list[ast.Attribute], str, str] | None:
        """``(dotted, attribute nodes outermost-first, base, root name)`` for
        a Name or Attribute chain rooted at a package alias."""
        attrs: list[ast.Attribute] = []
        cur = node
        while isinstance(cur, ast.Attribute):
            attrs.append(cur)
            cur = cur.value
        if not isinstance(cur, ast.Name):
            return None
        base = self.aliases.get(cur.id)
        if base is None:
            return None
        names = [a.attr for a in reversed(attrs)]
        return ".".join([base, *names]), attrs, base, cur.id

    def _resolve_chain(self, dotted: str, base: str, root: str) -> Resolution:
        """Resolve an alias chain, starting at the module an ``import ... as``
        bound (module path semantics) rather than walking from the top."""
        if root in self.module_aliases:
            return self.model.resolve(dotted, module=base)
        return self.model.resolve(dotted)

    def _track_instances(self, nodes: NodeIndex) -> None:
        """``x = Cls(...)`` with ``x`` bound exactly once: ``x.attr`` can be
        checked against the class."""
        stores = self._stores
        for n in nodes.of(ast.Assign, ast.AnnAssign):
            if isinstance(n, ast.Assign):
                if len(n.targets) != 1:
                    continue
                target, value = n.targets[0], n.value
            else:
                target, value = n.target, n.value
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Call):
                continue
            if stores.get(target.id) != 1 or target.id in self.aliases:
                continue
            got = self._resolve_expr(value.func)
            if got is None:
                continue
            res = self._resolve_chain(got[0], got[2], got[3])
            if res.exists and res.kind == "class" and res.target:
                self.instances[target.id] = res.target

    # -- attribute chains and calls ---------------------------------------------------

    def _chains_and_calls(self, nodes: NodeIndex) -> None:
        attributes = nodes.of(ast.Attribute)
        inner = {id(n.value) for n in attributes if isinstance(n.value, ast.Attribute)}
        roots = set(self.aliases) | set(self.instances)
        broken: set[int] = set()
        for n in sorted(attributes, key=lambda a: (a.lineno, a.col_offset)):
            if id(n) in inner or not isinstance(n.ctx, ast.Load):
                continue
            root = n.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if not isinstance(root, ast.Name) or root.id not in roots:
                continue
            if not self._check_chain(n):
                # Remember every node of a failing chain so calls on it are
                # not reported twice.
                cur: ast.AST = n
                while isinstance(cur, ast.Attribute):
                    broken.add(id(cur))
                    cur = cur.value
        for n in sorted(nodes.of(ast.Call), key=lambda c: (c.lineno, c.col_offset)):
            if n.keywords and id(n.func) not in broken:
                self._check_call(n)

    def _attr_range(self, a: ast.Attribute) -> tuple[int, int, int, int]:
        end_l = a.end_lineno or a.lineno
        c1 = self._char(end_l, a.end_col_offset or 0)
        line, c1 = self._pos(end_l, c1)
        return line, c1 - len(a.attr), line, c1

    def _check_chain(self, node: ast.Attribute) -> bool:
        """Check one maximal attribute chain; False when it reported an error."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value  # type: ignore[assignment]
        if isinstance(root, ast.Name) and root.id in self.instances:
            return self._check_instance_attr(node, root.id)
        got = self._resolve_expr(node)
        if got is None:
            return True
        dotted, attrs, base, root_name = got
        res = self._resolve_chain(dotted, base, root_name)
        if res.status == EXISTS or res.failed_at is None:
            return True
        ordered = list(reversed(attrs))
        j = res.failed_at - len(base.split("."))
        if not 0 <= j < len(ordered):
            return True
        bad = ordered[j]
        if (_dotted_text(bad.value), bad.attr) in self._guarded:
            return True
        rng = self._attr_range(bad)
        upto = ".".join(dotted.split(".")[: res.failed_at + 1])
        if res.status == UNKNOWN:
            if res.reason not in _SILENT_REASONS:
                summary = f"Dynamic or unresolved API: {upto} ({res.message})"
                self._warn_once(
                    f"chain:{upto}",
                    rng,
                    f"Cannot verify '{upto}': {res.message}",
                    summary,
                    upto,
                )
            return True
        parent = res.parent or base
        cands = self._name_candidates(
            upto, res, within=parent if parent != self.pkg else None
        )
        fixes = []
        for c in cands:
            if c.startswith(parent + "."):
                text = c[len(parent) + 1 :]
                fixes.append(
                    Fix(
                        f"Replace with `{text}`",
                        c,
                        [Edit(*rng, text)],
                        replacement=text,
                    )
                )
            elif c.startswith(base + ".") and j > 0:
                first = self._attr_range(ordered[0])
                text = c[len(base) + 1 :]
                fixes.append(
                    Fix(
                        f"Replace with `{text}`",
                        c,
                        [Edit(first[0], first[1], rng[2], rng[3], text)],
                    )
                )
        message = (
            res.message or f"'{parent}' has no attribute or submodule '{bad.attr}'"
        )
        self._add(
            "unknown-name",
            "error",
            rng,
            message,
            f"Unknown API: {upto} ({message})",
            upto,
            cands,
            fixes,
        )
        return False

    def _check_instance_attr(self, node: ast.Attribute, var: str) -> bool:
        first = node
        while isinstance(first.value, ast.Attribute):
            first = first.value
        if (var, first.attr) in self._guarded:
            return True
        cls = self.instances[var]
        dotted = f"{cls}.{first.attr}"
        res = self.model.resolve(dotted)
        if res.status != ABSENT:
            return True
        rng = self._attr_range(first)
        short = cls.rpartition(".")[2]
        members = [n for n, _ in self.model.members(cls)]
        close = difflib.get_close_matches(first.attr, members, n=3, cutoff=0.6)
        cands = [f"{cls}.{c}" for c in close]
        fixes = [
            Fix(f"Replace with `{c}`", f"{cls}.{c}", [Edit(*rng, c)], replacement=c)
            for c in close
        ]
        message = f"'{short}' object has no attribute '{first.attr}'"
        self._add(
            "unknown-name",
            "error",
            rng,
            message,
            f"Unknown API: {dotted} ({message})",
            dotted,
            cands,
            fixes,
        )
        return False

    def _check_call(self, call: ast.Call) -> None:
        func = call.func
        keywords = [k for k in call.keywords if k.arg is not None]
        if not keywords:
            return
        bound = False
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.instances
        ):
            bound = True
            dotted = f"{self.instances[func.value.id]}.{func.attr}"
            res = self.model.resolve(dotted)
        else:
            got = self._resolve_expr(func)
            if got is None:
                return
            dotted = got[0]
            res = self._resolve_chain(got[0], got[2], got[3])
        if not res.exists or res.kind not in ("function", "class", "method"):
            return
        sig = self.model.call_signature(
            res.target or dotted, bound=bound, module=res.module
        )
        if sig is None:
            return
        name_rng = (
            self._attr_range(func)
            if isinstance(func, ast.Attribute)
            else self._node_range(func)
        )
        params = sig["params"]
        if params is None:
            msg = f"Dynamic or unresolved call: {dotted}"
            self._warn_once(
                f"call:{dotted}",
                name_rng,
                f"{msg} ({sig['reason']}); keyword arguments not checked",
                msg,
                dotted,
            )
            return
        if sig["var_keyword"]:
            return
        accepted = [
            p["name"]
            for p in params
            if p["kind"] in ("positional_or_keyword", "keyword_only")
        ]
        posonly = {p["name"] for p in params if p["kind"] == "positional_only"}
        for k in keywords:
            if k.arg in accepted:
                continue
            l0, c0 = self._pos(k.lineno, self._char(k.lineno, k.col_offset))
            rng = (l0, c0, l0, c0 + len(k.arg or ""))
            if not sig["trusted"]:
                msg = f"Dynamic or unresolved call: {dotted}"
                self._warn_once(
                    f"kw:{dotted}:{k.arg}",
                    rng,
                    f"{msg}: keyword '{k.arg}' is not in the visible signature and a decorator may add it",
                    msg,
                    dotted,
                )
                continue
            if k.arg in posonly:
                detail = f"got some positional-only arguments passed as keyword arguments: '{k.arg}'"
            else:
                detail = f"got an unexpected keyword argument '{k.arg}'"
            close = difflib.get_close_matches(k.arg or "", accepted, n=3, cutoff=0.6)
            fixes = [
                Fix(f"Use keyword `{c}`", c, [Edit(*rng, c)], replacement=c)
                for c in close
            ]
            message = f"{dotted}: {detail}"
            self._add(
                "unknown-keyword",
                "error",
                rng,
                message,
                message,
                f"{dotted}({k.arg}=)",
                close,
                fixes,
            )
