"""Text normalisation and cue matching shared by the router's parts.

Cue words live in the profile as plain phrases. Both the request and every
cue go through :func:`normalise`, so ``"U-Net"``, ``"u net"`` and ``"2-D"`` /
``"2d"`` meet on the same spelling, and matching is a substring test on a
space-padded string: cheap enough to keep routing far below a millisecond.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Cue", "compile_cues", "normalise", "tokens"]

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
