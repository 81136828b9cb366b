"""Secret masking: the one list of credential shapes, and two ways to apply it.

Why one module: three scrubbers used to exist and disagreed (the dense
backend's did not mask ``sk-`` keys at all). Every pattern any of them
masked is here, so a key shape added once is masked everywhere:

* :func:`mask_secrets` masks source, config and docs shown to a developer
  (line by line: ``name = value`` assignments of secret-looking names, known
  token shapes, private-key blocks) and says how many lines changed;
* :func:`scrub` cleans one error message shown to a user (the caller's own
  key, every known token shape, then a length cap).
"""

from __future__ import annotations

import re

from pycsamt_lsp.text.jsonenc import json_encoder

__all__ = [
    "SCRUB_LIMIT",
    "VALUE_PATTERNS",
    "mask",
    "mask_default",
    "mask_params",
    "mask_secrets",
    "mask_tree",
    "mask_triggered",
    "may_hold_secret",
    "scrub",
]

#: A message shown to the user is cut to this many characters.
SCRUB_LIMIT = 300

_SECRET_NAME = (
    r"(?:api[_-]?key|apikey|secret|passw(?:or)?d|pwd|tokens?|credentials?"
    r"|private[_-]?key|access[_-]?key|auth|authorization)"
)
_ASSIGN = re.compile(
    r"(?P<name>(?P<q>[\"']?)\b[A-Za-z0-9_.-]*?"
    + _SECRET_NAME
    + r"(?:[_-][A-Za-z0-9_]*)?\b(?P=q))"
    r"(?P<sep>[ \t]*(?::(?!:)|=>|=(?!=))[ \t]*)"
    r"(?P<val>[rRbBfFuU]{0,2}(?P<vq>\"\"\"|'''|\"|')(?:(?!(?P=vq)).)*(?P=vq)?"
    r"|[^\s,;)\]}#]+)",
    re.I,
)
# ``password: str = "..."``: the annotation sits between the name and the value
_ANNOTATED = re.compile(
    r"(?P<name>(?P<q>)\b[A-Za-z0-9_.-]*?" + _SECRET_NAME + r"(?:[_-][A-Za-z0-9_]*)?\b)"
    r"(?P<sep>[ \t]*:[ \t]*[A-Za-z_][\w.\[\], |]*?[ \t]*=(?!=)[ \t]*)"
    r"(?P<val>[rRbBfFuU]{0,2}(?P<vq>\"\"\"|'''|\"|')(?:(?!(?P=vq)).)*(?P=vq)?)",
    re.I,
)
_KEEP_BARE = frozenset(
    {"none", "null", "nil", "true", "false", "...", "undefined", "~"}
)

#: Token shapes masked wherever they appear: ``(pattern, replacement)``.
VALUE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{8,}"), "sk-***"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "***"),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 ***"),
    # after "basic", a credential, not a word: a digit, =+/_ or a lower->upper
    # hump ("passes basic validation" in a docstring is kept; issue 19)
    (
        re.compile(
            r"\b((?i:basic))\s+(?=[A-Za-z0-9._~+/=-]*(?:[0-9=+/_]|[a-z][A-Z]))"
            r"[A-Za-z0-9._~+/=-]{8,}"
        ),
        r"\1 ***",
    ),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), "***"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "***"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), "***"),
    (re.compile(r"(?<=://)([^/\s:@]+):[^/\s@]+@"), r"\1:***@"),
)
# An OpenAI-shaped key glued to other text ("...key:sk-..." or "task-sk-...");
# error messages are masked eagerly, shown code is not (``task-abc`` is code).
_SK_ANYWHERE = re.compile(r"sk-[A-Za-z0-9_\-]{8,}")
_KEY_BLOCK = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


