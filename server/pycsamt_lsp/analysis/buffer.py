"""Where package symbols appear in a Python buffer, and what the cursor is on.

Pure functions over text (no LSP types, no model): :func:`analyze` parses a
buffer with ``ast`` and lists every reference to a symbol of the package --
import path segments, imported names and their aliases, names bound by those
imports, attribute chains rooted at them (``et.estimate_ss_ama``), methods
reached through an instance (``agent = Agent(); agent.run``) and keyword
arguments at call sites -- each with its position and the dotted name to
resolve. Whether that name exists is the model's question, asked later.

A buffer being edited often does not parse. Then the longest prefix that
parses is analysed, then every later import statement that parses on its
own, and :meth:`BufferIndex.ref_at` falls back to reading the dotted word
under the cursor against the bindings found.

Positions are 0-based lines and code-point columns; the LSP layer converts
from and to the client's encoding (UTF-16 by default). What the text before
the cursor asks to complete is :mod:`pycsamt_lsp.analysis.completion`'s
(re-exported here for the callers that read it with the buffer).
"""

from __future__ import annotations

import ast
import gc
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from pycsamt_lsp.analysis.completion import (
    CompletionContext,
    completion_context,
    in_code,
)
from pycsamt_lsp.analysis.validate import NodeIndex

__all__ = [
    "Binding",
    "BufferIndex",
    "CompletionContext",
    "Ref",
    "absolute_module",
    "analyze",
    "completion_context",
]

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_WORD = re.compile(r"[A-Za-z_][\w]*")
_MAX_FRAGMENT_LINES = 25
_MAX_PATCHES = 8
_IDENT_ASCII = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


class Ref(NamedTuple):
    """A package symbol written at ``[start, end)`` of ``line``.

    ``module``: a module prefix of ``dotted`` an import bound (pass to
    ``resolve(dotted, module=...)``). ``import_path``: resolve with import
    semantics (a segment of ``import a.b`` or ``from a.b import``).
    ``param``: a keyword argument name at a call of ``dotted``.
    """

    line: int
    start: int
    end: int
    dotted: str
    module: str | None = None
    import_path: bool = False
    param: str | None = None


@dataclass(frozen=True)
class Binding:
    """A local name bound by an import (or an instance of a package class)."""

    dotted: str
    module: str | None = None
    import_path: bool = False
    instance: bool = False

    def chain(self, attrs: list[str]) -> tuple[str, str | None]:
        """``(dotted, module hint)`` of ``name.attr1.attr2``."""
        dotted = ".".join([self.dotted, *attrs])
        hint = self.dotted if self.import_path else self.module
        return dotted, hint


