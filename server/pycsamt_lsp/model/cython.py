"""The Python-visible namespace of a Cython ``.pyx`` module, read as text.

Why: a checkout (or a wheel such as lxml's) has the ``.pyx`` next to, or
instead of, the compiled ``.so``. Without it the model must either call every
name of ``lxml.etree`` unknown (weak) or, from a source checkout that has no
``.so`` at all, claim the module does not exist (a false error on every real
import). Cython is not Python, so the source is never parsed with ``ast``
directly: it is split into logical lines (strings, comments, brackets and
continuations respected), ``include "x.pxi"`` files are spliced in, and every
top-level statement that creates a *Python-visible* module attribute becomes a
line of a small Python stub that :class:`~pycsamt_lsp.model.package.ModuleInfo`
then models like any other module:

* ``def`` / ``async def`` / ``cpdef`` functions -> ``def name(*args, **kwargs)``
  (Cython parameter syntax is not Python; no keyword is ever rejected);
* ``class`` / ``cdef class`` (any of ``public``/``api``/``final``) -> a class
  with an unmodelled base, so its attributes stay unknown;
* ``cpdef enum``: the enum and its members;
* imports (``cimport`` left out: compile-time only), assignments (verbatim
  when they are Python, else their target names), ``for``/``with ... as``
  targets; statements inside top-level ``if``/``try``/``IF`` blocks count as
  (conditional) bindings;
* ``cdef`` variables and functions, ``ctypedef``, ``DEF``, ``cdef extern``
  blocks create nothing a Python import can reach, and are left out.

Anything the stub cannot represent keeps the namespace open (``open_reason``):
``globals()``/``vars()``/``sys.modules[...]``/``exec`` in code (not in
strings), a module ``__getattr__``, or an ``include`` that cannot be read. An
open namespace answers unknown (a warning), never absent.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CythonStub", "cython_stub"]

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CDEF_CLASS = re.compile(
    rf"^cdef\s+(?:(?:public|api|final|readonly)\s+)*class\s+({_IDENT})"
)
_CLASS = re.compile(rf"^class\s+({_IDENT})")
_DEF = re.compile(rf"^(?:async\s+)?def\s+({_IDENT})\s*\(")
_CPDEF = re.compile(r"^cpdef\s")
_CPDEF_ENUM = re.compile(rf"^cpdef\s+enum\s+(?:class\s+)?({_IDENT})")
_INCLUDE = re.compile(r"""^include\s+(['"])(.+?)\1""")
_FOR = re.compile(r"^(?:async\s+)?for\s+(.+?)\s+in\s")
_WITH_AS = re.compile(rf"\bas\s+({_IDENT})\s*[,:)]")
_OPENING = re.compile(
    r"\b(globals|vars|locals)\s*\(\s*\)|\bsys\.modules\s*\[|\bexec\s*\(|__dict__\b"
)
_BLOCK_WORDS = (
    "if",
    "elif",
    "else",
    "try",
    "except",
    "finally",
    "for",
    "while",
    "with",
    "IF",
    "ELIF",
    "ELSE",
    "async",
)
_NO_BINDING_WORDS = (
    "cdef",
    "ctypedef",
    "DEF",
    "cimport",
    "pass",
    "assert",
    "raise",
    "return",
    "print",
    "global",
    "nonlocal",
    "break",
    "continue",
)


@dataclass
class CythonStub:
    """The stub source, its line map (stub line -> source line), openness."""

    source: str
    lines: dict[int, int]
    open_reason: str | None


@dataclass(slots=True)
class _Line:
    line: int  # 1-based line of the statement's start in its file
    indent: int
    text: str  # the statement, comments removed, continuation lines joined
    code: str  # the same with string literal contents blanked


def _logical_lines(src: str) -> list[_Line]:
    """Split Cython (or Python) text into logical lines.

    Strings (single, triple, with prefixes), comments, bracket nesting and
    backslash continuations are respected, so a ``#`` or a newline inside a
    string or a bracket never splits a statement."""
    out: list[_Line] = []
    text: list[str] = []
    code: list[str] = []
    depth = 0
    line = 1
    start = 1
    i = 0
    n = len(src)
    at_start = True
    indent = 0
    while i < n:
        c = src[i]
        if at_start:
            if c in " \t":
                indent += 8 - indent % 8 if c == "\t" else 1
                i += 1
                continue
            if c in "\r\n" or c == "#":
                if c == "#":
                    while i < n and src[i] != "\n":
                        i += 1
                    continue
                if c == "\n":
                    line += 1
                indent = 0
                i += 1
                continue
            at_start = False
            start = line
        if c == "#":
            while i < n and src[i] != "\n":
                i += 1
            continue
        if c in "'\"":
            q = src[i : i + 3] if src[i : i + 3] in ("'''", '"""') else c
            j = i + len(q)
            while j < n:
                if src[j] == "\\":
                    j += 2
                    continue
                if src.startswith(q, j):
                    break
                if src[j] == "\n" and len(q) == 1:
                    break  # unterminated single-quoted string: stop at EOL
                j += 1
            lit = src[i : j + len(q)]
            text.append(lit)
            code.append(q + q)
            line += lit.count("\n")
            i = j + len(q)
            continue
        if c == "\\" and src.startswith("\n", i + 1):
            text.append(" ")
            code.append(" ")
            line += 1
            i += 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "\n":
            line += 1
            if depth == 0:
                stmt = "".join(text).strip()
                if stmt:
                    out.append(_Line(start, indent, stmt, "".join(code).strip()))
                text, code = [], []
                at_start, indent = True, 0
                i += 1
                continue
            c = " "
        text.append(c)
        code.append(c)
        i += 1
    stmt = "".join(text).strip()
    if stmt:
        out.append(_Line(start, indent, stmt, "".join(code).strip()))
    return out


def _parses(stmt: str) -> bool:
    try:
        ast.parse(stmt)
    except (SyntaxError, ValueError):
        return False
    return True


def _targets(lhs: str) -> list[str]:
    """Names bound by an assignment target list (``a, (b, c)`` -> a, b, c)."""
    lhs = lhs.split(":", 1)[0]  # annotated: ``x: int``
    return [
        t
        for t in re.split(r"[\s,()\[\]*]+", lhs)
        if re.fullmatch(_IDENT, t) and t not in ("cdef", "object")
    ]


def _split_assign(code: str) -> list[str] | None:
    """Target texts of a (chained) assignment, or None if it is no assignment."""
    depth = 0
    parts: list[str] = []
    last = 0
    for i, c in enumerate(code):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            prev = code[i - 1] if i else ""
            nxt = code[i + 1] if i + 1 < len(code) else ""
            if nxt == "=" or prev in "=!<>+-*/%&|^@:":
                if prev in "+-*/%&|^@" and nxt != "=":
                    return None  # augmented assignment: binds nothing new
                continue
            parts.append(code[last:i])
            last = i + 1
    return parts or None


class _Builder:
    def __init__(
        self, read_include: Callable[[str], str | None] | None, max_depth: int = 8
    ) -> None:
        self.read_include = read_include
        self.max_depth = max_depth
        self.stmts: list[tuple[int, str]] = []
        self.open_reason: str | None = None

    def emit(self, line: int, stmt: str) -> None:
        self.stmts.append((line, stmt))

    def open(self, why: str) -> None:
        if self.open_reason is None:
            self.open_reason = why

    def run(self, lines: list[_Line], depth: int = 0, at: int | None = None) -> None:
        i = 0
        while i < len(lines):
            ln = lines[i]
            base = ln.indent
            j = i + 1
            while j < len(lines) and lines[j].indent > base:
                j += 1
            self.statement(ln, lines[i + 1 : j], depth, ln.line if at is None else at)
            i = j

    def statement(self, ln: _Line, body: list[_Line], depth: int, at: int) -> None:
        s, code = ln.text, ln.code
        if _OPENING.search(code):
            self.open(f"Cython module touches its namespace dynamically: {s[:60]}")
        word = re.match(r"[A-Za-z_]+", s)
        first = word.group(0) if word else ""
        m = _INCLUDE.match(s)
        if m:
            self.include(m.group(2), depth, at)
            return
        if first in ("from", "import"):
            if " cimport " in f" {code} " or first == "cimport":
                return
            if _parses(s):
                self.emit(at, s)
            return
        if s.startswith("@"):
            return
        m = _DEF.match(s)
        if m:
            name = m.group(1)
            if name == "__getattr__":
                self.open("Cython module defines __getattr__")
            self.emit(at, f"def {name}(*args, **kwargs): ...")
            return
        m = _CPDEF_ENUM.match(s)
        if m:
            self.emit(at, f"{m.group(1)} = None")
            for b in body:
                for t in _targets(b.code.split("=", 1)[0]):
                    self.emit(at, f"{t} = None")
            return
        if _CPDEF.match(s):
            head = code.split("(", 1)[0].split()
            if head and re.fullmatch(_IDENT, head[-1]):
                self.emit(at, f"def {head[-1]}(*args, **kwargs): ...")
            return
        m = _CDEF_CLASS.match(s) or _CLASS.match(s)
        if m:
            self.emit(at, f"class {m.group(1)}(__pyx_unmodelled_base__): ...")
            return
        if first in _NO_BINDING_WORDS:
            return
        if first in _BLOCK_WORDS and code.endswith(":"):
            if first in ("for",) or s.startswith("async for"):
                fm = _FOR.match(s)
                if fm:
                    for t in _targets(fm.group(1)):
                        self.emit(at, f"{t} = None")
            if first in ("with",) or s.startswith("async with"):
                for t in _WITH_AS.findall(code[:-1] + ":"):
                    self.emit(at, f"{t} = None")
            inner = [
                _Line(b.line, b.indent, b.text, b.code) for b in body
            ]  # a nested block: its first level acts as top level
            if inner:
                self.run(_dedent(inner), depth, None if at == ln.line else at)
            return
        if first == "del":
            return  # keeping the name is the safe side
        parts = _split_assign(code)
        if parts:
            if _parses(s):
                self.emit(at, s)
            else:
                for p in parts:
                    for t in _targets(p):
                        self.emit(at, f"{t} = None")

    def include(self, path: str, depth: int, at: int) -> None:
        if depth >= self.max_depth:
            self.open(f"include nesting too deep at {path}")
            return
        text = self.read_include(path) if self.read_include else None
        if text is None:
            self.open(f"cython-include {path!r} not read")
            return
        self.run(_logical_lines(text), depth + 1, at)


def _dedent(lines: list[_Line]) -> list[_Line]:
    base = min(x.indent for x in lines)
    return [_Line(x.line, x.indent - base, x.text, x.code) for x in lines]


def cython_stub(
    text: str, read_include: Callable[[str], str | None] | None = None
) -> CythonStub:
    """The Python stub of a ``.pyx`` text (see the module docstring).

    ``read_include(path)`` returns the text of an ``include`` (the path as
    written, relative to the including file) or None; without it, a module
    that includes anything stays open."""
    b = _Builder(read_include)
    b.run(_logical_lines(text))
    out = ["from cython import __pyx_unmodelled_base__"]
    lines = {1: 1}
    at = 2  # the stub line the next statement starts on
    for line, stmt in b.stmts:
        out.append(stmt)
        for k in range(stmt.count("\n") + 1):
            lines[at + k] = line
        at += stmt.count("\n") + 1
    return CythonStub("\n".join(out) + "\n", lines, b.open_reason)
