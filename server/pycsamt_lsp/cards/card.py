"""API cards: one model of "what is this package symbol" for every surface.

A :class:`Card` carries what a user needs to call a symbol without
guessing: its kind, the signature with defaults and annotations, a parameter
table (with the docstring's description of each parameter when the
docstring is numpydoc, Google or Sphinx style), the return annotation and
description, the docstring's summary paragraph, the index's workflow tag and
the source location as a ``file://...#L<line>`` link. A class card holds the
constructor's parameters and the public methods.

Hover renders :meth:`Card.to_markdown`, completion uses it as item
documentation, context assembly and commands use :meth:`Card.to_dict`.
Everything comes from the static :class:`~.package_model.PackageModel` and the
index snapshot of a :class:`~.workspace.Workspace`; nothing is imported.
Cards are cached per model object and checked against the snapshot, so an
edit to the corpus (which publishes a new model or snapshot) is followed.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.chunking.python import format_params

if TYPE_CHECKING:
    from pycsamt_lsp.index.snapshot import Snapshot
    from pycsamt_lsp.model.package import PackageModel, Resolution
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "Card",
    "DocInfo",
    "Param",
    "card_for",
    "card_for_resolution",
    "clean_rst",
    "clear_cache",
    "parse_docstring",
    "search_symbols",
    "warm",
]

#: Resolution kinds that get a card (``lazy``/``external`` get a short one).
_CALLABLE = frozenset({"function", "method", "class"})
_MODULE = frozenset({"package", "module", "namespace"})
_MAX_MD_PARAMS = 24
_MAX_MD_METHODS = 30
_MAX_MD_MEMBERS = 16
_MAX_DESC = 220
_SIG_WIDTH = 80


# --------------------------------------------------------------------------
# docstrings


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
        body = sections.get(name)
        if not body:
            continue
        entries = _numpy_entries(body)
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


# --------------------------------------------------------------------------
# the card


@dataclass(frozen=True)
class Param:
    """One row of a card's parameter table."""

    name: str
    kind: str
    default: str | None = None
    annotation: str | None = None
    doc_type: str | None = None
    description: str = ""

    @property
    def type(self) -> str | None:
        """The annotation, else the type the docstring gives."""
        return self.annotation or self.doc_type


