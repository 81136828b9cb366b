"""Text normalisation and cue matching shared by the router's parts.

Cue words live in the profile as plain phrases. Both the request and every
cue go through :func:`normalise`, so ``"U-Net"``, ``"u net"`` and ``"2-D"`` /
``"2d"`` meet on the same spelling, and matching is a substring test on a
space-padded string: cheap enough to keep routing far below a millisecond.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Cue", "CueIndex", "compile_cues", "normalise", "tokens"]

_DIMENSION = re.compile(r"\b([0-9])\s*-?\s*d\b")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalise(text: str) -> str:
    """Lower-case words separated by single spaces, padded with one space each side.

    ``"2-D"``, ``"2 D"`` and ``"2d"`` all become ``"2d"`` (the package writes
    all three); every other non-alphanumeric run becomes a space, so
    ``estimate_ss_ama`` and ``"estimate ss ama"`` are the same text.
    """
    low = _DIMENSION.sub(r"\1d", (text or "").lower())
    return " " + " ".join(_NON_ALNUM.sub(" ", low).split()) + " "


def tokens(text: str) -> list[str]:
    """The words of :func:`normalise` as a list."""
    return normalise(text).split()


@dataclass(frozen=True)
class Cue:
    """One profile phrase, ready to test against a normalised request.

    A cue matches at the start of a word and may end inside one (``"spike"``
    finds ``"spikes"``), unless it was written with a trailing space, which
    asks for whole words (``"ama "`` does not find ``"amazing"``). ``"a ... b"``
    asks for *a* and then *b* anywhere later. ``weight`` is the number of
    words: a longer phrase is more specific evidence than a single word.
    """

    raw: str
    parts: tuple[str, ...]
    weight: float

    def find(self, norm: str) -> int:
        """Index of the match in the normalised text *norm*, or -1."""
        pos = 0
        first = -1
        for part in self.parts:
            i = norm.find(part, pos)
            if i < 0:
                return -1
            if first < 0:
                first = i
            pos = i + len(part) - 1
        return first


def compile_cues(phrases: tuple[str, ...] | list[str]) -> tuple[Cue, ...]:
    """Profile phrases as :class:`Cue` objects (empty phrases are dropped)."""
    out: list[Cue] = []
    for raw in phrases:
        whole = raw.endswith(" ")
        parts: list[str] = []
        n_words = 0
        for seg in raw.split("..."):
            words = normalise(seg).split()
            if not words:
                continue
            n_words += len(words)
            parts.append(" " + " ".join(words) + " ")
        if not parts:
            continue
        # prefix match: drop the trailing space of every part but keep it on
        # the last part for a whole-word cue.
        fixed = [p[:-1] for p in parts[:-1]] + [parts[-1] if whole else parts[-1][:-1]]
        out.append(Cue(raw, tuple(fixed), float(n_words)))
    return tuple(out)


def _key(word: str) -> str:
    return word[:3]


class CueIndex:
    """Cues indexed by the start of their first word, for one pass over a request.

    Testing every cue with ``str.find`` costs a few hundred substring scans per
    request; here each word of the request only meets the cues that can start
    with it, and one :meth:`scan` serves every rule of the router.
    """

    def __init__(self, items: Iterable[tuple[Cue, Any]]) -> None:
        self.by_key: dict[str, list[tuple[int, Cue, Any]]] = {}
        self.gapped: list[tuple[int, Cue, Any]] = []
        for n, (cue, label) in enumerate(items):
            if len(cue.parts) > 1:
                self.gapped.append((n, cue, label))
                continue
            first = cue.parts[0].split()[0]
            self.by_key.setdefault(_key(first), []).append((n, cue, label))
        self.short = tuple(sorted({len(k) for k in self.by_key if len(k) < 3}))

    def _keys(self, word: str) -> list[str]:
        keys = [word[:3]]
        for n in self.short:
            if n < len(word) or (n == len(word) and n < 3):
                k = word[:n]
                if k != keys[0]:
                    keys.append(k)
        return keys

    def scan(self, norm: str) -> dict[Any, list[tuple[Cue, int]]]:
        """Every cue found in the normalised *norm*, once each, grouped by label."""
        out: dict[Any, list[tuple[Cue, int]]] = {}
        seen: set[int] = set()
        by_key = self.by_key
        i = 0
        for word in norm.split():
            for key in self._keys(word):
                for n, cue, label in by_key.get(key, ()):
                    if n not in seen and norm.startswith(cue.parts[0], i):
                        seen.add(n)
                        out.setdefault(label, []).append((cue, i))
            i += len(word) + 1
        for _n, cue, label in self.gapped:
            pos = cue.find(norm)
            if pos >= 0:
                out.setdefault(label, []).append((cue, pos))
        return out

    def at_start(self, norm: str, label: Any) -> Cue | None:
        """The *label* cue the normalised *norm* begins with, or None."""
        words = norm.split()
        if not words:
            return None
        for key in self._keys(words[0]):
            for _, cue, lab in self.by_key.get(key, ()):
                if lab == label and norm.startswith(cue.parts[0]):
                    return cue
        return None
