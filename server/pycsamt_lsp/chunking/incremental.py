"""Re-parsing a saved module in its changed top-level statements only.

A save usually changes a few lines of one function. Parsing the whole file
again was most of save -> searchable for a large module (``ast.parse`` of
the 239 KB ``pycsamt/utils/funcutils.py`` is ~0.1-0.2 s; issue 18). The
previous tree of a recently parsed file is kept (:class:`TreeCache`, a few
files, owned by the workspace), and a new text is parsed as:

* the top-level statements that lie wholly in the lines both versions share
  at the start: reused as they are;
* those wholly in the lines shared at the end: reused, their line numbers
  shifted by the change in line count;
* the lines in between: parsed alone, at their line offset.

The result is the tree ``ast.parse`` gives for the whole text (the same
nodes, fields and positions; tests compare ``ast.dump(...,
include_attributes=True)`` on real files under random edits). Whenever the
region alone does not parse (a change that joins statements, an ``else:``
added to an ``if`` above, a decorator put before an unchanged ``def``), the
region holds a ``__future__`` import (legal only at the top of the file) or
the text has line breaks other than ``\\n``, the whole text is parsed
instead, so a syntax error is reported exactly as before. (Of the future
flags only ``barry_as_FLUFL`` changes parsing; a text naming it is parsed
whole.)
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from functools import cache

from pycsamt_lsp.index.heap import paused_gc

__all__ = ["TreeCache", "parse_module"]

# Files smaller than this are parsed whole: the gain would be a millisecond.
MIN_CHARS = 16_000


class TreeCache:
    """The last trees of a few files (``rel -> (text, tree)``), most recent last.

    Bounded by count and by total characters, since a tree costs ~30 bytes
    of heap per source character (7.2 MB for the 245 KB funcutils.py): at
    most ~30 MB, for the two files edited last; the server's settled memory
    (before any save) holds none.
    """

    def __init__(self, max_files: int = 2, max_chars: int = 1_000_000) -> None:
        self.max_files = max_files
        self.max_chars = max_chars
        self._items: OrderedDict[str, tuple[str, ast.Module]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, rel: str) -> tuple[str, ast.Module] | None:
        """Remove and return the entry of *rel* (its tree is about to be reused
        and shifted in place, so nobody else may hold it meanwhile)."""
        with self._lock:
            return self._items.pop(rel, None)

    def put(self, rel: str, text: str, tree: ast.Module) -> None:
        """Remember *tree* as the parse of *text* (large files only)."""
        if len(text) < MIN_CHARS or len(text) > self.max_chars:
            return
        with self._lock:
            self._items.pop(rel, None)
            self._items[rel] = (text, tree)
            while len(self._items) > self.max_files or (
                sum(len(t) for t, _ in self._items.values()) > self.max_chars
            ):
                self._items.popitem(last=False)

    def prime(self, rel: str, text: str) -> bool:
        """Parse *text* (the file as an editor opened it) and keep its tree,
        so the file's first save re-parses only what it changed (without it
        the first save parses the whole file: 1.6x its ``ast.parse`` for the
        239 KB funcutils.py instead of ~1.05x). True when a tree was kept.

        Bounded like :meth:`put` (files of 16,000 characters to 1 M only),
        and a tree already kept for *rel* (a save that came first) is left
        alone. Called off the event loop: ~0.1 s for the largest module.
        """
        if len(text) < MIN_CHARS or len(text) > self.max_chars:
            return False
        with self._lock:
            if rel in self._items:
                return False
        try:
            with paused_gc():  # acyclic: no collection walks it meanwhile
                tree = ast.parse(text, filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False  # the save reports it
        with self._lock:
            if rel in self._items:
                return False
        self.put(rel, text, tree)
        return True

    def forget(self, rel: str) -> None:
        """Drop the entry of *rel* (deleted or skipped file)."""
        with self._lock:
            self._items.pop(rel, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def parse_module(
    text: str, rel: str, cache: TreeCache | None = None
) -> tuple[ast.Module, bool]:
    """``(tree, incremental)``: the tree of *text*; raises what ``ast.parse``
    raises. *incremental* says whether only the changed statements were
    parsed. The tree is remembered in *cache* (when given) for the next save.
    """
    prev = cache.take(rel) if cache is not None else None
    tree = _spliced(prev, text, rel) if prev is not None else None
    incremental = tree is not None
    if tree is None:
        tree = ast.parse(text, filename=rel)
    if cache is not None:
        cache.put(rel, text, tree)
    return tree, incremental


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _spliced(prev: tuple[str, ast.Module], text: str, rel: str) -> ast.Module | None:
    """The tree of *text* from the previous parse, or None to parse it whole."""
    old_text, old_tree = prev
    if "\r" in text or "\r" in old_text or "barry_as_FLUFL" in text:
        return None  # the tokenizer's other line breaks; the one parsing flag
    old = old_text.split("\n")
    new = text.split("\n")
    n = min(len(old), len(new))
    pre = 0
    while pre < n and old[pre] == new[pre]:
        pre += 1
    if pre == len(old) == len(new):
        return old_tree  # same text
    suf = 0
    while suf < n - pre and old[-1 - suf] == new[-1 - suf]:
        suf += 1
    # 1-based old lines [first, last] changed (empty for a pure insertion)
    first, last = pre + 1, len(old) - suf
    body = old_tree.body
    before = [s for s in body if _end(s) < first]
    after = [s for s in body if _start(s) > last]
    if len(before) + len(after) > len(body):
        return None  # a statement both before and after: cannot happen
    lo = _end(before[-1]) + 1 if before else 1  # first line of the region
    hi_old = _start(after[0]) - 1 if after else len(old)  # last, old numbering
    delta = len(new) - len(old)
    hi_new = hi_old + delta
    if hi_new < lo - 1:
        return None
    # blank lines first: the region's nodes get their line numbers as parsed
    region = "\n" * (lo - 1) + "\n".join(new[lo - 1 : hi_new])
    if "__future__" in region:
        return None  # legal only at the top of the whole file: its parse decides
    try:
        mid = ast.parse(region, filename=rel)
    except (SyntaxError, ValueError):
        return None  # the whole parse reports it (or sees it is fine in context)
    if delta:
        _shift(after, delta)
    return ast.Module(body=[*before, *mid.body, *after], type_ignores=[])


#: fields that never hold a positioned node: names and flags, constants'
#: values aside (``Constant.value`` is skipped at the pop), operators and
#: expression contexts (nodes without positions)
_NOT_NODES = frozenset(
    (
        "ctx",
        "op",
        "ops",
        "id",
        "name",
        "attr",
        "arg",
        "module",
        "kind",
        "type_comment",
        "level",
        "conversion",
        "is_async",
        "simple",
        "kwd_attrs",
        "lineno",
        "col_offset",
        "end_lineno",
        "end_col_offset",
    )
)


@cache
def _spec(cls: type) -> tuple[bool, tuple[str, ...]]:
    """Per node class: (has line numbers, the fields that may hold nodes)."""
    if issubclass(cls, ast.AST):
        return "lineno" in cls._attributes, tuple(
            f for f in cls._fields if f not in _NOT_NODES
        )
    return False, ()  # a str of Global.names, a None of Dict.keys, a constant


def _shift(nodes: list[ast.stmt], delta: int) -> None:
    """``ast.increment_lineno`` over *nodes*, without ``ast.walk``'s generators
    and looking only into the fields of each node class that can hold nodes
    (a table per class; 3-4x faster than testing every field's value)."""
    stack: list[object] = list(nodes)
    pop, push, extend, spec_of = stack.pop, stack.append, stack.extend, _spec
    while stack:
        node = pop()
        spec = spec_of(node.__class__)  # type: ignore[arg-type]
        if spec[0]:
            node.lineno += delta  # type: ignore[attr-defined]
            end = node.end_lineno  # type: ignore[attr-defined]
            if end is not None:
                node.end_lineno = end + delta  # type: ignore[attr-defined]
        for name in spec[1]:
            value = getattr(node, name, None)
            if value is None:
                continue
            if value.__class__ is list:
                extend(value)
            else:
                push(value)