def _mask_value(m: re.Match[str], python: bool) -> str:
    val = m.group("val")
    if m.group("vq"):
        inner = val.lstrip("rRbBfFuU")[len(m.group("vq")) :]
        if inner in ("", m.group("vq")):
            return m.group(0)  # an empty string literal hides nothing
        return f'{m.group("name")}{m.group("sep")}"***"'
    if val.lower() in _KEEP_BARE or re.fullmatch(r"[-+]?\d[\d_.]*", val):
        return m.group(0)
    if val.lower() in ("bearer", "basic"):
        return m.group(0)  # an auth scheme: the credential after it is masked below
    if python and re.match(r"[A-Za-z_(\[{]", val):
        return m.group(0)  # a variable, call or annotation in code, not a literal
    return f"{m.group('name')}{m.group('sep')}***"


def _mask_tokens(text: str) -> str:
    for pat, rep in VALUE_PATTERNS:
        text = pat.sub(rep, text)
    return text


def _split_comment(line: str) -> tuple[str, str]:
    """``(code, "# comment")`` of a Python line (a ``#`` inside a string
    literal is not a comment: quotes before it must be balanced)."""
    at = line.find("#")
    while at != -1:
        head = line[:at]
        if head.count('"') % 2 == 0 and head.count("'") % 2 == 0:
            return head, line[at:]
        at = line.find("#", at + 1)
    return line, ""


def mask_secrets(text: str, *, python: bool = True) -> tuple[str, int]:
    """Mask credential values in *text*; return ``(masked text, lines masked)``.

    The name is kept (so the reader still sees *that* a key is set there) and
    the value becomes ``***``. In Python, a bare identifier or call after the
    name is code (``api_key=api_key``, ``token: str``) and is kept; in config
    and docs any non-trivial value is masked.
    """
    out, masked, in_key = [], 0, False
    for line in text.split("\n"):
        new = line
        if in_key or _KEY_BLOCK.search(line):
            in_key = "-----END" not in line
            new = "*** (private key material masked)"
        else:
            code, comment = _split_comment(new) if python else (new, "")
            code = _ANNOTATED.sub(lambda m: _mask_value(m, python), code)
            code = _ASSIGN.sub(lambda m: _mask_value(m, python), code)
            # a comment is prose: ``# token: abc123`` is a value, not code
            new = code + _ASSIGN.sub(lambda m: _mask_value(m, False), comment)
            new = _mask_tokens(new)
        masked += new != line
        out.append(new)
    return "\n".join(out), masked


