"""What the text before the cursor asks to complete (no model, no LSP).

:func:`completion_context` reads the cursor's line (and, inside a
parenthesised ``from M import (`` list, the lines above it) and says which
namespace is being completed: the names of a module, the submodules of a
package, or the members of a dotted expression. Which names exist is the
model's question (:func:`pycsamt_lsp.analysis.editor.complete`).

Every pattern here runs in time linear in the line: the cursor context is
computed on every keystroke, and a backtracking pattern once froze the
whole server (issue 19; ``re`` holds the GIL while it backtracks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CompletionContext", "completion_context", "in_code"]


@dataclass(frozen=True)
class CompletionContext:
    """What the text before the cursor asks to complete.

    ``kind``: ``names`` (``from M import |``: the names of module ``M``),
    ``modules`` (``import a.b.|`` / ``from a.|``: submodules of ``base``, or
    the package itself when ``base`` is None) or ``attributes``
    (``expr.|``: members of the dotted expression ``base``). ``prefix`` is
    the partial name already typed.
    """

    kind: str
    base: str | None
    prefix: str = ""


# Every repetition below is possessive (``*+``, ``++``) or atomic, so no
# pattern can backtrack into a word it already matched: each runs in time
# linear in the line.  An ordinary line such as ``for station in survey
# stations:`` used to take seconds in ``_NAMES_LINE`` (nested ``\w+`` under an
# optional separator), and ``re`` holds the GIL while it backtracks, which
# froze every other request of the server.
_FROM_IMPORT = re.compile(
    r"^\s*+from\s+(\.*+[\w.]*?)\s++import\s++\(?+\s*+"
    r"(?:\w++(?:\s++as\s++\w++)?+\s*+,\s*+)*+(\w*+)$"
)
_FROM_OPEN = re.compile(r"^\s*+from\s+(\.*+[\w.]*?)\s++import\s*+\(")
_FROM_MODULE = re.compile(r"^\s*+from\s++(\.*+(?:\w++\s*+\.\s*+)*+)(\w*+)$")
_IMPORT_MODULE = re.compile(
    r"^\s*+import\s++(?:[\w.]++(?:\s++as\s++\w++)?+\s*+,\s*+)*+"
    r"((?:\w++\s*+\.\s*+)*+)(\w*+)$"
)
# a line that continues ``from M import (a, b as c,``: the prefix being typed
# and the earlier lines of the parenthesised list
_NAMES_PREFIX = re.compile(r"\s*+(?:\w++(?:\s++as\s++\w++)?+\s*+,\s*+)*+(\w*+)")
_NAMES_LINE = re.compile(r"\s*+(?:\w++(?:\s++as\s++\w++)?+\s*+,?+\s*+)*+(?:#.*)?")
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _is_word(ch: str) -> bool:
    """``re``'s ``\\w`` for one character (letters, digits, underscore)."""
    return ch.isalnum() or ch == "_"


def _attribute_chain(prefix: str) -> tuple[int, str, str] | None:
    """The dotted chain ``a.b.c.par`` that ends *prefix*: ``(start, chain,
    partial)``, the same answer as searching
    ``((?:[A-Za-z_]\\w*\\s*\\.\\s*)+)(\\w*)$`` but in one backward pass (the
    search was quadratic on a long chain: seconds on a 16 KB line)."""
    i = len(prefix)
    while i > 0 and _is_word(prefix[i - 1]):
        i -= 1
    start = None
    j = i
    while True:
        k = j
        while k > 0 and prefix[k - 1].isspace():
            k -= 1
        if k == 0 or prefix[k - 1] != ".":
            break
        k -= 1
        while k > 0 and prefix[k - 1].isspace():
            k -= 1
        end = k
        while k > 0 and _is_word(prefix[k - 1]):
            k -= 1
        first = next((p for p in range(k, end) if prefix[p] in _IDENT_START), None)
        if first is None:
            break
        start = j = first
        if first > k:
            break
    if start is None:
        return None
    return start, prefix[start:i], prefix[i:]


def in_code(prefix: str) -> bool:
    """False inside a string or a comment on this line (a cheap scan)."""
    quote = ""
    i = 0
    while i < len(prefix):
        ch = prefix[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if prefix.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif ch == "#":
            return False
        elif ch in "'\"":
            quote = prefix[i : i + 3] if prefix[i : i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        i += 1
    return not quote


def completion_context(
    lines: list[str], line: int, col: int
) -> CompletionContext | None:
    """The completion asked for at ``(line, col)`` of *lines*, if any."""
    if not 0 <= line < len(lines):
        return None
    prefix = lines[line][:col]
    if not in_code(prefix):
        return None
    m = _FROM_IMPORT.match(prefix)
    if m:
        return CompletionContext("names", m.group(1).replace(" ", ""), m.group(2))
    m = _FROM_MODULE.match(prefix)
    if m:
        base: str | None = re.sub(r"\s+", "", m.group(1)).rstrip(".")
        if not base or set(base) == {"."}:
            base = m.group(1).strip() or None
            if base is None:
                return CompletionContext("modules", None, m.group(2))
        return CompletionContext("modules", base, m.group(2))
    m = _IMPORT_MODULE.match(prefix)
    if m:
        base = re.sub(r"\s+", "", m.group(1)).rstrip(".") or None
        return CompletionContext("modules", base, m.group(2))
    # inside ``from M import (a,\n b`` over several lines
    names = _NAMES_PREFIX.fullmatch(prefix)
    if names:
        for back in range(line - 1, max(line - 30, -1), -1):
            prev = lines[back]
            if ")" in prev:
                break
            mo = _FROM_OPEN.match(prev)
            if mo:
                return CompletionContext("names", mo.group(1), names.group(1))
            if not _NAMES_LINE.fullmatch(prev):
                break
    chain = _attribute_chain(prefix)
    if chain:
        start, dotted, partial = chain
        before = prefix[:start]
        if before and (before[-1].isalnum() or before[-1] in "_)]}'\""):
            return None
        base = re.sub(r"\s+", "", dotted).rstrip(".")
        return CompletionContext("attributes", base, partial)
    return None