@dataclass
class BufferIndex:
    """The package references of one buffer (see the module docstring)."""

    lines: list[str]
    package: str
    parsed: bool = True
    #: lines before this one were analysed from a parse (the rest is guessed)
    exact_lines: int = 1 << 30
    #: lines that did not parse and were left out of the parse
    guessed: frozenset[int] = frozenset()
    bindings: dict[str, Binding] = field(default_factory=dict)
    refs: dict[int, list[Ref]] = field(default_factory=dict)

    def add(self, ref: Ref) -> None:
        """Record *ref* under its line (:meth:`ref_at` looks up one line's refs)."""
        self.refs.setdefault(ref.line, []).append(ref)

    def ref_at(self, line: int, col: int) -> Ref | None:
        """The reference under ``(line, col)`` (a cursor just after a name
        counts), else a best guess from the text when the buffer did not parse."""
        best: Ref | None = None
        for r in self.refs.get(line, ()):
            if r.start <= col <= r.end and (
                best is None or (r.end - r.start) < (best.end - best.start)
            ):
                best = r
        if best is not None or self.parsed:
            return best
        if line < self.exact_lines and line not in self.guessed:
            return None
        return self._guess(line, col)

    def all_refs(self) -> list[Ref]:
        """Every reference, in line order (what diagnostics and highlights walk)."""
        return [r for line in sorted(self.refs) for r in self.refs[line]]

    def resolve_text(self, expr: str) -> tuple[str, str | None, bool] | None:
        """``(dotted, module hint, import_path)`` of a dotted expression
        written in the buffer (``et``, ``pycsamt.emtools.ss``, ``agent``),
        or None when its root is not a package binding."""
        parts = [p for p in re.split(r"\s*\.\s*", expr.strip()) if p]
        if not parts or not all(p.isidentifier() for p in parts):
            return None
        b = self.bindings.get(parts[0])
        if b is None:
            return None
        if len(parts) == 1:
            return b.dotted, (b.dotted if b.import_path else b.module), b.import_path
        dotted, hint = b.chain(parts[1:])
        return dotted, hint, False

    # -- fallback on text ------------------------------------------------------

    def _guess(self, line: int, col: int) -> Ref | None:
        if not 0 <= line < len(self.lines):
            return None
        text = self.lines[line]
        if not in_code(text[:col]):
            return None  # in a comment or a string
        m = re.match(r"^(\s*from\s+)([\w.]+)(\s+import\b)?", text)
        if m:
            return self._guess_import(line, col, text, m)
        m = re.match(r"^(\s*import\s+)([\w.]+)", text)
        if m and m.start(2) <= col <= m.end(2):
            return _segment_ref(line, m.start(2), m.group(2), col, import_path=True)
        col = min(col, len(text))
        left = col
        while left > 0 and (text[left - 1].isalnum() or text[left - 1] in "_."):
            left -= 1
        right = col
        while right < len(text) and (text[right].isalnum() or text[right] == "_"):
            right += 1
        word = text[left:right]
        if not word or (left > 0 and text[left - 1] in "'\""):
            return None
        parts = word.split(".")
        if not all(p.isidentifier() for p in parts):
            return None
        b = self.bindings.get(parts[0])
        if b is None:
            return None
        pos, k = left, 0
        while k < len(parts) - 1 and col > pos + len(parts[k]):
            pos += len(parts[k]) + 1
            k += 1
        if k == 0:
            hint = b.dotted if b.import_path else b.module
            return Ref(line, pos, pos + len(parts[0]), b.dotted, hint, b.import_path)
        dotted, hint = b.chain(parts[1 : k + 1])
        return Ref(line, pos, pos + len(parts[k]), dotted, hint)

    def _guess_import(self, line: int, col: int, text: str, m: re.Match) -> Ref | None:
        module = m.group(2)
        if m.start(2) <= col <= m.end(2):
            return _segment_ref(line, m.start(2), module, col, import_path=True)
        if (
            not m.group(3)
            or module.startswith(".")
            or module.split(".")[0] != self.package
        ):
            return None
        for w in _WORD.finditer(text, m.end(3)):
            if w.start() <= col <= w.end() and w.group() not in ("as", "import"):
                prev = text[: w.start()].rstrip()
                if prev.endswith(" as"):
                    name = _alias_target(text[m.end(3) : w.start()])
                    if name is None:
                        return None
                    return Ref(line, w.start(), w.end(), f"{module}.{name}", module)
                return Ref(line, w.start(), w.end(), f"{module}.{w.group()}", module)
        return None


def _alias_target(before: str) -> str | None:
    """The name ``N`` of ``... N as`` ending *before* (what searching
    ``([A-Za-z_]\\w*)\\s+as\\s*$`` finds, in one backward pass: the search
    was quadratic on a long word, seconds on one long line)."""
    head = before.rstrip()
    if not head.endswith("as"):
        return None
    head = head[:-2]
    if not head or not head[-1].isspace():
        return None
    head = head.rstrip()
    i = len(head)
    while i > 0 and (head[i - 1].isalnum() or head[i - 1] == "_"):
        i -= 1
    first = next((p for p in range(i, len(head)) if head[p] in _IDENT_ASCII), None)
    return head[first:] if first is not None else None


def _segment_ref(
    line: int, start: int, dotted: str, col: int, *, import_path: bool
) -> Ref | None:
    pos = start
    parts = dotted.split(".")
    for k, p in enumerate(parts):
        if pos <= col <= pos + len(p) and p:
            return Ref(
                line, pos, pos + len(p), ".".join(parts[: k + 1]), None, import_path
            )
        pos += len(p) + 1
    return None


# --------------------------------------------------------------------------
# analysis


