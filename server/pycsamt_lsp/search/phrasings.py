"""Chunks that only list ways to phrase a request (issue 14).

A section such as "How users ask about data quality" followed by quoted
questions tells a reader nothing they can act on: it matches many queries
(it is made of queries) yet answers none. Retrieval may still return it,
but it is never the body of an offline answer; the answer composer skips it
(``answer/evidence.py`` and ``answer/offline.py`` call :func:`is_phrasing_list`).
"""

from __future__ import annotations

import re

__all__ = ["is_phrasing_list"]

_HEADING = re.compile(
    r"\b(how (users|people|you) (ask|phrase|say|word)|ways to (ask|phrase|say)|"
    r"phrasings?|(example|sample|typical) (questions|queries|requests|prompts))\b",
    re.I,
)
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)$")
#: a quoted request: "...", “...” or '...' (not `code`), maybe with a trailing mark
_QUOTED = re.compile(r"^[\"“‘'].*[\"”’'][.,;:]?$")
_SKIP = re.compile(r"^(Document|Workflow|Module|File|Symbol)\s*:|^#+\s|^[=\-~^*]{3,}$")


def is_phrasing_list(text: str, heading: str | None = None) -> bool:
    """True when *text* is nothing but a list of ways to ask for something.

    Its body lines (headers, the heading and reST adornments aside) must all
    but one be list items, at least two; and either 80 % of the items are
    quoted or end with a question mark, or the section heading says it lists
    phrasings ("How users ask ...", "Example questions", ...).
    """
    lines = [ln.strip() for ln in (text or "").splitlines()]
    body = [ln for ln in lines if ln and not _SKIP.match(ln)]
    if heading:
        body = [ln for ln in body if ln.lstrip("#").strip() != heading.strip()]
    items = [m.group(1).strip() for ln in body if (m := _ITEM.match(ln))]
    if len(items) < 2 or len(items) < len(body) - 1:
        return False
    asked = sum(1 for it in items if _QUOTED.match(it) or it.endswith("?"))
    if asked >= 0.8 * len(items):
        return True
    return bool(heading and _HEADING.search(heading))
