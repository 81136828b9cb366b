"""The command registry type shared by the CLI, the server and the client types.

A :class:`Command` names one operation over the workspace: an LSP command id,
a dataclass of its argument fields, a typed handler, a text formatter and how
it appears on the command line (:class:`CliSpec`). A :class:`CommandRegistry`
is an immutable mapping of them, built explicitly by
:func:`pycsamt_lsp.commands.catalog.build_registry` -- nothing registers itself
on import, so a front end either has every command or fails loudly.

Each command takes one JSON object of named fields, validated against the
dataclass (unknown fields and wrong types are refused with a message that
names the field, as :class:`~pycsamt_lsp.errors.ArgumentError`), and returns
a JSON-serialisable dict. The same dataclass generates the CLI options
(:mod:`pycsamt_lsp.cli`) and the JSON description the VS Code client's
protocol types are checked against (:meth:`CommandRegistry.describe`).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pycsamt_lsp.convert import structure
from pycsamt_lsp.errors import ArgumentError

__all__ = [
    "ArgumentError",
    "CliSpec",
    "Command",
    "CommandRegistry",
    "Lazy",
    "field_specs",
    "parse_args",
]

Result = dict[str, Any]


@dataclass(frozen=True)
class Lazy:
    """A function named by module and attribute, imported on its first call.

    Why: describing the commands (``pycsamt-lsp --help``, the parser, the
    client description) needs their names and argument dataclasses, not
    their handlers; importing every handler's module up front cost the
    command line ~0.5 s of CPU before any command ran (answers, evaluation,
    developer search, PDF support, numpy), for ``--help`` as for ``build``.
    """

    module: str
    name: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Import the module (once; ``sys.modules`` caches it) and call."""
        return getattr(importlib.import_module(self.module), self.name)(*args, **kwargs)

    @property
    def __name__(self) -> str:  # read by logging and pygls like a function's
        return self.name


@dataclass(frozen=True)
class CliSpec:
    """How a command appears as a ``pycsamt-lsp`` subcommand.

    By default every argument field becomes an option generated from the
    dataclass (required fields positional, ``camelCase`` as ``--kebab-case``,
    booleans as switches). The hooks exist for the few commands whose command
    line differs from their JSON arguments (``validate`` reads a file, ``ask``
    has settings switches, ``build`` can embed).
    """

    name: str  # the subcommand, e.g. "query"
    help: str = ""
    load: bool = True  # open (load or build) the index before running
    #: add options that are not argument fields (e.g. ``ask --offline``)
    options: Callable[[argparse.ArgumentParser], None] | None = None
    #: replace the generated field options entirely (with ``to_raw``)
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    #: the command's JSON arguments from the parsed command line
    to_raw: Callable[[argparse.Namespace], dict[str, Any]] | None = None
    #: adjust the workspace before running (settings switches)
    prepare: Callable[[argparse.Namespace, Any], None] | None = None
    #: post-process the result (e.g. ``build --embed``)
    finish: Callable[[argparse.Namespace, Any, Result], Result] | None = None
    #: the exit code for a result (default 0)
    exit_code: Callable[[Result], int] | None = None


@dataclass(frozen=True)
class Command:
    """A named, typed operation over the workspace."""

    name: str  # LSP command id, e.g. "pycsamt.query"
    args: type
    handler: Callable[[Any, Any], Result]
    format: Callable[[Result], str] | None = None
    title: str = ""
    heavy: bool = False  # runs in a worker thread in the server
    cli: CliSpec | None = None

    def run(self, ctx: Any, raw: Any) -> Result:
        """Validate *raw* against :attr:`args` and run the handler on *ctx*."""
        return self.handler(ctx, parse_args(self.args, raw))


class CommandRegistry(Mapping[str, Command]):
    """An immutable, ordered mapping ``command id -> Command``.

    Built once from an explicit list; duplicate ids or CLI names are refused
    at construction so two commands can never shadow each other.
    """

    __slots__ = ("_by_name",)

    def __init__(self, commands: Iterable[Command]) -> None:
        by_name: dict[str, Command] = {}
        cli_names: set[str] = set()
        for cmd in commands:
            if cmd.name in by_name:
                raise ValueError(f"duplicate command {cmd.name!r}")
            if cmd.cli is not None:
                if cmd.cli.name in cli_names:
                    raise ValueError(f"duplicate CLI name {cmd.cli.name!r}")
                cli_names.add(cmd.cli.name)
            by_name[cmd.name] = cmd
        self._by_name = types.MappingProxyType(by_name)

    def __getitem__(self, name: str) -> Command:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def command(self, name: str) -> Command:
        """The command *name*, or :class:`ArgumentError` listing the known ones."""
        cmd = self._by_name.get(name)
        if cmd is None:
            raise ArgumentError(
                f"unknown command {name!r}; known: {', '.join(sorted(self._by_name))}"
            )
        return cmd

    def run(self, name: str, ctx: Any, raw: Any) -> Result:
        """Validate *raw* and run the command *name* against *ctx*."""
        return self.command(name).run(ctx, raw)

    def by_cli_name(self) -> dict[str, Command]:
        """The commands that have a CLI form, by subcommand name."""
        return {c.cli.name: c for c in self._by_name.values() if c.cli is not None}

    def describe(self) -> dict[str, Any]:
        """A JSON description of every command and its argument fields.

        The VS Code client's protocol types are checked against this (the
        committed ``client-vscode/src/common/commands.generated.json``).
        """
        return {
            "commands": [
                {
                    "name": c.name,
                    "title": c.title,
                    "heavy": c.heavy,
                    "cli": c.cli.name if c.cli else None,
                    "fields": [f.describe() for f in field_specs(c.args)],
                }
                for c in self._by_name.values()
            ]
        }


# -- argument fields -----------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """One argument field: its name, type, default and help text."""

    name: str
    type: Any
    required: bool
    default: Any
    help: str
    flag: str | None  # a CLI flag other than --kebab-case (e.g. "-k")

    def describe(self) -> dict[str, Any]:
        """The field as JSON: JSON-Schema type names, default, help."""
        return {
            "name": self.name,
            "type": json_type(self.type),
            "required": self.required,
            "default": self.default,
            "help": self.help,
        }


def field_specs(cls: type) -> list[FieldSpec]:
    """The argument fields of the dataclass *cls*, in declaration order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        required = (
            f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        )
        default = None
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append(
            FieldSpec(
                name=f.name,
                type=hints[f.name],
                required=required,
                default=default,
                help=str(f.metadata.get("help", "")),
                flag=f.metadata.get("flag"),
            )
        )
    return out


def json_type(tp: Any) -> Any:
    """JSON-Schema-like name of a field type: ``"integer"``, ``["string", "null"]``..."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        names: list[Any] = []
        for alt in typing.get_args(tp):
            n = json_type(alt)
            names.extend(n if isinstance(n, list) else [n])
        return names
    if tp is type(None):
        return "null"
    if origin is list:
        (inner,) = typing.get_args(tp) or (Any,)
        return {"array": json_type(inner)}
    if origin is dict or tp is dict:
        return "object"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return simple.get(tp, "any")


def parse_args(cls: type, raw: Any) -> Any:
    """Build the dataclass *cls* from a JSON object, with clear errors.

    ``None`` or a missing argument means "all defaults"; a list with one
    object (how LSP clients pass ``arguments``) is unwrapped. Validation
    is :func:`pycsamt_lsp.convert.structure` (strict types, unknown fields
    refused, then the dataclass's optional ``check()``).
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
    return structure(cls, raw)
