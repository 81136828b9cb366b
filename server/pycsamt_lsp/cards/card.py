"""API cards from the package model and the index: :func:`card_for`.

Everything comes from the static :class:`~pycsamt_lsp.model.package.PackageModel`
and the index snapshot of a :class:`~pycsamt_lsp.workspace.facade.Workspace`;
nothing is imported. Cards are cached by the workspace's
:class:`~pycsamt_lsp.cards.service.CardService` per model and checked against
the snapshot, so an edit to the corpus (a new model or snapshot) is followed.
The card itself is :class:`~pycsamt_lsp.cards.model.Card`; docstrings are
read by :mod:`pycsamt_lsp.cards.docstrings`; symbol search is
:mod:`pycsamt_lsp.cards.symbols`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycsamt_lsp.cards.docstrings import DocInfo, clean_rst, parse_docstring
from pycsamt_lsp.cards.model import Card, Param
from pycsamt_lsp.cards.service import CardCache
from pycsamt_lsp.cards.symbols import search_symbols
from pycsamt_lsp.chunking.python import format_params

if TYPE_CHECKING:
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


def clear_cache(ws: Workspace) -> None:
    """Forget every card and symbol table *ws* has cached (benchmarks, tests)."""
    ws.cards.clear()


def warm(ws: Workspace) -> None:
    """Build what the first card and the first symbol search need now (the
    model, the symbol -> workflow map, the symbol table), e.g. in a worker
    thread right after a new snapshot is published."""
    model = ws.ensure_model()
    snap = ws.snapshot
    ws.cards.cache_for(model, snap)
    if snap is not None:
        ws.cards.symbol_table(snap)


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
    cache = ws.cards.cache_for(model, ws.snapshot)
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
    ws: Workspace, res: Resolution, *, cache: CardCache | None = None
) -> Card | None:
    """The card of an existing :class:`~.package_model.Resolution`."""
    model = ws.model
    if cache is None:
        cache = ws.cards.cache_for(model, ws.snapshot)
    target = res.target or res.dotted
    kind = res.kind or "symbol"
    uri = None
    if res.path:
        try:
            uri = ws.uri_of(res.path)
        except (OSError, ValueError):
            uri = None
    common: dict[str, Any] = {
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
