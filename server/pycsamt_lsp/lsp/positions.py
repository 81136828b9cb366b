"""The one conversion between client positions and code-point columns.

LSP positions count characters in the encoding negotiated at ``initialize``
(``general.positionEncodings``: UTF-16 by default, UTF-8 for Neovim >= 0.10
and Helix, UTF-32 for Emacs 30 eglot); the analysis counts code points.
Every position the server reads (hover, definition, completion requests)
or sends (diagnostics, quick-fix edits, hover ranges) goes through
:class:`Positions`, built from the encoding pygls negotiated
(``ls.workspace.position_encoding``), so a squiggle or a fix lands on the
same characters in every client. Lines are split as LSP splits them
(``\\n``, ``\\r\\n``, ``\\r`` only), not as :meth:`str.splitlines` does.

Positions from the client may point anywhere (line 10**6, character
2**31-1, the middle of a surrogate pair): they are clamped to the document,
and a column inside a character rounds down to that character's start.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Positions", "split_lines"]

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_ENCODINGS = ("utf-8", "utf-16", "utf-32")


def split_lines(text: str) -> list[str]:
    """The document's lines as LSP numbers them (at least one, maybe empty)."""
    return _LINE_SPLIT.split(text)


class Positions:
    """Client units <-> code points for one negotiated encoding."""

    def __init__(self, encoding: Any = "utf-16") -> None:
        enc = str(getattr(encoding, "value", encoding) or "utf-16").lower()
        self.encoding = enc if enc in _ENCODINGS else "utf-16"

    @classmethod
    def of(cls, ls: Any) -> Positions:
        """The encoding *ls* negotiated with its client (UTF-16 before that)."""
        try:
            return cls(ls.workspace.position_encoding)
        except RuntimeError:  # no workspace before `initialize`
            return cls()

    def char_units(self, ch: str) -> int:
        """Code units of one character in the negotiated encoding."""
        if self.encoding == "utf-32":
            return 1
        cp = ord(ch)
        if self.encoding == "utf-16":
            return 2 if cp > 0xFFFF else 1
        if cp < 0x80:
            return 1
        if cp < 0x800:
            return 2
        return 3 if cp < 0x10000 else 4

    def units(self, s: str) -> int:
        """Code units of *s* in the negotiated encoding."""
        if s.isascii() or self.encoding == "utf-32":
            return len(s)
        return sum(self.char_units(c) for c in s)

    def to_client(self, lines: Sequence[str], line: int, col: int) -> types.Position:
        """(line, code-point column) -> client position (clamped to *lines*)."""
        if not lines:
            return types.Position(line=0, character=0)
        line = min(max(line, 0), len(lines) - 1)
        text = lines[line]
        col = min(max(col, 0), len(text))
        return types.Position(line=line, character=self.units(text[:col]))

    def from_client(self, lines: Sequence[str], pos: types.Position) -> tuple[int, int]:
        """Client position -> (line, code-point column) inside *lines*."""
        if not lines:
            return 0, 0
        line = min(max(pos.line, 0), len(lines) - 1)
        text = lines[line]
        want = max(pos.character, 0)
        if text.isascii() or self.encoding == "utf-32":
            return line, min(want, len(text))
        seen = 0
        for i, ch in enumerate(text):
            step = self.char_units(ch)
            if seen + step > want:
                return line, i
            seen += step
        return line, len(text)

    def range(
        self, lines: Sequence[str], l0: int, c0: int, l1: int, c1: int
    ) -> types.Range:
        """A code-point span -> client range."""
        return types.Range(
            start=self.to_client(lines, l0, c0), end=self.to_client(lines, l1, c1)
        )

    def range_from_client(
        self, lines: Sequence[str], rng: types.Range
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """A client range -> ((line, col), (line, col)) in code points."""
        return self.from_client(lines, rng.start), self.from_client(lines, rng.end)
