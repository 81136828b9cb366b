"""Editor queries over a buffer and the workspace: card under the cursor,
definition, completion candidates. No LSP types: the handlers in
:mod:`.hover` convert; the benchmark calls these functions directly.

All of it reads the workspace's current model and snapshot (cards are
cached per model, see :mod:`pycsamt_lsp.cards.card`), so results follow corpus
edits the moment the index publishes them. Buffer analyses are cached per
document version.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pycsamt_lsp.analysis.buffer import (
    BufferIndex,
    Ref,
    absolute_module,
    analyze,
    completion_context,
)
from pycsamt_lsp.cards.card import Card, card_for
from pycsamt_lsp.model.package import module_name_for

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "BufferCache",
    "Completion",
    "card_at",
    "complete",
    "current_package",
]

_MODULE_KINDS = frozenset({"package", "module", "namespace"})


class BufferCache:
    """The last analyses of a few buffers, keyed by URI and checked by text."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[str, str, str | None, BufferIndex]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(
        self, uri: str, text: str, package: str, current: str | None
    ) -> BufferIndex:
        """The analysis of *text*, reused while the URI's text, package and module
        are unchanged (an editor asks on every keystroke); else analysed afresh.
        """
        with self._lock:
            hit = self._items.get(uri)
            if (
                hit is not None
                and hit[1] == package
                and hit[2] == current
                and hit[0] == text
            ):
                self._items.move_to_end(uri)
                return hit[3]
        index = analyze(text, package, current)
        with self._lock:
            self._items[uri] = (text, package, current, index)
            self._items.move_to_end(uri)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return index


def current_package(ws: Workspace, path: str | None) -> str | None:
    """The ``__package__`` of a buffer that is a module of the corpus package
    (relative imports resolve from it), else None."""
    if not path or not os.path.isabs(path):
        return None
    try:
        rel = ws.rel_of(path)
    except (OSError, ValueError):
        return None
    if rel is None:
        return None
    meta = module_name_for(rel, ws.profile.package)
    if meta is None:
        return None
    dotted, is_pkg, _kind = meta
    return dotted if is_pkg else dotted.rpartition(".")[0]


def card_at(
    ws: Workspace, index: BufferIndex, line: int, col: int
) -> tuple[Ref, Card] | None:
    """The package symbol under ``(line, col)`` and its card, or None."""
    ref = index.ref_at(line, col)
    if ref is None:
        return None
    card = card_for(ws, ref.dotted, module=ref.module, import_path=ref.import_path)
    if card is None:
        return None
    return ref, card


@dataclass(frozen=True)
class Completion:
    """One candidate: a real name of the namespace being completed."""

    name: str
    kind: str
    dotted: str
    module: str | None = None
    import_path: bool = False
    #: a module the profile leaves out of the index (tests, UI glue)
    demoted: bool = False

    @property
    def private(self) -> bool:
        """An underscore name: ranked after the public ones (:attr:`sort_text`)."""
        return self.name.startswith("_")

    @property
    def sort_text(self) -> str:
        """Public names first, then private or demoted ones, dunders last."""
        if self.name.startswith("__"):
            rank = "2"
        else:
            rank = "1" if self.private or self.demoted else "0"
        return f"{rank}{self.name.lower()}"

    def card(self, ws: Workspace) -> Card | None:
        """The candidate's symbol card (documentation for the completion item), if
        the workspace's model knows it.
        """
        return card_for(
            ws, self.dotted, module=self.module, import_path=self.import_path
        )


def complete(
    ws: Workspace,
    index: BufferIndex,
    line: int,
    col: int,
    current: str | None = None,
) -> list[Completion] | None:
    """Candidates at ``(line, col)``: None when the position asks for no
    package completion, else the real names (possibly none)."""
    got = _complete(ws, index, line, col, current)
    if not got:
        return got
    modules = ws.model.modules
    profile = ws.profile
    out = []
    for c in got:
        info = (
            modules.get(c.dotted) if c.kind in _MODULE_KINDS or c.import_path else None
        )
        if info is not None:
            rel = (
                info.rel
                if info.rel.endswith((".py", ".pyi"))
                else info.rel + "/__init__.py"
            )
            if profile.is_excluded(rel) or profile.is_test_path(rel):
                c = replace(c, demoted=True)
        out.append(c)
    return out


def _complete(
    ws: Workspace,
    index: BufferIndex,
    line: int,
    col: int,
    current: str | None,
) -> list[Completion] | None:
    ctx = completion_context(index.lines, line, col)
    if ctx is None:
        return None
    model = ws.model
    pkg = model.package
    if ctx.kind == "names":
        module = absolute_module(ctx.base or "", current)
        if not module or not _inside(module, pkg):
            return None
        if not model.resolve_module(module).exists:
            return []
        return [
            Completion(n, k, f"{module}.{n}", module) for n, k in model.members(module)
        ]
    if ctx.kind == "modules":
        if ctx.base is None:
            return (
                [Completion(pkg, "package", pkg, None, True)]
                if pkg.startswith(ctx.prefix)
                else None
            )
        module = absolute_module(ctx.base, current)
        if not module or not _inside(module, pkg):
            return None
        res = model.resolve_module(module)
        if not res.exists:
            return []
        return [
            Completion(n, "module", f"{module}.{n}", None, True)
            for n, k in model.members(module)
            if k == "module" or f"{module}.{n}" in model.modules
        ]
    got = index.resolve_text(ctx.base or "")
    if got is None:
        root = (ctx.base or "").split(".")[0]
        if root != pkg:
            return None
        got = (ctx.base or "", None, False)
    dotted, hint, import_path = got
    res = (
        model.resolve_module(dotted)
        if import_path
        else model.resolve(dotted, module=hint)
    )
    if not res.exists:
        return []
    target = res.target or dotted
    if res.kind in _MODULE_KINDS:
        return [
            Completion(n, k, f"{target}.{n}", target)
            for n, k in model.members(target, module=target)
        ]
    if res.kind == "class":
        return [Completion(n, k, f"{target}.{n}") for n, k in model.members(target)]
    return []


def _inside(dotted: str, pkg: str) -> bool:
    return dotted == pkg or dotted.startswith(pkg + ".")
