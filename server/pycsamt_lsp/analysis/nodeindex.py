"""One traversal of a syntax tree, its nodes grouped by type.

The validator and :mod:`pycsamt_lsp.analysis.buffer` each need several node
kinds of the same tree; :class:`NodeIndex` walks it once and hands out the
lists.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

#: Fields that never hold nodes (or hold only the Load/Store singletons).
_SCALAR_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "arg",
        "attr",
        "name",
        "asname",
        "module",
        "level",
        "kind",
        "conversion",
        "is_async",
        "simple",
        "type_comment",
        "names",
    }
)


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of node class *cls* that may hold child nodes."""
    if cls is ast.Constant:
        return ()
    return tuple(f for f in getattr(cls, "_fields", ()) if f not in _SCALAR_FIELDS)


#: :func:`_child_fields` of every node class ``ast`` exports, computed once
#: (read-only: a per-process cache filled while walking would be shared state).
_CHILD_FIELDS: Mapping[type, tuple[str, ...]] = MappingProxyType(
    {
        cls: _child_fields(cls)
        for cls in vars(ast).values()
        if isinstance(cls, type) and issubclass(cls, ast.AST)
    }
)


_N = TypeVar("_N", bound=ast.AST)


class NodeIndex:
    """Every node of a tree grouped by type, from one traversal.

    ``ast.walk`` costs a generator and a field scan per node; the validator
    (and :mod:`pycsamt_lsp.analysis.buffer`) needs several node kinds, so it
    walks once (cheaper child lookup, no ``ctx`` singletons) and then reads
    the lists it needs.
    """

    def __init__(self, tree: ast.AST) -> None:
        by: dict[type, list[Any]] = {}
        stack = [tree]
        pop, push = stack.pop, stack.append
        child_fields = _CHILD_FIELDS
        while stack:
            node = pop()
            cls = type(node)
            lst = by.get(cls)
            if lst is None:
                lst = by[cls] = []
            lst.append(node)
            try:
                fields = child_fields[cls]
            except KeyError:  # a node class ``ast`` does not export
                fields = _child_fields(cls)
            for f in fields:
                v = getattr(node, f, None)
                if v is None:
                    continue
                if type(v) is list:
                    for x in v:
                        if isinstance(x, ast.AST):
                            push(x)
                elif isinstance(v, ast.AST):
                    push(v)
        self.by = by

    def kind(self, cls: type[_N]) -> list[_N]:
        """The nodes of exactly type *cls*, typed as such (not subclasses)."""
        return self.by.get(cls, [])

    def of(self, *types: type) -> list[Any]:
        """The nodes of any of *types*, untyped (a union the caller narrows)."""
        if len(types) == 1:
            return self.by.get(types[0], [])
        out: list[Any] = []
        for t in types:
            out.extend(self.by.get(t, ()))
        return out