@dataclass(frozen=True)
class Card:
    """An API card for one package symbol (see the module docstring)."""

    name: str  # as asked (may be a public re-export path)
    qualname: str  # canonical: where it is defined
    kind: str
    signature: str | None = None
    params: tuple[Param, ...] = ()
    returns: str | None = None  # the return annotation
    returns_type: str | None = None  # the type the docstring gives
    returns_doc: str = ""
    summary: str = ""
    workflow: str | None = None
    path: str | None = None
    line: int | None = None
    uri: str | None = None
    methods: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()
    doc_style: str | None = None
    note: str | None = None
    #: ``self``/``cls`` of a method: in the signature, not in ``params``
    bound: str | None = None

    @property
    def link(self) -> str | None:
        """``file://...#L<line>``: opens the source at the definition."""
        if self.uri is None:
            return None
        return f"{self.uri}#L{self.line or 1}"

    @property
    def leaf(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def detail(self) -> str:
        """One line for a completion item's ``detail``."""
        if self.signature:
            sig = self.signature
            return sig if len(sig) <= 120 else sig[:117] + "..."
        return f"{self.kind} {self.qualname}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = [asdict(p) for p in self.params]
        for k in ("methods", "members", "bases", "decorators"):
            d[k] = list(d[k])
        d["link"] = self.link
        return d

    # -- markdown ------------------------------------------------------------

    def signature_block(self) -> str | None:
        """The signature for a code block: filled to lines of at most
        ``_SIG_WIDTH`` characters (the parameter list follows, so the
        signature stays a few lines, not one line per parameter)."""
        if not self.signature:
            return None
        sig = self.signature
        if len(sig) <= _SIG_WIDTH or not self.params:
            return sig
        head, _, _ = sig.partition("(")
        arrow = sig.rfind(") -> ")
        tail = sig[arrow:] if arrow >= 0 else ")"
        parts = _format_param_lines(self.params)
        if self.bound:
            parts.insert(0, self.bound)
        lines: list[str] = []
        cur = head + "("
        for i, p in enumerate(parts):
            piece = p + (", " if i < len(parts) - 1 else "")
            if len(cur) + len(piece.rstrip()) > _SIG_WIDTH and cur.strip() not in (
                "",
                head + "(",
            ):
                lines.append(cur.rstrip())
                cur = "    "
            cur += piece
        lines.append(cur + tail)
        return "\n".join(lines)

    def to_markdown(self, *, focus: str | None = None) -> str:
        """Compact Markdown for a hover or a completion item's documentation.

        *focus*: a parameter name (a keyword argument under the cursor) shown
        first, in bold.
        """
        out: list[str] = []
        block = self.signature_block()
        if block:
            out.append(f"```python\n{block}\n```")
        head = f"*{self.kind}* `{self.qualname}`"
        if self.workflow:
            head += f" · workflow `{self.workflow}`"
        if self.path:
            where = f"{self.path}:{self.line}" if self.line else self.path
            head += f"  \n[{where}]({self.link})" if self.link else f"  \n`{where}`"
        if self.name != self.qualname:
            head += f" · via `{self.name}`"
        out.append(head)
        if self.note:
            out.append(_md(self.note))
        if focus:
            p = self.param(focus)
            if p is not None:
                out.append("**" + _param_line(p, bold=False).removeprefix("- ") + "**")
        if self.summary:
            out.append(_md(_cut(self.summary, 600)))
        if self.params:
            shown = list(self.params)
            title = "Constructor parameters" if self.kind == "class" else "Parameters"
            rows = [_param_line(p) for p in shown[:_MAX_MD_PARAMS]]
            if len(shown) > _MAX_MD_PARAMS:
                rows.append(f"- ... {len(shown) - _MAX_MD_PARAMS} more")
            if rows:
                out.append(f"**{title}**\n\n" + "\n".join(rows))
        if self.returns or self.returns_type or self.returns_doc:
            ret = "**Returns**"
            if self.returns:
                ret += f" `{self.returns}`"
            if self.returns_type and self.returns_type != self.returns:
                t = f"`{self.returns_type}`"
                ret += f" ({t})" if self.returns else f" {t}"
            if self.returns_doc:
                ret += " — " + _md(_cut(self.returns_doc, _MAX_DESC))
            out.append(ret)
        if self.methods:
            shown_m = ", ".join(f"`{m}`" for m in self.methods[:_MAX_MD_METHODS])
            more = len(self.methods) - _MAX_MD_METHODS
            out.append(
                f"**Methods** {shown_m}" + (f", ... {more} more" if more > 0 else "")
            )
        if self.members:
            shown_n = ", ".join(f"`{m}`" for m in self.members[:_MAX_MD_MEMBERS])
            more = len(self.members) - _MAX_MD_MEMBERS
            out.append(
                f"**Members** {shown_n}" + (f", ... {more} more" if more > 0 else "")
            )
        return "\n\n".join(out)


def _format_param_lines(params: tuple[Param, ...]) -> list[str]:
    text = format_params(
        [
            {
                "name": p.name,
                "kind": p.kind,
                "default": p.default,
                "annotation": p.annotation,
            }
            for p in params
        ]
    )
    return _split_top_level(text)


def _split_top_level(text: str) -> list[str]:
    """Split ``a, b: dict[str, int] = {}, c`` at top-level commas."""
    parts: list[str] = []
    depth, start, quote = 0, 0, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _cut(text: str, n: int) -> str:
    if len(text) <= n:
        return text
    cut = text[: n - 1]
    return cut[: cut.rfind(" ")] + " …" if " " in cut else cut + "…"


def _md(text: str) -> str:
    """Escape what a Markdown renderer would swallow outside code spans."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = (
            parts[i].replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
        )
    return "`".join(parts)


def _param_line(p: Param, bold: bool = True) -> str:
    stars = (
        "**" if p.kind == "var_keyword" else ("*" if p.kind == "var_positional" else "")
    )
    name = f"`{stars}{p.name}`"
    line = f"- {name}"
    if p.type:
        line += f": `{p.type}`"
    if p.default is not None:
        line += f" = `{p.default}`"
    if p.description:
        line += " — " + _md(_cut(p.description, _MAX_DESC))
    return line


# --------------------------------------------------------------------------
# building cards from the model and the snapshot


class _Cache:
    """Cards of one model; the workflow map of one snapshot."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.workflows: dict[str, str | None] = {}
        self.slots: dict[str, int] = {}
        self.cards: dict[tuple[str, str | None], Card | None] = {}


_CACHES: weakref.WeakKeyDictionary[PackageModel, _Cache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache_for(model: PackageModel, snap: Snapshot | None) -> _Cache:
    with _CACHES_LOCK:
        cache = _CACHES.get(model)
        if cache is None:
            cache = _CACHES[model] = _Cache()
    if cache.snapshot is not snap:
        with cache.lock:
            if cache.snapshot is not snap:
                cache.workflows, cache.slots = _symbol_map(snap)
                cache.cards = {}
                cache.snapshot = snap
    return cache


def _symbol_map(snap: Snapshot | None) -> tuple[dict[str, str | None], dict[str, int]]:
    """``symbol -> workflow`` and ``symbol -> slot`` over the live chunks."""
    wf: dict[str, str | None] = {}
    slots: dict[str, int] = {}
    if snap is None:
        return wf, slots
    t = snap.table
    symbols, workflows, kinds = t.symbols, t.workflows, t.kinds
    for _rel, (_sha, file_slots) in snap.files.items():
        for s in file_slots:
            sym = symbols[s]
            if not sym:
                continue
            if sym not in slots or kinds[s] != "module_doc":
                slots[sym] = s
            if wf.get(sym) is None:
                wf[sym] = workflows[s]
    return wf, slots


def clear_cache() -> None:
    """Forget every cached card and symbol table (benchmarks, tests)."""
    with _CACHES_LOCK:
        _CACHES.clear()
    _TABLES.clear()


def warm(ws: Workspace) -> None:
    """Build what the first card and the first symbol search need now (the
    model, the symbol -> workflow map, the symbol table), e.g. in a worker
    thread right after a new snapshot is published."""
    model = ws.ensure_model()
    snap = ws.snapshot
    _cache_for(model, snap)
    if snap is not None and snap not in _TABLES:
        _TABLES[snap] = _SymbolTable(snap)


def card_for(
    ws: Workspace, dotted: str, *, module: str | None = None, import_path: bool = False
) -> Card | None:
    """The card of the package symbol *dotted*, or None when it is not known
    to exist (absent, unverifiable, outside the package).

    *module*: a module prefix of *dotted* an import bound (``import a.b as
    x``), passed to :meth:`PackageModel.resolve`. *import_path*: resolve with
    import-system semantics (every segment a module), as in ``import a.b``.
    """
    model = ws.model
    cache = _cache_for(model, ws.snapshot)
    key = (dotted, f"{module}|{import_path}")
    if key in cache.cards:
        return cache.cards[key]
    res = (
        model.resolve_module(dotted)
        if import_path
        else model.resolve(dotted, module=module)
    )
    card = card_for_resolution(ws, res, cache=cache) if res.exists else None
    if len(cache.cards) > 20_000:
        cache.cards.clear()
    cache.cards[key] = card
    return card


def card_for_resolution(
    ws: Workspace, res: Resolution, *, cache: _Cache | None = None
) -> Card | None:
    """The card of an existing :class:`~.package_model.Resolution`."""
    model = ws.model
    if cache is None:
        cache = _cache_for(model, ws.snapshot)
    target = res.target or res.dotted
    kind = res.kind or "symbol"
    uri = None
    if res.path:
        try:
            uri = ws.uri_of(res.path)
        except (OSError, ValueError):
            uri = None
    common = {
        "name": res.dotted,
        "qualname": target,
        "kind": kind,
        "workflow": cache.workflows.get(target),
        "path": res.path,
        "line": res.line,
        "uri": uri,
    }
    if kind in _CALLABLE:
        sig = model.signature(target, module=res.module) or model.signature(res.dotted)
        if sig is not None:
            return _callable_card(model, sig, common)
    if kind in _MODULE:
        doc = model.doc(target, module=target if target in model.modules else None)
        info = parse_docstring(doc)
        members = tuple(n for n, _k in model.members(target) if not n.startswith("_"))
        return Card(
            **common,
            summary=clean_rst(info.summary),
            members=members,
        )
    if kind == "external":
        return Card(
            **{**common, "path": None, "line": None, "uri": None},
            note=f"Re-export of `{target}` (outside the package).",
        )
    summary = ""
    slot = cache.slots.get(target)
    if slot is not None and cache.snapshot is not None:
        try:
            chunk = cache.snapshot.table.get(slot)
            summary = parse_docstring(chunk.metadata.get("docstring")).summary
        except (KeyError, OSError, ValueError):
            summary = ""
    return Card(**common, summary=clean_rst(summary))


def _callable_card(
    model: PackageModel, sig: dict[str, Any], common: dict[str, Any]
) -> Card:
    kind = sig["kind"]
    info = parse_docstring(sig.get("doc"))
    target = common["qualname"]
    methods: tuple[str, ...] = ()
    if kind == "class":
        ci = model.class_info(target)
        init = ci.methods.get("__init__") if ci is not None else None
        if init is not None and init.doc:
            extra = parse_docstring(init.doc)
            merged = dict(extra.params)
            merged.update(info.params)
            info = DocInfo(
                info.summary or extra.summary,
                merged,
                None,
                "",
                info.style or extra.style,
            )
        methods = tuple(
            n
            for n, k in model.members(target)
            if k in ("method", "property") and not n.startswith("_")
        )
    raw = sig.get("params")
    params: list[Param] = []
    for p in raw or ():
        typ, desc = info.params.get(p["name"], (None, ""))
        params.append(
            Param(
                name=p["name"],
                kind=p["kind"],
                default=p.get("default"),
                annotation=p.get("annotation"),
                doc_type=clean_rst(typ) if typ else None,
                description=clean_rst(desc),
            )
        )
    leaf = target.rsplit(".", 1)[-1]
    decorators = tuple(sig.get("decorators") or ())
    bound = None
    if (
        kind == "method"
        and params
        and params[0].name in ("self", "cls")
        and "staticmethod" not in decorators
    ):
        bound = params.pop(0).name
    if kind == "class":
        args = "..." if raw is None else format_params(raw)
        signature = f"class {leaf}({args})"
    else:
        args = format_params(raw or [])
        prefix = "async def " if sig.get("is_async") else "def "
        signature = f"{prefix}{leaf}({args})"
        if sig.get("returns"):
            signature += f" -> {sig['returns']}"
    note = None
    if raw is None:
        note = "The constructor's parameters cannot be read statically."
    return Card(
        **common,
        signature=signature,
        params=tuple(params),
        returns=sig.get("returns"),
        returns_type=clean_rst(info.returns_type) if info.returns_type else None,
        returns_doc=clean_rst(info.returns),
        summary=clean_rst(info.summary),
        methods=methods,
        bases=tuple(b for b in (sig.get("bases") or ()) if b),
        decorators=decorators,
        doc_style=info.style,
        note=note,
        bound=bound,
    )


# --------------------------------------------------------------------------
# symbol search (workspace/symbol)

_SYMBOL_KINDS = ("python_symbol", "python_method", "module_doc")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass(frozen=True)
class _Entry:
    symbol: str
    leaf: str
    lower: str
    words: tuple[str, ...]
    chunk_kind: str
    priority: int
    slot: int


class _SymbolTable:
    """The index's code symbols of one snapshot, for name matching."""

    def __init__(self, snap: Snapshot) -> None:
        t = snap.table
        seen: set[str] = set()
        entries: list[_Entry] = []
        for _rel, (_sha, slots) in sorted(snap.files.items()):
            for s in slots:
                sym, kind = t.symbols[s], t.kinds[s]
                if not sym or kind not in _SYMBOL_KINDS or sym in seen:
                    continue
                seen.add(sym)
                leaf = sym.rsplit(".", 1)[-1]
                entries.append(
                    _Entry(
                        sym,
                        leaf,
                        leaf.lower(),
                        tuple(w.lower() for w in _WORDS.findall(leaf)),
                        kind,
                        int(t.priority[s]),
                        s,
                    )
                )
        self.entries = entries


_TABLES: weakref.WeakKeyDictionary[Snapshot, _SymbolTable] = weakref.WeakKeyDictionary()


def _word_prefixes(q: str, words: tuple[str, ...]) -> bool:
    """Can *q* be cut into pieces, each a prefix of a later word, in order?
    (``ssa`` -> Static Shift Agent, ``estss`` -> estimate ss ama)."""
    memo: dict[tuple[int, int], bool] = {}

    def go(qi: int, wi: int) -> bool:
        if qi == len(q):
            return True
        key = (qi, wi)
        if key in memo:
            return memo[key]
        ok = False
        for w in range(wi, len(words)):
            word = words[w]
            n = 0
            while n < len(word) and qi + n < len(q) and word[n] == q[qi + n]:
                n += 1
                if go(qi + n, w + 1):
                    ok = True
                    break
            if ok:
                break
        memo[key] = ok
        return ok

    return go(0, 0)


def _subsequence(q: str, s: str) -> bool:
    it = iter(s)
    return all(ch in it for ch in q)


def _tier(q: str, qwords: str, e: _Entry) -> int | None:
    """Lower is better; None: no match."""
    if e.lower == q:
        return 0
    if e.lower.startswith(q):
        return 1
    if (
        e.words
        and qwords
        and qwords[0] == e.words[0][0]
        and _word_prefixes(qwords, e.words)
    ):
        return 2
    if q in e.lower:
        return 3
    if qwords and _word_prefixes(qwords, e.words):
        return 4
    if len(q) >= 3 and _subsequence(q, e.lower):
        return 5
    return None


def search_symbols(ws: Workspace, query: str, limit: int = 100) -> list[dict[str, Any]]:
    """Code symbols of the index whose name matches *query*, best first.

    Matching is by name: exact, prefix, camel-case/underscore word prefixes
    (``ssa`` finds ``StaticShiftAgent``), substring, then subsequence; a
    dotted query (``ShiftAgent.run``) matches its last part by name and the
    rest within the qualified name. Ties go to the profile's higher priority
    areas, then shorter names.
    """
    snap = ws.snapshot
    if snap is None:
        return []
    table = _TABLES.get(snap)
    if table is None:
        table = _TABLES[snap] = _SymbolTable(snap)
    q = query.strip()
    head = ""
    if "." in q:
        head, _, q = q.rpartition(".")
        head = head.lower()
    ql = q.lower()
    qwords = ql.replace("_", "")
    scored: list[tuple[tuple[Any, ...], _Entry]] = []
    for e in table.entries:
        if head and head not in e.symbol[: -len(e.leaf)].lower():
            continue
        if ql:
            tier = _tier(ql, qwords, e)
            if tier is None:
                continue
            if tier == 0 and e.leaf != q:
                tier = 0.5
        else:
            tier = 0 if e.chunk_kind != "python_method" else 1
        key = (tier, -e.priority, len(e.leaf), len(e.symbol), e.symbol)
        scored.append((key, e))
    scored.sort(key=lambda kv: kv[0])
    t = snap.table
    model = ws.model
    out: list[dict[str, Any]] = []
    for key, e in scored[:limit]:
        if e.chunk_kind == "module_doc":
            kind = "module"
        elif e.chunk_kind == "python_method":
            kind = "method"
        else:
            res = model.resolve(e.symbol)
            kind = res.kind if res.exists and res.kind else "function"
        path = t.paths[e.slot]
        out.append(
            {
                "symbol": e.symbol,
                "name": e.leaf,
                "container": e.symbol[: -len(e.leaf) - 1] or None,
                "kind": kind,
                "path": path,
                "line_start": int(t.line_start[e.slot]) or 1,
                "line_end": int(t.line_end[e.slot]) or int(t.line_start[e.slot]) or 1,
                "uri": ws.uri_of(path),
                "workflow": t.workflows[e.slot],
                "tier": key[0],
            }
        )
    return out
