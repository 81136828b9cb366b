"""The query grammar of developer search: identifiers, words, parts, paths.

A named identifier becomes a *definition target* (its ``def``/``class``
outranks any mention), plain words and short runs of them may still name a
definition (``static shift agent`` -> ``StaticShiftAgent``), identifier
parts match inside other names, and a path or dotted module narrows files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.text.identifiers import (
    GRAMMAR_WORDS,
    is_code_identifier,
    split_identifier,
)

__all__ = ["Query", "Target", "Term", "parse_query"]

# -- query model -------------------------------------------------------------------

# Grammar never names code; the developer words below usually frame the
# question ("where is X implemented?") but are searched when nothing else is.
_STOP = GRAMMAR_WORDS | frozenset(
    str.split(
        "find get show see look implemented implementation implements defined define "
        "defines definition located location lives source code function functions "
        "method methods class classes file files line lines module modules called "
        "call calls use used using handled handle happens test tests unit example "
        "examples"
    )
)
_QTOKEN = re.compile(
    r"`([^`]+)`|([A-Za-z0-9_][A-Za-z0-9_./-]*[A-Za-z0-9_]|[A-Za-z0-9_])"
)
_W_IDENT, _W_WORD, _W_PART = 3.0, 1.0, 0.35


# Every pattern starts with a literal so the regex engine can jump between
# candidate positions (20-50x faster than a leading look-behind or a scoped
# (?i:...) group); boundary checks are look-behinds placed *after* it.
# Whole identifiers and snake_case components are matched on the lowercased
# text; camelCase components need the original case.


def _ident_patterns(
    first: str, rest: str = ""
) -> tuple[tuple[re.Pattern[str], bool], ...]:
    """A whole identifier (``first`` + regex ``rest``), any case."""
    f = re.escape(first)
    return ((re.compile(rf"{f}(?<![a-z0-9_]{f}){rest}(?![a-z0-9_])"), True),)


def _component_patterns(
    w: str, plural: bool
) -> tuple[tuple[re.Pattern[str], bool], ...]:
    """*w* as a word or as a component of a snake_case / camelCase name."""
    e, s = re.escape(w), "(?:e?s)?" if plural else ""
    pats = [(rf"{e}(?<![a-z0-9]{e}){s}(?![a-z])", True)]
    if w[:1].isalpha():
        cap = re.escape(w[:1].upper() + w[1:])
        pats += [
            (rf"{cap}(?<=[a-z0-9]{cap}){s}(?![a-z])", False),  # inner: staticShift
            (rf"{cap}(?<![A-Za-z0-9]{cap})(?=[A-Z])", False),  # leading: ShiftAgent
            (rf"{e}(?<![A-Za-z0-9]{e})(?=[A-Z])", False),  # leading: shiftAgent
        ]
    return tuple((re.compile(p), on_low) for p, on_low in pats)


@dataclass(frozen=True)
class Term:
    """One query term with its weight and compiled patterns (see :func:`parse_query`).

    ``kind`` decides the weight: a whole identifier, a plain word, or a part
    of a split identifier.
    """

    low: str  # the key
    probe: str  # a lowercase literal every match contains (cheap pre-filter)
    kind: str  # identifier | word | part
    weight: float
    patterns: tuple[tuple[re.Pattern[str], bool], ...]  # (pattern, on lowercased text)

    def matches(self, text: str, low: str) -> list[tuple[int, bool]]:
        """``(offset, offset is in low)`` of every match."""
        return [
            (m.start(), on_low)
            for pat, on_low in self.patterns
            for m in pat.finditer(low if on_low else text)
        ]


@dataclass(frozen=True)
class Target:
    """A name whose definition outranks any mention of it."""

    name: str
    qualifier: str | None
    term: int  # index of its term (for idf and the pre-filter)
    strength: float  # 1 for a named identifier, 0.5 for a plain word
    leaf: re.Pattern[str]  # full-matches a def/class name
    defs: tuple[re.Pattern[str], ...]  # def/class NAME, on lowercased text
    assign: re.Pattern[str]  # NAME = at column 0, on lowercased text

    def find(self, low: str) -> tuple[str, int] | None:
        """``("def" | "assign", offset)`` of the first definition in *low*."""
        best = None
        for pat in self.defs:
            for m in pat.finditer(low):
                start = low.rfind("\n", 0, m.start()) + 1
                if _DEF_PREFIX.fullmatch(low, start, m.start()):
                    best = m.start() if best is None else min(best, m.start())
                    break
        if best is not None:
            return "def", best
        found = self.assign.search(low)
        return ("assign", found.start()) if found else None


_DEF_PREFIX = re.compile(r"[ \t]*(?:async[ \t]+)?")


@dataclass
class Query:
    """A parsed developer query: its terms, the symbols it names as definition
    targets, and path hints (a hit under a hinted path ranks higher).
    """

    terms: list[Term] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def add(self, low: str, kind: str, rest: str = "", label: str = "") -> int:
        """Add a term (once); ``rest`` continues an n-gram after its first word."""
        key = label or low
        for i, t in enumerate(self.terms):
            if t.low == key:
                return i  # identifiers are added before words, words before parts
        weight = {"identifier": _W_IDENT, "word": _W_WORD, "part": _W_PART}[kind]
        pats = (
            _ident_patterns(low, rest)
            if kind == "identifier"
            else _component_patterns(low, kind == "word")
        )
        self.terms.append(Term(key, low, kind, weight, pats))
        return len(self.terms) - 1

    def add_target(
        self, name: str, qualifier: str | None = None, kind: str = "identifier"
    ) -> None:
        """A def target: an identifier, a plain word, or an n-gram ``a_b_c``."""
        words = name.lower().split("_") if kind == "ngram" else [name.lower()]
        first = words[0]
        rest = "".join(f"_?{re.escape(w)}" for w in words[1:])
        core = re.escape(first) + rest
        if any(t.leaf.pattern == core for t in self.targets):
            return
        label = "_".join(words)
        idx = self.add(first, "word" if kind == "word" else "identifier", rest, label)
        f = re.escape(first)
        tail = rf"{rest}(?![a-z0-9_])"
        self.targets.append(
            Target(
                name if kind != "ngram" else label,
                qualifier,
                idx,
                0.5 if kind == "word" else 1.0,
                re.compile(core, re.I),
                tuple(re.compile(rf"{kw}[ \t]+{f}{tail}") for kw in ("def", "class")),
                re.compile(rf"{f}(?<![^\n]{f}){rest}[ \t]*(?::[^=\n]*)?=(?!=)"),
            )
        )


def _query_tokens(query: str) -> list[tuple[str, bool]]:
    """``(token, quoted)``: backticked text is code even when it looks like a word."""
    out: list[tuple[str, bool]] = []
    for m in _QTOKEN.finditer(query):
        if m.group(1) is not None:
            out.extend((t.strip("."), True) for t in re.findall(r"[\w./]+", m.group(1)))
        else:
            out.append((m.group(2).strip("."), False))
    return [(t, q) for t, q in out if t]


def parse_query(query: str, profile: Profile) -> Query:
    """Identifiers (def targets), plain words, identifier parts and path hints."""
    q = Query()
    words: list[str] = []
    parts: list[str] = []
    for tok, quoted in _query_tokens(query):
        if "/" in tok or tok.endswith((".py", ".md", ".rst")):
            hint = re.sub(r"\.(py|pyi|md|rst)$", "", tok.lower()).strip("/")
            if hint:
                q.hints.append(hint)
            continue
        comps = [c for c in tok.split(".") if c]
        if len(comps) > 1:  # pkg.module.Class.method or Class.method
            if comps[0] == profile.package:
                q.hints.append("/".join(comps))
            comps = [c for c in comps if c != profile.package and len(c) > 1]
            for i, c in enumerate(comps):
                if i == len(comps) - 1:
                    q.add_target(c, comps[i - 1] if i else None)
                elif is_code_identifier(c) or c[:1].isupper():
                    q.add(c.lower(), "identifier")
                else:
                    words.append(c.lower())
                parts.extend(split_identifier(c))
        elif quoted or is_code_identifier(tok):
            q.add_target(tok)
            parts.extend(split_identifier(tok))
        else:
            words.append(tok.lower())
    stop = _STOP | {profile.package.lower()}
    kept = [w for w in words if w not in stop and len(w) > 1]
    for n in (3, 2):  # "static shift agent" may name StaticShiftAgent
        for i in range(len(kept) - n + 1):
            run = kept[i : i + n]
            q.add_target("_".join(run), kind="ngram")
    for w in kept:  # a plain word may still be a definition's exact name
        q.add_target(w, kind="word")
    for p in parts:
        if p not in stop and len(p) > 1:
            q.add(p, "part")
    if not q.terms and not q.hints:  # only framing words: search those, not grammar
        for w in words:
            if w not in GRAMMAR_WORDS and len(w) > 1:
                q.add(w, "word")
    return q
