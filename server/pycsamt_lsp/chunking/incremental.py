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
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.index.heap import paused_gc

if TYPE_CHECKING:
    from pycsamt_lsp.chunking.chunk import Chunk

__all__ = ["Outline", "Outlines", "TreeCache", "outline_of", "parse_module", "rechunk"]

# Files smaller than this are parsed whole: the gain would be a millisecond.
MIN_CHARS = 16_000
#: times :func:`rechunk` widens a region that does not parse alone
_WIDEN = 2


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

    def forget(self, rel: str) -> bool:
        """Drop the entry of *rel* (deleted, skipped or closed file); True
        when there was one."""
        with self._lock:
            return self._items.pop(rel, None) is not None

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


# -- a saved module's chunks without a whole parse --------------------------------
#
# The tree splice above needs the previous tree, so the first save of a file
# nobody opened parsed it whole (1.3-2.4x its ``ast.parse`` for the 239 KB
# funcutils.py; issue 18). A save does not need the whole tree to be made
# searchable, only the chunks of the statements that changed: the chunks of
# the others are in the index already. What is kept per large module instead
# of its tree is an :class:`Outline` (a hash per block of lines, ~12 bytes a
# block), made from the text the index holds, so that a save knows which
# lines it left as they were.

#: line breaks ``ast`` and ``str.splitlines`` (the chunker's line table)
#: count differently, and ``\r``: a text holding one is chunked whole
_ODD_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
#: a line break before a line that starts in column 0 (not blank): where a
#: block of lines starts (a literal first character: ~3x faster to scan for
#: than ``^`` in multi-line mode)
_BLOCK = re.compile(r"\n[^ \t\n]")


class Outline:
    """A text as blocks of lines, each starting at a line that starts in
    column 0: the 0-based line of each block's start and the ``hash()`` of
    its text (in this process only; never persisted). Two texts share their
    first lines as far as their blocks are equal, and their last lines
    likewise, so a save finds the lines it left as they were without the
    previous text (:func:`rechunk`)."""

    __slots__ = ("hashes", "lines", "n_lines")

    def __init__(self, text: str) -> None:
        pos = [0, *(m.start() + 1 for m in _BLOCK.finditer(text))]
        ends = [*pos[1:], len(text)]
        count = text.count
        breaks = [count("\n", a, b) for a, b in zip(pos, ends, strict=True)]
        self.lines = array("l", accumulate(breaks[:-1], initial=0))
        self.hashes = array(
            "q", [hash(text[a:b]) for a, b in zip(pos, ends, strict=True)]
        )
        self.n_lines = self.lines[-1] + breaks[-1] + 1  # len(text.split("\n"))

    def start(self, i: int) -> int:
        """First line of block *i*; past the last block, the text's last line."""
        return self.lines[i] if i < len(self.lines) else self.n_lines - 1

    def common(self, new: Outline) -> tuple[int, int] | None:
        """``(P, S)``: lines ``0..P-1`` of both texts are the same, and the
        old lines from ``S`` on are the new ones from ``S + delta`` on
        (delta: the change in line count); None when the texts are equal."""
        no, nn = len(self.lines), len(new.lines)
        n = min(no, nn)
        oh, nh, ol, nl = self.hashes, new.hashes, self.lines, new.lines
        p = 0
        while p < n and oh[p] == nh[p] and ol[p] == nl[p]:
            p += 1
        if p == no == nn:
            return None
        delta = new.n_lines - self.n_lines
        s = 0
        while (
            s < n - p
            and oh[no - 1 - s] == nh[nn - 1 - s]
            and ol[no - 1 - s] + delta == nl[nn - 1 - s]
        ):
            s += 1
        shared = min(self.start(p), new.start(p))
        return shared, (ol[no - s] if s else self.n_lines)


