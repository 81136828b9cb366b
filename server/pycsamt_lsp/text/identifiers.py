"""Identifiers and stopwords: how code names are split into words.

Why one module: the index tokenizer, developer search, the symbol cards and
the package model's suggestions each split ``StaticShiftAgent`` /
``estimate_ss_ama`` with their own regex. One splitter now serves them all:
acronyms stay whole (``HTTPServer`` -> ``HTTP``, ``Server``), digits are
their own part, underscores separate. The package model's suggestions also
also end an acronym before a digit (``ABC1`` -> ``AB``, ``C``, ``1``;
:func:`split_identifier`'s *acronym_before_digit*), the rule they were tuned
with.

Stopwords: :data:`STOPWORDS` are the words a retrieval query drops (grammar
and request phrasing); :data:`GRAMMAR_WORDS` only grammar, which never names
code (developer search keeps request words such as "implemented" as a last
resort).
"""

from __future__ import annotations

import re

__all__ = [
    "GRAMMAR_WORDS",
    "IDENT_PART",
    "STOPWORDS",
    "identifier_parts",
    "is_code_identifier",
    "split_identifier",
]

#: One word of an identifier: an acronym, a (capitalised) word, or a number.
IDENT_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENT_PART_DIGIT = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CAMEL_BOUNDARY = re.compile(r"[a-z0-9][A-Z]")


def identifier_parts(name: str, *, acronym_before_digit: bool = False) -> list[str]:
    """The words of *name* in their original case (underscores separate)."""
    pat = _IDENT_PART_DIGIT if acronym_before_digit else IDENT_PART
    return pat.findall(name)


def split_identifier(name: str, *, acronym_before_digit: bool = False) -> list[str]:
    """The lowercased words of *name*: ``estimate_ss_ama`` -> estimate, ss, ama."""
    return [
        p.lower()
        for p in identifier_parts(name, acronym_before_digit=acronym_before_digit)
    ]


def is_code_identifier(token: str) -> bool:
    """snake_case, _private or camelCase: a name someone typed from code."""
    return "_" in token or bool(_CAMEL_BOUNDARY.search(token))


def _words(text: str) -> frozenset[str]:
    """A word list written as one block of text (easier to read and review)."""
    return frozenset(text.split())


#: Words a retrieval query drops: grammar, request phrasing, generic code words.
STOPWORDS = _words(
    """
    a an the of to for and or in on at by with from is are be do does did how
    what which when where why can could would should i you we my our me it this
    that these those use using used run write get make show please code script
    function class method
    """
)

#: Grammar only: never part of a code name.
GRAMMAR_WORDS = _words(
    """
    a an and are as at be by can could do does did for from has have how i in
    into is it its me my of on or please should tell the their there this to
    was were what when where which who why will with would you your
    """
)
