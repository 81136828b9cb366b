"""The command registry: built explicitly, and the one source of the CLI, the
server's command list and the VS Code client's command description."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pycsamt_lsp import __version__, cli
from pycsamt_lsp.commands.catalog import build_registry, default_registry
from pycsamt_lsp.commands.registry import CliSpec, Command, CommandRegistry
from pycsamt_lsp.errors import ArgumentError

PROJECT = Path(__file__).resolve().parents[1]
PKG = PROJECT / "server" / "pycsamt_lsp"
GENERATED = PROJECT / "client-vscode" / "src" / "common" / "commands.generated.json"
PROTOCOL_TS = PROJECT / "client-vscode" / "src" / "common" / "protocol.ts"

EXPECTED = {
    "pycsamt.rebuild": "build",
    "pycsamt.stats": "stats",
    "pycsamt.query": "query",
    "pycsamt.validate": "validate",
    "pycsamt.searchSource": "search",
    "pycsamt.inspectSymbol": "inspect-symbol",
    "pycsamt.readSource": "read-source",
    "pycsamt.eval": "eval",
    "pycsamt.ask": "ask",
}


def test_every_command_is_listed_with_its_cli_name():
    reg = build_registry()
    assert {name: cmd.cli.name for name, cmd in reg.items() if cmd.cli} == EXPECTED


def test_registry_needs_no_import_side_effect():
    # a fresh interpreter that imports only the catalogue has every command,
    # and importing the handlers alone registers nothing anywhere
    code = (
        "import pycsamt_lsp.commands.handlers as h, pycsamt_lsp.commands.registry as r\n"
        "assert not any(isinstance(v, dict) and 'pycsamt.ask' in v for v in vars(r).values())\n"
        "from pycsamt_lsp.commands.catalog import build_registry\n"
        "print(','.join(build_registry()))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert p.returncode == 0, p.stderr
    assert set(p.stdout.strip().split(",")) == set(EXPECTED)


def test_registry_is_immutable_and_refuses_duplicates():
    reg = build_registry()
    with pytest.raises(TypeError):
        reg["x"] = reg["pycsamt.stats"]  # type: ignore[index]
    stats = reg["pycsamt.stats"]
    with pytest.raises(ValueError, match="duplicate command"):
        CommandRegistry([stats, stats])
    other = Command("pycsamt.other", stats.args, stats.handler, cli=stats.cli)
    with pytest.raises(ValueError, match="duplicate CLI name"):
        CommandRegistry([stats, other])
    with pytest.raises(ArgumentError, match="unknown command 'nope'"):
        reg.run("nope", None, {})
    assert default_registry() is default_registry()


def test_no_engine_module_imports_the_cli_or_the_commands():
    """``ask.py`` used to import ``cli._common`` (a cycle); now nothing does."""
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(("commands/", "lsp/")) or rel in ("cli.py", "__main__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                if n.startswith(("pycsamt_lsp.cli", "pycsamt_lsp.commands")):
                    offenders.append(f"{rel}: {n}")
    assert offenders == []


# -- the CLI is generated -----------------------------------------------------


def _subparsers(parser):
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            return action.choices
    raise AssertionError("no subcommands")


def _kebab(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "-" + m.group().lower(), name).replace("_", "-")


def test_every_field_is_an_option_of_its_subcommand():
    reg = default_registry()
    subs = _subparsers(cli.build_parser(reg))
    for cmd in reg.values():
        assert cmd.cli is not None
        p = subs[cmd.cli.name]
        if cmd.cli.arguments is not None:  # a hand-written command line
            continue
        dests = {a.dest: a for a in p._actions}
        for f in cmd.args.__dataclass_fields__.values():
            assert f.name in dests, (cmd.name, f.name)
            action = dests[f.name]
            if action.option_strings:  # an option: --kebab or its short flag
                want = f.metadata.get("flag") or f"--{_kebab(f.name)}"
                assert want in action.option_strings, (cmd.name, f.name)


def test_a_command_added_once_appears_in_the_cli():
    @dataclass
    class EchoArgs:
        text: str = field(metadata={"help": "what to echo"})
        times: int = field(default=1, metadata={"help": "how often"})
        loudVoice: bool = False  # noqa: N815 - LSP arguments are camelCase

    echo = Command(
        "pycsamt.echo",
        EchoArgs,
        lambda _ws, a: {"echo": a.text * a.times, "loud": a.loudVoice},
        cli=CliSpec("echo", help="say it back"),
    )
    reg = CommandRegistry([*build_registry().values(), echo])
    args = cli.build_parser(reg).parse_args(
        ["echo", "hi", "--times", "2", "--loud-voice"]
    )
    assert args._command == "pycsamt.echo"
    assert cli._raw_from_fields(args, echo) == {
        "text": "hi",
        "times": 2,
        "loudVoice": True,
    }
    assert echo.run(None, cli._raw_from_fields(args, echo)) == {
        "echo": "hihi",
        "loud": True,
    }
    names = [c["name"] for c in reg.describe()["commands"]]
    assert names[-1] == "pycsamt.echo"


def test_serve_version_exits_zero(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["serve", "--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pycsamt-lsp {__version__}"


def test_commands_json_is_the_registry_description(capsys):
    assert cli.main(["commands", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == default_registry().describe()
    assert cli.main(["commands"]) == 0
    text = capsys.readouterr().out
    assert "pycsamt.searchSource" in text and "includeTests?" in text


# -- the client's description -------------------------------------------------


def test_committed_client_description_matches_the_registry():
    """Regenerate with ``pycsamt-lsp commands --json > client-vscode/src/common/commands.generated.json``."""
    committed = json.loads(GENERATED.read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(default_registry().describe()))


_TS_TYPES = {
    "string": {"string"},
    "number": {"integer", "number"},
    "boolean": {"boolean"},
}


def _ts_interfaces(text: str) -> dict[str, dict[str, str]]:
    out = {}
    for m in re.finditer(r"export interface (\w+Args) \{(.*?)\}", text, re.S):
        fields = dict(re.findall(r"(\w+)\??:\s*([^;]+);", m.group(2)))
        out[m.group(1)] = fields
    return out


def test_client_protocol_args_are_fields_of_the_commands():
    """Each ``XArgs`` interface in protocol.ts names fields ``pycsamt.x`` has."""
    desc = {c["name"]: c for c in default_registry().describe()["commands"]}
    interfaces = _ts_interfaces(PROTOCOL_TS.read_text(encoding="utf-8"))
    assert interfaces, "protocol.ts has no *Args interfaces"
    for iface, ts_fields in interfaces.items():
        stem = iface.removesuffix("Args")
        name = f"pycsamt.{stem[0].lower()}{stem[1:]}"
        assert name in desc, f"{iface}: no command {name}"
        fields = {f["name"]: f for f in desc[name]["fields"]}
        for fname, ts_type in ts_fields.items():
            assert fname in fields, f"{iface}.{fname} is not a field of {name}"
            types = fields[fname]["type"]
            types = set(types) if isinstance(types, list) else {types}
            want = _TS_TYPES.get(ts_type.strip())
            if want is not None:
                assert types & want, f"{iface}.{fname}: {ts_type} vs {types}"