class Outlines:
    """The :class:`Outline` of each large module as the index holds it
    (``rel -> (sha hex, outline)``), for :func:`rechunk`. Made for every
    indexed module of :data:`MIN_CHARS` or more by one pass over the files
    after the index opens (:meth:`Workspace.prepare_saves`, off the event
    loop), and from each saved text by the save itself."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[str, Outline]] = {}
        self._lock = threading.Lock()

    def get(self, rel: str, sha: str) -> Outline | None:
        """The outline of *rel* when it was made from the content *sha*."""
        with self._lock:
            got = self._items.get(rel)
        return got[1] if got is not None and got[0] == sha else None

    def has(self, rel: str, sha: str) -> bool:
        """True when *rel*'s outline is of the content *sha*."""
        return self.get(rel, sha) is not None

    def put(self, rel: str, sha: str, outline: Outline | None) -> None:
        """Keep *outline* as *rel*'s (None: forget it)."""
        with self._lock:
            if outline is None:
                self._items.pop(rel, None)
            else:
                self._items[rel] = (sha, outline)

    def forget(self, rel: str) -> None:
        """Drop the outline of *rel* (deleted, or no longer large)."""
        self.put(rel, "", None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def outline_of(text: str) -> Outline | None:
    """The outline of a module's text, or None when saves of it are chunked
    whole (small, or line breaks other than ``\\n``)."""
    if len(text) < MIN_CHARS or _ODD_BREAKS.search(text):
        return None
    return Outline(text)


def rechunk(
    rel: str,
    text: str,
    profile: Any,
    old_chunks: Sequence[Chunk],
    old: Outline,
    new: Outline,
) -> list[Chunk] | None:
    """The chunks ``chunk_file`` makes of the saved *text*, from the file's
    chunks in the index (*old_chunks*, made from the text *old* outlines)
    and a parse of the changed statements only; None when the text must be
    chunked whole (that also reports a syntax error exactly as before).

    The lines the save left alone at the start and at the end
    (:meth:`Outline.common`) are cut where the old chunks prove a top-level
    statement boundary: after the last line of a top-level ``def`` or
    ``class`` (whose chunks never depend on the statement after them; a
    constant's does, by its docstring), and before the ``def``/``class``
    line of an undecorated one (a compound statement starts a logical
    line). The lines between are parsed alone at their line offset; when
    they parse (the tokenizer is then at a fresh statement at both ends, so
    the untouched statements parse as before), the file's chunks are the
    old ones before the cut, the region's, and the old ones after it with
    their lines shifted. Everything a chunk holds comes from its own
    statement's lines (and the module docstring from the first statement),
    so these are the chunks of a whole parse; tests compare them with
    ``chunk_file`` under random edits.
    """
    # (masking from its own module: the chunking package imports this one)
    from pycsamt_lsp.chunking.masking import masked
    from pycsamt_lsp.chunking.python import chunk_python, module_name

    if "barry_as_FLUFL" in text:
        return None
    shared = old.common(new)
    if shared is None:
        return list(old_chunks)  # the same text (another encoding of it?)
    keep, tail = shared  # lines [0, keep) the same; old lines [tail, ...) too
    module = module_name(rel) + "."
    head: Chunk | None = None
    tops: list[tuple[int, int, bool]] = []  # (start, end, undecorated) per def/class
    for c in old_chunks:
        meta = c.metadata
        if c.kind == "module_doc":
            head = c
            continue
        if (
            c.kind == "python_symbol"
            and "decorators" in meta
            and c.symbol == module + str(meta.get("name"))
        ):
            tops.append((meta["line_start"], meta["line_end"], not meta["decorators"]))
    if not tops:
        return None  # no cut: the whole file would be the region
    lines = text.split("\n")
    # the cuts on each side, nearest the change first
    los = sorted(
        {
            end + 1
            for _s, end, _p in tops
            if end <= keep and not lines[end - 1].endswith("\\")
        },
        reverse=True,
    )
    his = sorted(
        {start - 1 for start, _e, plain in tops if plain and start - 1 >= tail}
    )
    delta = new.n_lines - old.n_lines
    mid = None
    # a region that does not parse alone may still be a change that parses
    # with the statement next to it (a decorator put before an unchanged
    # def, an ``else:`` added to an ``if``): one statement more each side,
    # twice, before the whole text is parsed instead
    for step in range(_WIDEN + 1):
        lo = los[step] if step < len(los) else 1
        hi_old = his[step] if step < len(his) else old.n_lines
        hi = hi_old + delta  # the region's last line, new numbering
        if hi < lo - 1 or (hi >= lo and lines[hi - 1].endswith("\\")):
            return None
        # (where a ``__future__`` import stands is the compiler's concern, not
        # the parser's: ``ast.parse`` accepts one anywhere, as in a whole parse)
        region = "\n" * (lo - 1) + "\n".join(lines[lo - 1 : hi])
        try:
            mid = ast.parse(region, filename=rel)
            break
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            if lo == 1 and hi_old == old.n_lines:
                return None  # the whole text: its own parse reports it
    if mid is None:
        return None  # the whole parse reports it, or finds it fine in context
    try:  # the region as the source: the chunker's line table of it only
        made = chunk_python(
            rel, region, profile, ast.Module(body=mid.body, type_ignores=[])
        )
    except RecursionError:
        return None  # chunk_file reports it
    made = masked(made, python=True)  # as chunk_file masks (the reused were)
    # len(text.splitlines()), the module docstring's last line (only "\n"
    # breaks here: outline_of refused the others)
    n_lines = max(text.count("\n") + (not text.endswith("\n")), 1)
    out: list[Chunk] = []
    if lo == 1:  # the region holds the first statement: its module docstring
        for c in made:
            if c.kind == "module_doc":
                meta = c.metadata
                out.append(
                    c
                    if meta.get("line_end") == n_lines
                    else replace(c, metadata={**meta, "line_end": n_lines})
                )
    elif head is not None:  # the first statement is an old one
        meta = head.metadata
        out.append(
            head
            if meta.get("line_end") == n_lines
            else replace(head, metadata={**meta, "line_end": n_lines})
        )
    bottom = hi_old + 1  # old chunks from this line on are shifted
    for c in old_chunks:
        if c.kind != "module_doc" and c.metadata["line_start"] < lo:
            out.append(c)
    out.extend(c for c in made if c.kind != "module_doc")
    for c in old_chunks:
        if c.kind == "module_doc":
            continue
        start = c.metadata["line_start"]
        if start < bottom:
            continue
        if delta:
            end = c.metadata["line_end"] + delta
            start += delta
            c = replace(
                c,
                id=f"{rel}:{start}:{end}",
                metadata={**c.metadata, "line_start": start, "line_end": end},
            )
        out.append(c)
    return out
