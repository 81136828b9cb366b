"""One registry of commands, shared by the CLI and ``workspace/executeCommand``.

Each command takes one JSON object of named fields, validated against a
dataclass (unknown fields and wrong types are refused with a message that
names the field), and returns a JSON-serialisable dict. The CLI prints the
same dict with ``--json`` or through the command's text formatter.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycsamt_lsp.errors import ArgumentError

__all__ = [
    "REGISTRY",
    "ArgumentError",
    "Command",
    "command",
    "parse_args",
    "run_command",
]


@dataclass(frozen=True)
class Command:
    """A named operation over the workspace."""

    name: str  # LSP command id, e.g. "pycsamt.query"
    args: type
    handler: Callable[[Any, Any], dict[str, Any]]
    format: Callable[[dict[str, Any]], str] | None = None
    title: str = ""
    heavy: bool = False  # runs in a worker thread in the server


REGISTRY: dict[str, Command] = {}


def command(name: str, args: type, *, title: str = "", heavy: bool = False, fmt=None):
    """Register ``handler(workspace_or_context, args) -> dict`` under *name*."""

    def deco(fn):
        REGISTRY[name] = Command(name, args, fn, fmt, title, heavy)
        return fn

    return deco


def _type_ok(value: Any, tp: Any) -> tuple[bool, Any]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for alt in typing.get_args(tp):
            ok, v = _type_ok(value, alt)
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
            ok, v2 = _type_ok(v, inner)
            if not ok:
                return False, value
            out.append(v2)
        return True, out
    if origin is dict or tp is dict:
        return isinstance(value, dict), value
    return isinstance(value, tp), value


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    names = {str: "a string", int: "an integer", float: "a number", bool: "true/false"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def parse_args(cls: type, raw: Any) -> Any:
    """Build the dataclass *cls* from a JSON object, with clear errors.

    ``None`` or a missing argument means "all defaults"; a list with one
    object (how LSP clients pass ``arguments``) is unwrapped.
    """
    if isinstance(raw, list):
        if len(raw) > 1:
            raise ArgumentError(
                "expected one argument: a JSON object with named fields"
            )
        raw = raw[0] if raw else None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ArgumentError(
            f"expected a JSON object with named fields, got {type(raw).__name__}"
        )
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ArgumentError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; expected: {', '.join(fields)}"
        )
    values = {}
    for name, f in fields.items():
        if name not in raw:
            if (
                f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING
            ):
                raise ArgumentError(f"missing required field {name!r}")
            continue
        ok, v = _type_ok(raw[name], hints[name])
        if not ok:
            raise ArgumentError(
                f"field {name!r} must be {_type_name(hints[name])}, got {raw[name]!r:.60}"
            )
        values[name] = v
    obj = cls(**values)
    check = getattr(obj, "check", None)
    if check is not None:
        check()
    return obj


def run_command(name: str, ctx: Any, raw: Any) -> dict[str, Any]:
    """Validate *raw* and run the command *name* against *ctx*."""
    cmd = REGISTRY.get(name)
    if cmd is None:
        raise ArgumentError(
            f"unknown command {name!r}; known: {', '.join(sorted(REGISTRY))}"
        )
    return cmd.handler(ctx, parse_args(cmd.args, raw))


# -- argument types shared by several commands ------------------------------


@dataclass
class NoArgs:
    """Commands that take no fields."""


@dataclass
class QueryArgs:
    query: str
    k: int = 10
    workflow: str | None = None
    kinds: list[str] | None = None
    dense: bool = False

    def check(self) -> None:
        if not self.query.strip():
            raise ArgumentError("field 'query' must not be empty")
        if not 1 <= self.k <= 200:
            raise ArgumentError("field 'k' must be from 1 to 200")


@dataclass
class EvalArgs:
    suiteDir: str | None = None  # noqa: N815 - LSP arguments are camelCase
    k: int = 10
    ablate: bool = False
