"""JSON objects into typed dataclasses: the one validator of outside input.

Why one module: command arguments, suite records and client settings each
checked "is this field the right type, in range, one of these values" by
hand. Here a dataclass *is* the schema: field types (``str``, ``int``,
``float``, ``bool``, ``list[T]``, ``X | None``) plus optional metadata --
``choices``, ``min``/``max``, ``nonempty`` (a string other than ``""``),
``nonblank`` (a string with non-blank text), ``empty_is_none`` (``""``
means "unset") and ``message`` (the whole error text for that field, when the caller's
wording is part of its contract).

Two modes, for the two kinds of input:

* :func:`structure` builds an object or raises (command arguments and suite
  records: the caller sent something wrong and must be told);
* :func:`merge` updates an existing object field by field and *reports*
  bad values, keeping the current ones (client settings: a typo in one
  setting must never stop the server).

Types are checked strictly (``"3"`` is not an integer, ``true`` is not a
number): lenient coercion (as ``cattrs``/``pydantic`` default to) would
accept what the clients' protocol types refuse. ``int`` is accepted for a
``float`` field and converted.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pycsamt_lsp.errors import ArgumentError

__all__ = ["check_value", "field_problem", "merge", "structure", "type_name"]

T = TypeVar("T")


def check_value(value: Any, tp: Any) -> tuple[bool, Any]:
    """``(ok, converted value)`` of *value* against the type *tp* (strict)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for alt in typing.get_args(tp):
            ok, v = check_value(value, alt)
            if ok:
                return True, v
        return False, value
    if tp is type(None):
        return value is None, value
    if tp is Any:
        return True, value
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value
    if tp is str:
        return isinstance(value, str), value
    if origin is list:
        (inner,) = typing.get_args(tp) or (Any,)
        if not isinstance(value, list):
            return False, value
        out = []
        for v in value:
            ok, v2 = check_value(v, inner)
            if not ok:
                return False, value
            out.append(v2)
        return True, out
    if origin is dict or tp is dict:
        return isinstance(value, dict), value
    return isinstance(value, tp), value


def type_name(tp: Any) -> str:
    """How a type reads in an error message: ``an integer``, ``a string or null``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if typing.get_origin(tp) is list:
        (inner,) = typing.get_args(tp) or (Any,)
        inner_name = type_name(inner).removeprefix("a ").removeprefix("an ")
        return f"a list of {inner_name}s"
    names = {str: "a string", int: "an integer", float: "a number", bool: "true/false"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def field_problem(f: dataclasses.Field, tp: Any, value: Any) -> tuple[Any, str | None]:
    """``(converted value, None)`` or ``(value, why it is refused)`` for one field."""
    meta = f.metadata
    ok, v = check_value(value, tp)
    why = None
    if not ok:
        why = f"must be {type_name(tp)}, got {value!r:.60}"
    elif isinstance(v, str) and (
        (meta.get("nonblank") and not v.strip()) or (meta.get("nonempty") and not v)
    ):
        why = "must not be empty"
    elif "choices" in meta and v is not None and v not in meta["choices"]:
        why = f"must be one of {', '.join(map(str, meta['choices']))}"
    elif ("min" in meta or "max" in meta) and isinstance(v, (int, float)):
        lo, hi = meta.get("min"), meta.get("max")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            why = f"must be from {lo} to {hi}"
    return v, why


def _fields(cls: type) -> tuple[dict[str, dataclasses.Field], dict[str, Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}, typing.get_type_hints(cls)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def structure(
    cls: type[T],
    raw: Any,
    *,
    unknown: str = "refuse",
    error: type[Exception] = ArgumentError,
    where: str = "",
) -> T:
    """Build the dataclass *cls* from the JSON object *raw*, or raise *error*.

    *unknown* is ``"refuse"`` (a field the class does not have is an error)
    or ``"ignore"``; *where* prefixes every message (``"suite.jsonl:4: "``).
    The object's optional ``check()`` runs last.
    """
    if not isinstance(raw, Mapping):
        raise error(
            f"{where}expected a JSON object with named fields, got {type(raw).__name__}"
        )
    fields, hints = _fields(cls)
    if unknown == "refuse":
        extra = sorted(set(raw) - set(fields))
        if extra:
            raise error(
                f"{where}unknown field(s) {', '.join(map(repr, extra))}; "
                f"expected: {', '.join(fields)}"
            )
    values = {}
    for name, f in fields.items():
        if name not in raw:
            if _required(f):
                raise error(
                    f"{where}{f.metadata.get('message') or f'missing required field {name!r}'}"
                )
            continue
        v, why = field_problem(f, hints[name], raw[name])
        if why is not None:
            raise error(
                f"{where}{f.metadata.get('message') or f'field {name!r} {why}'}"
            )
        values[name] = v
    obj = cls(**values)
    check = getattr(obj, "check", None)
    if check is not None:
        check()
    return obj


def merge(obj: T, raw: Mapping[str, Any]) -> tuple[T, list[tuple[str, str]]]:
    """*obj* (a dataclass) with the valid fields of *raw* replaced.

    Returns ``(new object, [(field, why), ...])`` for the refused values,
    which keep their current value; keys the class does not have are
    ignored (they may be meant for another consumer of the same object).
    """
    fields, hints = _fields(type(obj))
    values: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for key, value in raw.items():
        f = fields.get(key)
        if f is None:
            continue
        v, why = field_problem(f, hints[key], value)
        if why is None:
            values[key] = None if v == "" and f.metadata.get("empty_is_none") else v
        else:
            problems.append((key, f.metadata.get("message") or why))
    return dataclasses.replace(obj, **values), problems  # type: ignore[type-var]
