"""The API card: one model of "what is this package symbol" for every surface.

A :class:`Card` carries what a user needs to call a symbol without
guessing: its kind, the signature with defaults and annotations, a parameter
table (with the docstring's description of each parameter), the return
annotation and description, the docstring's summary paragraph, the index's
workflow tag and the source location as a ``file://...#L<line>`` link. A
class card holds the constructor's parameters and the public methods.

Hover renders :meth:`Card.to_markdown`, completion uses it as item
documentation, context assembly and commands use :meth:`Card.to_dict`.
Cards are made by :mod:`pycsamt_lsp.cards.card`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pycsamt_lsp.chunking.python import format_params

__all__ = ["Card", "Param"]

_MAX_MD_PARAMS = 24
_MAX_MD_METHODS = 30
_MAX_MD_MEMBERS = 16
_MAX_DESC = 220
_SIG_WIDTH = 80


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
        """The last segment of the qualified name (what a completion list shows)."""
        return self.qualname.rsplit(".", 1)[-1]

    def param(self, name: str) -> Param | None:
        """The parameter called *name*, or None (a keyword hover asks for one)."""
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
        """The JSON form: lists instead of tuples, plus the ``link`` to the
        source.
        """
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