class _Analyzer:
    """One parsed text (a whole buffer or a fragment placed at an offset)."""

    def __init__(
        self,
        out: BufferIndex,
        text_lines: list[str],
        current: str | None,
        dl: int = 0,
        dc: int = 0,
    ) -> None:
        self.out = out
        self.pkg = out.package
        self.lines = text_lines
        self.current = current
        self.dl, self.dc = dl, dc

    # -- positions ---------------------------------------------------------------

    def _col(self, line1: int, bcol: int) -> int:
        """Code-point column of a UTF-8 byte column on a 1-based fragment line."""
        if not 0 < line1 <= len(self.lines):
            return bcol
        s = self.lines[line1 - 1]
        if s.isascii():
            return bcol
        return len(s.encode("utf-8")[:bcol].decode("utf-8", "ignore"))

    def _text(self, line1: int) -> str:
        return self.lines[line1 - 1] if 0 < line1 <= len(self.lines) else ""

    def _ref(self, line1: int, c0: int, c1: int, dotted: str, **kw) -> None:
        self.out.add(Ref(line1 - 1 + self.dl, c0 + self.dc, c1 + self.dc, dotted, **kw))

    def _inside(self, dotted: str) -> bool:
        return dotted == self.pkg or dotted.startswith(self.pkg + ".")

    # -- imports ----------------------------------------------------------------

    def _scan_dotted(
        self, line1: int, pos: int, parts: list[str]
    ) -> list[tuple[int, int]] | None:
        """Code-point spans of the parts of a dotted name written from ``pos``."""
        text = self._text(line1)
        spans: list[tuple[int, int]] = []
        for i, part in enumerate(parts):
            while pos < len(text) and (text[pos].isspace() or (i and text[pos] == ".")):
                pos += 1
            if not text.startswith(part, pos):
                return None
            spans.append((pos, pos + len(part)))
            pos += len(part)
        return spans

    def _asname_span(self, line1: int, pos: int, asname: str) -> tuple[int, int] | None:
        text = self._text(line1)
        m = re.compile(r"\s+as\s+(" + re.escape(asname) + r")\b").match(text, pos)
        return (m.start(1), m.end(1)) if m else None

    def _import(self, node: ast.Import) -> None:
        for a in node.names:
            parts = a.name.split(".")
            if parts[0] != self.pkg:
                continue
            col = self._col(a.lineno, a.col_offset)
            spans = self._scan_dotted(a.lineno, col, parts)
            for i, span in enumerate(spans or ()):
                self._ref(a.lineno, *span, ".".join(parts[: i + 1]), import_path=True)
            if a.asname:
                b = Binding(a.name, a.name, import_path=True)
                self.out.bindings[a.asname] = b
                after = spans[-1][1] if spans else col
                sp = self._asname_span(a.lineno, after, a.asname)
                if sp:
                    self._ref(a.lineno, *sp, a.name, import_path=True)
            else:
                self.out.bindings[self.pkg] = Binding(
                    self.pkg, self.pkg, import_path=True
                )

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        return absolute_module("." * node.level + (node.module or ""), self.current)

    def _import_from(self, node: ast.ImportFrom) -> None:
        module = self._absolute(node)
        if module is None or not self._inside(module):
            return
        line1 = node.lineno
        text = self._text(line1)
        pos = self._col(line1, node.col_offset)
        m = re.compile(r"from\s+(\.*)\s*").match(text, pos)
        if m and node.module:
            written = node.module.split(".")
            spans = self._scan_dotted(line1, m.end(), written)
            prefix = module.split(".")[: len(module.split(".")) - len(written)]
            for i, span in enumerate(spans or ()):
                dotted = ".".join([*prefix, *written[: i + 1]])
                self._ref(line1, *span, dotted, import_path=True)
        for a in node.names:
            if a.name == "*":
                continue
            dotted = f"{module}.{a.name}"
            col = self._col(a.lineno, a.col_offset)
            end = col + len(a.name)
            if self._text(a.lineno).startswith(a.name, col):
                self._ref(a.lineno, col, end, dotted, module=module)
            local = a.asname or a.name
            self.out.bindings[local] = Binding(dotted, module)
            if a.asname:
                sp = self._asname_span(a.lineno, end, a.asname)
                if sp:
                    self._ref(a.lineno, *sp, dotted, module=module)

    # -- uses ----------------------------------------------------------------------

    def run(self, tree: ast.Module, imports_only: bool = False) -> None:
        for imp in _imports(tree.body):
            if isinstance(imp, ast.Import):
                self._import(imp)
            else:
                self._import_from(imp)
        if imports_only:
            return
        # the package's own name is a package reference even where the
        # buffer forgot ``import pkg`` (unless it is assigned)
        if not self.out.bindings and not any(self.pkg in ln for ln in self.lines):
            return  # nothing of the package here: skip the expression walk
        self.out.bindings.setdefault(
            self.pkg, Binding(self.pkg, self.pkg, import_path=True)
        )
        nodes = NodeIndex(tree)
        self._drop_rebound(nodes)
        self._instances(nodes)
        bindings = self.out.bindings
        for name in nodes.kind(ast.Name):
            b = bindings.get(name.id)
            if b is None or b.instance or not isinstance(name.ctx, ast.Load):
                continue
            c0 = self._col(name.lineno, name.col_offset)
            hint = b.dotted if b.import_path else b.module
            self._ref(
                name.lineno,
                c0,
                c0 + len(name.id),
                b.dotted,
                module=hint,
                import_path=b.import_path,
            )
        for attr in nodes.kind(ast.Attribute):
            got = self._chain(attr)
            if got is None:
                continue
            dotted, hint = got
            end_l = attr.end_lineno or attr.lineno
            c1 = self._col(end_l, attr.end_col_offset or 0)
            if self._text(end_l)[c1 - len(attr.attr) : c1] == attr.attr:
                self._ref(end_l, c1 - len(attr.attr), c1, dotted, module=hint)
        for call in nodes.kind(ast.Call):
            if not call.keywords:
                continue
            got = self._chain(call.func)
            if got is None:
                continue
            dotted, hint = got
            for kw in call.keywords:
                if kw.arg is None or not hasattr(kw, "lineno"):
                    continue
                c0 = self._col(kw.lineno, kw.col_offset)
                if self._text(kw.lineno).startswith(kw.arg, c0):
                    self._ref(
                        kw.lineno,
                        c0,
                        c0 + len(kw.arg),
                        dotted,
                        module=hint,
                        param=kw.arg,
                    )

    def _chain(self, node: ast.AST) -> tuple[str, str | None] | None:
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        b = self.out.bindings.get(node.id)
        if b is None:
            return None
        attrs.reverse()
        if not attrs:
            return b.dotted, (b.dotted if b.import_path else b.module)
        return b.chain(attrs)

    def _drop_rebound(self, nodes: NodeIndex) -> None:
        """A name bound by an import and also assigned is no longer trusted."""
        stored: set[str] = set()
        for node in nodes.kind(ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                stored.add(node.id)
        for arg in nodes.kind(ast.arg):
            stored.add(arg.arg)
        for d in nodes.of(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            stored.add(d.name)
        for name in stored & set(self.out.bindings):
            if not self.out.bindings[name].instance:
                del self.out.bindings[name]

    def _instances(self, nodes: NodeIndex) -> None:
        """``x = pkg.Class(...)``, ``x`` assigned once: ``x.method`` is known."""
        counts: dict[str, int] = {}
        for name in nodes.kind(ast.Name):
            if isinstance(name.ctx, ast.Store):
                counts[name.id] = counts.get(name.id, 0) + 1
        for n in nodes.of(ast.Assign, ast.AnnAssign):
            target = (
                n.targets[0]
                if isinstance(n, ast.Assign) and len(n.targets) == 1
                else getattr(n, "target", None)
            )
            value = n.value
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Call):
                continue
            if counts.get(target.id) != 1 or target.id in self.out.bindings:
                continue
            got = self._chain(value.func)
            if got is None:
                continue
            self.out.bindings[target.id] = Binding(got[0], got[1], instance=True)


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements at any depth, in source order, visiting statements
    only (no expression is walked)."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack = list(reversed(body))
    while stack:
        st = stack.pop()
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            out.append(st)
            continue
        for f in _BLOCK_FIELDS:
            sub = getattr(st, f, None)
            if sub:
                stack.extend(reversed(sub))
    return out


def _parse(text: str) -> ast.Module | Exception:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return exc


def analyze(text: str, package: str, current_package: str | None = None) -> BufferIndex:
    """Every package reference of a buffer (never raises on bad input).

    *current_package*: the buffer's ``__package__`` when it is a file of the
    package itself (relative imports are resolved from it).

    A buffer that does not parse is retried with each offending line
    replaced by ``pass`` (a few times: the line being typed is the usual
    culprit), so the rest is analysed exactly; the replaced lines are read
    as text. When that does not converge, the longest prefix that parses
    and the import statements after it are analysed.
    """
    # The cyclic GC is paused meanwhile (as the package model does): an AST
    # is acyclic, and the collections its allocations trigger would scan the
    # whole heap (the index) for nothing.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _analyze(text, package, current_package)
    finally:
        if paused:
            gc.enable()


def _analyze(text: str, package: str, current_package: str | None) -> BufferIndex:
    lines = _LINE_SPLIT.split(text)
    out = BufferIndex(lines, package)
    tree = _parse(text)
    if isinstance(tree, ast.Module):
        _Analyzer(out, lines, current_package).run(tree)
        return out
    out.parsed = False
    work = list(lines)
    patched: list[int] = []
    got: ast.Module | Exception = tree
    for _ in range(_MAX_PATCHES):
        ln = (getattr(got, "lineno", None) or 0) - 1
        if not 0 <= ln < len(work) or ln in patched:
            break
        indent = work[ln][: len(work[ln]) - len(work[ln].lstrip())]
        work[ln] = indent + "pass"
        patched.append(ln)
        got = _parse("\n".join(work))
        if isinstance(got, ast.Module):
            _Analyzer(out, work, current_package).run(got)
            out.guessed = frozenset(patched)
            _recover_imports(out, lines, patched, current_package)
            return out
    cut = (getattr(tree, "lineno", None) or 1) - 1
    prefix_tree = None
    for _ in range(12):
        if cut <= 0:
            cut = 0
            break
        got = _parse("\n".join(lines[:cut]))
        if isinstance(got, ast.Module):
            prefix_tree = got
            break
        cut = min(cut - 1, (getattr(got, "lineno", None) or cut) - 1)
    if prefix_tree is not None:
        _Analyzer(out, lines[:cut], current_package).run(prefix_tree)
    out.exact_lines = cut
    _recover_imports(out, lines, range(cut, len(lines)), current_package)
    out.bindings.setdefault(package, Binding(package, package, import_path=True))
    return out


def _recover_imports(
    out: BufferIndex, lines: list[str], starts: Iterable[int], current: str | None
) -> None:
    """Import statements starting on lines *starts*, each parsed on its own
    (with continuation lines); bindings already found are kept."""
    known = dict(out.bindings)
    skip_to = -1
    for i in starts:
        if i < skip_to or not 0 <= i < len(lines):
            continue
        stripped = lines[i].lstrip()
        if not stripped.startswith(("import ", "from ", "import\t", "from\t")):
            continue
        for k in range(1, min(_MAX_FRAGMENT_LINES, len(lines) - i) + 1):
            chunk = lines[i : i + k]
            frag_text = textwrap.dedent("\n".join(chunk))
            frag = _parse(frag_text)
            if not isinstance(frag, ast.Module):
                continue
            if frag.body and all(
                isinstance(s, (ast.Import, ast.ImportFrom)) for s in frag.body
            ):
                indent = len(chunk[0]) - len(chunk[0].lstrip())
                _Analyzer(out, _LINE_SPLIT.split(frag_text), current, i, indent).run(
                    frag, imports_only=True
                )
                skip_to = i + k
            break
    for name, b in known.items():
        out.bindings.setdefault(name, b)


def absolute_module(module: str, current: str | None) -> str | None:
    """``..sub`` relative to the buffer's package *current* (its
    ``__package__``), or *module* itself when it is absolute."""
    level = len(module) - len(module.lstrip("."))
    if not level:
        return module
    if not current:
        return None
    base = current.split(".")
    cut = len(base) - (level - 1)
    if cut <= 0:
        return None
    rest = module[level:]
    return ".".join([*base[:cut], rest] if rest else base[:cut])