def scrub(text: str, secret: str | None = None, *, limit: int = SCRUB_LIMIT) -> str:
    """*text* with *secret* (the caller's API key) and every token shape masked,
    cut to *limit* characters: a failure reason safe to show and to log."""
    if secret:
        text = text.replace(secret, "***")
    text = _SK_ANYWHERE.sub("sk-***", _mask_tokens(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- masking what is stored and shown (chunks, the package model; issue 19) --

#: Cheap pre-check (:func:`may_hold_secret`): text in which neither regex
#: matches (the first on the lowered text) holds nothing :func:`mask_secrets`
#: would change; one ``(?i:)`` regex took 1.8 s over the sdist's 14.5 MB of
#: chunks.
_TRIGGER_LOW = re.compile(
    r"(?:api|access|private)[_-]?key|apikey|secret|passw|pwd|token"
    r"|credential|auth(?:oriz|_|\b)|bearer|basic"
)
_TRIGGER_SHAPE = re.compile(
    r"sk-|AKIA|ASIA|gh[pousr]_|xox[abprs]-|AIza|://[^/\s]*@|-----BEGIN"
)
_SECRET_PARAM = re.compile(rf"(?i)^[A-Za-z0-9_]*{_SECRET_NAME}[A-Za-z0-9_]*$")
_STRING_LITERAL = re.compile(r"""^[rRbBuU]{0,2}(?:"[^"]+"|'[^']+')$""")


def mask(text: str, *, python: bool = True) -> str:
    """*text* with credential values masked (:func:`mask_secrets`), fast when
    nothing looks like one: what chunking stores and the model shows. Only
    the lines that trigger go through the full patterns (a key block spans
    lines: then the whole text does)."""
    if not may_hold_secret(text):
        return text
    return mask_triggered(text, python=python)


def mask_triggered(text: str, *, python: bool = True) -> str:
    """:func:`mask` of a *text* :func:`may_hold_secret` already said yes to
    (the pre-check is not run twice: ``chunking.masking`` asks it first)."""
    if _KEY_BLOCK.search(text):
        return mask_secrets(text, python=python)[0]
    lines: list[str] | None = None
    for i in _trigger_lines(text):
        if lines is None:
            lines = text.split("\n")
        lines[i] = mask_secrets(lines[i], python=python)[0]
    return text if lines is None else "\n".join(lines)


def _trigger_lines(text: str) -> list[int]:
    r"""Indexes (in ``text.split("\n")``) of the lines :func:`may_hold_secret`
    says yes to, in order, found by one scan of the whole text per regex
    instead of a lowering and two regex calls per line (most of masking a
    build's chunks: a text that triggers had all its lines tested).

    Why it is exact: no match of :data:`_TRIGGER_LOW` or
    :data:`_TRIGGER_SHAPE` spans a line end (their alternatives are
    literals, ``[_-]?``, ``[^/\s]*`` and a ``\b`` that a line end satisfies as
    the end of a line does), so a line holds a match exactly when a scan of
    the whole text finds one starting in it (the leftmost match of the line
    cannot lie inside an earlier match: that one would have to span the
    line end); lowering maps no character to or from ``\n`` and looks no
    further than the line for its context (final sigma), so the lowered
    text's lines are the lowered lines.

    The regexes' alternatives are searched one by one as plain substrings
    (``str.find``, one hit a line: a line that holds one needs no more),
    and a regex only behind its literal prefix (``auth``, ``://``): the
    prefix-less scans ran the regex engine at most positions of every
    triggered chunk (tests/test_chunk_cpu.py holds them equal)."""
    low = text.lower()
    at_low: list[int] = []
    for w in _LOW_WORDS:
        _first_a_line(low, w, at_low)
    if "key" in low:
        for w in _LOW_KEYS:
            _first_a_line(low, w, at_low)
    at = low.find("auth")
    while at != -1:
        if _AUTH_WORD.match(low, at) is not None:
            at_low.append(at)
            nl = low.find("\n", at)
            if nl == -1:
                break
            at = low.find("auth", nl + 1)
        else:
            at = low.find("auth", at + 1)
    at_text: list[int] = []
    for w in _SHAPE_WORDS:
        _first_a_line(text, w, at_text)
    if "gh" in text:
        for w in _GH_WORDS:
            _first_a_line(text, w, at_text)
    if "xox" in text:
        for w in _XOX_WORDS:
            _first_a_line(text, w, at_text)
    if "://" in text:
        at_text.extend(m.start() for m in _URL_PASSWORD.finditer(text))
    found: set[int] = set()
    for hay, starts in ((low, at_low), (text, at_text)):
        line = pos = 0
        for at in sorted(starts):
            line += hay.count("\n", pos, at)
            pos = at
            found.add(line)
    return sorted(found)


def _first_a_line(hay: str, word: str, out: list[int]) -> None:
    """Append the position of *word*'s first occurrence in each line of
    *hay* that holds it (lines end at ``\n``)."""
    at = hay.find(word)
    while at != -1:
        out.append(at)
        nl = hay.find("\n", at + len(word))
        if nl == -1:
            return
        at = hay.find(word, nl + 1)


def mask_default(name: str, default: str | None) -> str | None:
    """A parameter's default as shown: a string literal given to a parameter
    with a secret-looking name (``api_key="..."``) becomes ``"***"``."""
    if default is None:
        return None
    if _SECRET_PARAM.match(name) and _STRING_LITERAL.match(default):
        return '"***"'
    return mask(default)


#: One pre-check for a whole tree (:func:`mask_tree`): its JSON text, ASCII
#: only, holds none of these (lowered) words nor a token shape. It covers both
#: :func:`may_hold_secret` of every string in it (``auth`` alone, not only
#: ``auth_``/``authoriz``/``auth\b``) and :data:`_SECRET_PARAM` on every name
#: (``author`` is a secret-looking parameter name to :func:`mask_default`).
_TREE_LOW = re.compile(
    r"(?:api|access|private)[_-]?key|apikey|secret|passw|pwd|token"
    r"|credential|auth|bearer|basic"
)
_TREE_JSON = json_encoder(ensure_ascii=False)  # encode, made once


def _tree_is_clean(value: list | dict) -> bool:
    """True when nothing in *value* can be masked (so it is returned as is).

    Why it is exact: JSON joins the strings with quotes, commas and colons
    (never letters, ``_``, ``-`` or ``/``) and escapes only quotes,
    backslashes and control characters, so a word or token shape inside any
    string is still in the JSON text; a non-ASCII text (``K``, the Kelvin
    sign, case-folds to ``k`` under ``re.I``) takes the full walk.
    """
    try:
        blob = _TREE_JSON(value)
    except (TypeError, ValueError, RecursionError):
        return False  # not JSON-like: the walk below handles it
    if not blob.isascii():
        return False
    # _TREE_LOW's alternatives as plain substrings and the shapes as
    # may_hold_secret tests them (the prefix-less regexes scanned every byte:
    # most of the model's parameter masking in a build; issue 18)
    return not _holds_word(blob.lower(), _TREE_WORDS) and not _has_shape(blob)


def mask_tree(value: object, *, python: bool = True) -> object:
    """*value* (JSON-like: dicts, lists, strings) with every string masked and
    every ``{"name": ..., "default": ...}`` parameter masked by name.

    A list or dict in which nothing can be masked is returned itself, not a
    copy: one JSON encoding and two regex searches instead of a call per
    string (13k parameter tables were 1.3 s of a build of the sdist).
    """
    if isinstance(value, str):
        return mask(value, python=python)
    if isinstance(value, (list, dict)) and _tree_is_clean(value):
        return value
    return _mask_tree(value, python)


#: The ``kind`` values of a parameter table (``pyast.signatures.params_of``):
#: constants with no trigger word in them, left out of :func:`mask_params`'s
#: text (``keyword`` would send every table through the ``...key`` scans).
_PARAM_KINDS = frozenset(
    {
        "positional_only",
        "positional_or_keyword",
        "var_positional",
        "keyword_only",
        "var_keyword",
    }
)
_PARAM_KEYS = frozenset({"name", "kind", "default", "annotation"})


def mask_params(params: list[dict], *, python: bool = True) -> list[dict]:
    """``mask_tree(params)`` for a parameter table (``{"name", "kind",
    "default", "annotation"}`` dicts): the table itself when nothing in it
    can be masked.

    The pre-check reads the table's names, defaults and annotations joined
    by spaces instead of its JSON text (what :func:`_tree_is_clean` reads):
    a space ends every word and token shape as JSON's separators do, the
    kinds are constants without a trigger, and nothing is escaped, so it
    answers "clean" exactly where the strings hold no trigger word (bare
    ``auth`` included, for the names :func:`mask_default` masks by) nor a
    token shape. About half the cost of the JSON pre-check on the sdist's
    10k tables. Any other shape goes through :func:`mask_tree`."""
    parts: list[str] = []
    for p in params:
        if type(p) is not dict or p.keys() - _PARAM_KEYS:
            return mask_tree(params, python=python)  # type: ignore[return-value]
        name, kind = p.get("name"), p.get("kind")
        default, annotation = p.get("default"), p.get("annotation")
        if (
            type(name) is not str
            or type(kind) is not str
            or kind not in _PARAM_KINDS
            or (default is not None and type(default) is not str)
            or (annotation is not None and type(annotation) is not str)
        ):
            return mask_tree(params, python=python)  # type: ignore[return-value]
        parts.append(name)
        if default is not None:
            parts.append(default)
        if annotation is not None:
            parts.append(annotation)
    blob = " ".join(parts)
    clean = (
        blob.isascii()
        and not _holds_word(blob.lower(), _TREE_WORDS)
        and not _has_shape(blob)
    )
    return params if clean else _mask_tree(params, python)  # type: ignore[return-value]


def _mask_tree(value: object, python: bool) -> object:
    """:func:`mask_tree` without the pre-check (one string at a time)."""
    if isinstance(value, str):
        return mask(value, python=python)
    if isinstance(value, list):
        return [_mask_tree(v, python) for v in value]
    if isinstance(value, dict):
        out = {k: _mask_tree(v, python) for k, v in value.items()}
        name = out.get("name")
        if isinstance(name, str) and isinstance(out.get("default"), str):
            out["default"] = mask_default(name, value["default"])
        return out
    return value


def may_hold_secret(text: str) -> bool:
    """False when *text* certainly holds nothing :func:`mask` would change.

    Exactly ``_TRIGGER_LOW.search(text.lower()) or _TRIGGER_SHAPE.search(text)``:
    a short text runs the two regexes; a long one runs the plain substrings of
    their alternatives (``in`` is memchr-fast) and a regex only behind its
    literal prefix (``auth``, ``gh``, ``xox``, ``://``). The regexes have no
    literal prefix, and ``gh`` or ``basic`` is in most long texts: they
    scanned every byte of 14.5 MB of chunks twice.
    """
    if not text:
        return False
    if len(text) < _SHORT:
        return (
            _TRIGGER_LOW.search(text.lower()) is not None
            or _TRIGGER_SHAPE.search(text) is not None
        )
    low = text.lower()
    if _holds_word(low, _LOW_WORDS):
        return True
    if "auth" in low and _AUTH_WORD.search(low) is not None:
        return True
    return _has_shape(text)


def _holds_word(low: str, words: tuple[str, ...]) -> bool:
    """Whether the lower-cased *low* holds one of *words* or a ``...key``
    word (:data:`_LOW_KEYS`), by plain substring scans (``in`` is
    memchr-fast; the prefix-less regexes scanned every byte)."""
    for w in words:
        if w in low:
            return True
    if "key" in low:
        for w in _LOW_KEYS:
            if w in low:
                return True
    return False


def _has_shape(text: str) -> bool:
    """``_TRIGGER_SHAPE.search(text) is not None``, by its plain substrings
    (a regex only behind a literal prefix)."""
    for w in _SHAPE_WORDS:
        if w in text:
            return True
    return (
        ("gh" in text and _GH_TOKEN.search(text) is not None)
        or ("xox" in text and _XOX_TOKEN.search(text) is not None)
        or ("://" in text and _URL_PASSWORD.search(text) is not None)
    )


# The alternatives of _TRIGGER_LOW and _TRIGGER_SHAPE, spelled out (see
# may_hold_secret; tests/test_build_cpu.py checks that they agree).
_SHORT = 256
_LOW_WORDS = ("secret", "passw", "pwd", "token", "credential", "bearer", "basic")
_LOW_KEYS = tuple(
    f"{a}{s}key" for a in ("api", "access", "private") for s in ("", "_", "-")
)
_AUTH_WORD = re.compile(r"auth(?:oriz|_|\b)")
_SHAPE_WORDS = ("sk-", "AKIA", "ASIA", "AIza", "-----BEGIN")
#: _TREE_LOW's alternatives but the ``...key`` ones (:data:`_LOW_KEYS`).
_TREE_WORDS = (*_LOW_WORDS, "auth")
_GH_TOKEN = re.compile(r"gh[pousr]_")
_GH_WORDS = tuple(f"gh{c}_" for c in "pousr")
_XOX_WORDS = tuple(f"xox{c}-" for c in "abprs")
_XOX_TOKEN = re.compile(r"xox[abprs]-")
_URL_PASSWORD = re.compile(r"://[^/\s]*@")
