"""What a docstring says: summary, parameter descriptions, returns.

numpydoc, Google and Sphinx styles are read (whichever a docstring is); a
plain docstring gives only its summary. Inline reST becomes Markdown-ish
text (:func:`clean_rst`). Used by the API cards; nothing is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DocInfo", "clean_rst", "parse_docstring"]


@dataclass(frozen=True)
class DocInfo:
    """What a docstring says: summary, parameter descriptions, returns."""

    summary: str = ""
    params: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    returns_type: str | None = None
    returns: str = ""
    style: str | None = None  # numpy / google / sphinx / None


_ROLE = re.compile(r":(?:[a-zA-Z]+:)*[a-zA-Z]+:`~?\.?([^`<]*?)(?:\s*<[^>]*>)?`")
_LITERAL = re.compile(r"``([^`]+)``")
_NUMPY_RULE = re.compile(r"^\s*(-{3,}|={3,})\s*$")
_NUMPY_PARAM_SECTIONS = frozenset(
    {
        "parameters",
        "other parameters",
        "keyword arguments",
        "keyword args",
        "params",
        "arguments",
        "args",
    }
)
_RETURN_SECTIONS = frozenset({"returns", "return", "yields", "yield"})
_GOOGLE_HEADER = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|"
    r"Other Parameters|Kwargs|Returns|Return|Yields|Yield|Raises|Attributes|"
    r"Examples?|Notes?|See Also|References|Warnings?|Todo|Methods)\s*:\s*$"
)
_GOOGLE_ENTRY = re.compile(
    r"^\s*(\*{0,2}[A-Za-z_][\w]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$"
)
_SPHINX_FIELD = re.compile(
    r"^\s*:(param|parameter|arg|argument|key|keyword|kwarg|type|returns?|rtype|"
    r"yields?|ytype)(?:\s+([^:]*?))?\s*:\s*(.*)$"
)
_SPHINX_ANY_FIELD = re.compile(r"^\s*:[a-zA-Z]+[^:]*:")


def clean_rst(text: str) -> str:
    """Inline reST to Markdown-ish text: roles and literals become code spans."""
    text = _LITERAL.sub(r"`\1`", text)
    return _ROLE.sub(lambda m: f"`{m.group(1).strip()}`", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(lines: list[str]) -> str:
    """The first paragraph of *lines*, joined on one line."""
    out: list[str] = []
    for ln in lines:
        s = ln.strip()
        if not s:
            if out:
                break
            continue
        out.append(s)
    return " ".join(" ".join(out).split())


def _summary(lines: list[str]) -> str:
    out: list[str] = []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if not s:
            if out:
                break
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            _NUMPY_RULE.match(nxt)
            or _GOOGLE_HEADER.match(ln)
            or _SPHINX_ANY_FIELD.match(ln)
            or s.startswith((">>>", ".. "))
        ):
            break
        out.append(s)
    return " ".join(out)


def _numpy_sections(lines: list[str]) -> dict[str, list[str]]:
    """``section title (lower case) -> body lines`` of a numpydoc docstring."""
    sections: dict[str, list[str]] = {}
    cur: list[str] | None = None
    i = 0
    while i < len(lines):
        ln = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if ln.strip() and _NUMPY_RULE.match(nxt) and not _NUMPY_RULE.match(ln):
            cur = sections.setdefault(ln.strip().rstrip(":").lower(), [])
            i += 2
            continue
        if cur is not None:
            cur.append(ln)
        i += 1
    return sections


def _numpy_entries(body: list[str]) -> list[tuple[str, str | None, list[str]]]:
    """``(head, type, description lines)`` entries of a numpydoc section."""
    base = min((_indent(ln) for ln in body if ln.strip()), default=0)
    entries: list[tuple[str, str | None, list[str]]] = []
    for ln in body:
        if not ln.strip():
            if entries:
                entries[-1][2].append("")
            continue
        if _indent(ln) <= base:
            head, sep, typ = ln.strip().partition(" : ")
            if not sep and ln.strip().endswith(" :"):
                head, typ = ln.strip()[:-2], ""
            elif not sep and ":" in ln and not ln.strip().startswith((":", "`")):
                h, _, t = ln.strip().partition(":")
                if re.fullmatch(r"[\w*, ]+", h.strip()):
                    head, typ = h, t
            entries.append((head.strip(), typ.strip() or None, []))
        elif entries:
            entries[-1][2].append(ln)
    return entries


def _parse_numpy(lines: list[str]) -> DocInfo | None:
    sections = _numpy_sections(lines)
    if not sections:
        return None
    params: dict[str, tuple[str | None, str]] = {}
    for name, body in sections.items():
        if name not in _NUMPY_PARAM_SECTIONS:
            continue
        for head, typ, desc in _numpy_entries(body):
            text = _join(desc)
            for n in head.split(","):
                n = n.strip().lstrip("*")
                if n.isidentifier():
                    params.setdefault(n, (typ, text))
    ret_type, ret = None, ""
    for name in ("returns", "yields", "return"):
        ret_body = sections.get(name)
        if not ret_body:
            continue
        entries = _numpy_entries(ret_body)
        if entries:
            head, typ, desc = entries[0]
            # "name : type" or just "type"
            ret_type = typ or head
            ret = _join(desc)
        break
    return DocInfo(
        _summary(lines), params, ret_type, ret, "numpy" if sections else None
    )


def _parse_google(lines: list[str]) -> DocInfo | None:
    params: dict[str, tuple[str | None, str]] = {}
    ret_type, ret = None, ""
    found = False
    i = 0
    while i < len(lines):
        m = _GOOGLE_HEADER.match(lines[i])
        if not m:
            i += 1
            continue
        found = True
        title = m.group(1).lower()
        head_indent = _indent(lines[i])
        body: list[str] = []
        i += 1
        while i < len(lines) and (
            not lines[i].strip() or _indent(lines[i]) > head_indent
        ):
            body.append(lines[i])
            i += 1
        if title in _NUMPY_PARAM_SECTIONS or title == "kwargs":
            base = min((_indent(b) for b in body if b.strip()), default=0)
            cur: list[Any] | None = None
            for b in body:
                if b.strip() and _indent(b) <= base:
                    em = _GOOGLE_ENTRY.match(b)
                    if em:
                        cur = [em.group(1).lstrip("*"), em.group(2), [em.group(3)]]
                        params[cur[0]] = (cur[1], _join(cur[2]))
                        continue
                    cur = None
                elif cur is not None:
                    cur[2].append(b)
                    params[cur[0]] = (cur[1], _join(cur[2]))
        elif title in _RETURN_SECTIONS and ret_type is None and not ret:
            text = _join(body)
            t, sep, rest = text.partition(":")
            if sep and t and len(t) < 60 and " " not in t.strip().replace(", ", ","):
                ret_type, ret = t.strip(), rest.strip()
            else:
                ret = text
    if not found:
        return None
    return DocInfo(_summary(lines), params, ret_type, ret, "google")


def _parse_sphinx(lines: list[str]) -> DocInfo | None:
    params: dict[str, tuple[str | None, str]] = {}
    types_: dict[str, str] = {}
    ret_type, ret = None, ""
    found = False
    i = 0
    while i < len(lines):
        m = _SPHINX_FIELD.match(lines[i])
        if not m:
            i += 1
            continue
        found = True
        tag, arg, text = m.group(1), (m.group(2) or "").strip(), [m.group(3)]
        ind = _indent(lines[i])
        i += 1
        while (
            i < len(lines)
            and lines[i].strip()
            and _indent(lines[i]) > ind
            and not _SPHINX_ANY_FIELD.match(lines[i])
        ):
            text.append(lines[i])
            i += 1
        desc = _join(text)
        if tag in ("param", "parameter", "arg", "argument", "key", "keyword", "kwarg"):
            typ, _, name = arg.rpartition(" ")
            name = name.lstrip("*")
            if name.isidentifier():
                params[name] = (typ.strip() or None, desc)
        elif tag == "type" and arg:
            types_[arg.lstrip("*")] = desc
        elif tag in ("returns", "return", "yields", "yield"):
            ret = desc
        elif tag in ("rtype", "ytype"):
            ret_type = desc
    if not found:
        return None
    for name, typ in types_.items():
        old = params.get(name)
        params[name] = (typ, old[1] if old else "")
    return DocInfo(_summary(lines), params, ret_type, ret, "sphinx")


def parse_docstring(doc: str | None) -> DocInfo:
    """Summary and per-parameter descriptions of a numpydoc, Google or Sphinx
    docstring (whichever it is; a plain docstring gives only the summary)."""
    if not doc:
        return DocInfo()
    lines = doc.expandtabs().splitlines()
    for parse in (_parse_numpy, _parse_sphinx, _parse_google):
        got = parse(lines)
        if got is not None and (got.params or got.returns or got.returns_type):
            return got
    return DocInfo(_summary(lines))
