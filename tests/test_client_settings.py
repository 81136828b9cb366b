"""One settings contract on both sides: ``server/pycsamt_lsp/settings_schema.json``.

The VS Code extension's ``package.json`` (``contributes.configuration``) must
carry exactly the schema's settings, defaults, ranges and enums, and the
server's own settings converter must accept exactly what the schema allows: each
bound is fed to it, and one step past each bound, so a client never sends a value
the server silently replaces (the resultCount 1..100 vs 1..200 drift of issue 16).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO / "server" / "pycsamt_lsp" / "settings_schema.json"
PACKAGE_JSON = REPO / "client-vscode" / "package.json"
# fields of a schema entry that are the contract's own, not JSON-schema keywords
CONTRACT_ONLY = {"key", "setting", "emptyIsUnset"}


def _settings_class() -> type:
    """The server's settings dataclass (its module may move between packages)."""
    for name in ("pycsamt_lsp.lsp.settings", "pycsamt_lsp.settings"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "Settings"):
            return mod.Settings
    raise AssertionError("the server's Settings class was not found")


Settings = _settings_class()
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
SERVER_ENTRIES: list[dict[str, Any]] = SCHEMA["settings"]
BY_KEY = {e["key"]: e for e in SERVER_ENTRIES}


def _merge(raw: dict[str, Any]) -> tuple[Any, list[str]]:
    """The server's parsing of a client settings object, from the defaults."""
    return Settings().merged(raw)


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["key"] for e in entries]


# --- package.json == schema ------------------------------------------------------


def test_package_json_configuration_is_the_schema() -> None:
    pkg = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    props = pkg["contributes"]["configuration"]["properties"]
    entries = SERVER_ENTRIES + SCHEMA["clientSettings"]
    assert sorted(props) == sorted(e["setting"] for e in entries)
    for e in entries:
        wanted = {k: v for k, v in e.items() if k not in CONTRACT_ONLY}
        assert props[e["setting"]] == wanted, e["setting"]
    # the fields a user sees, spelled out for the ranges issue 16 found drifting
    assert props["pycsamt.resultCount"]["minimum"] == 1
    assert props["pycsamt.resultCount"]["maximum"] == 200
    assert props["pycsamt.watch"]["enum"] == ["auto", "client", "server", "off"]
    assert props["pycsamt.debounceMs"]["default"] == 250


def test_schema_entries_are_complete_and_consistent() -> None:
    for e in SERVER_ENTRIES + SCHEMA["clientSettings"]:
        assert e["setting"].startswith(SCHEMA["section"] + ".")
        assert e["type"] in ("string", "integer", "boolean")
        assert e["markdownDescription"].strip()
        if "enum" in e:
            assert e["default"] in e["enum"]
        if "minimum" in e:
            assert e["minimum"] <= e["default"] <= e["maximum"]
    for e in SERVER_ENTRIES:
        # wire key = the dotted name after `pycsamt.` in camelCase (the client's rule)
        parts = e["setting"].split(".")[1:]
        assert e["key"] == parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def test_schema_ships_with_the_server_package() -> None:
    shipped = resources.files("pycsamt_lsp") / "settings_schema.json"
    assert json.loads(shipped.read_text(encoding="utf-8")) == SCHEMA


# --- the server's converter == schema -------------------------------------------


def test_server_settings_are_exactly_the_schema_settings() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert fields == set(BY_KEY)


@pytest.mark.parametrize("entry", SERVER_ENTRIES, ids=_ids(SERVER_ENTRIES))
def test_server_default_is_the_schema_default(entry: dict[str, Any]) -> None:
    default = getattr(Settings(), entry["key"])
    if entry.get("emptyIsUnset"):
        assert entry["default"] == ""
        assert default is None
        merged, problems = _merge({entry["key"]: ""})
        assert problems == []
        assert getattr(merged, entry["key"]) is None
    else:
        assert default == entry["default"]
        assert type(default) is type(entry["default"])


INTEGERS = [e for e in SERVER_ENTRIES if e["type"] == "integer"]


@pytest.mark.parametrize("entry", INTEGERS, ids=_ids(INTEGERS))
def test_server_accepts_exactly_the_schema_range(entry: dict[str, Any]) -> None:
    key, lo, hi = entry["key"], entry["minimum"], entry["maximum"]
    for value in (lo, hi, (lo + hi) // 2):
        merged, problems = _merge({key: value})
        assert problems == [], (key, value)
        assert getattr(merged, key) == value
    for value in (lo - 1, hi + 1, lo + 0.5, str(lo), True):
        merged, problems = _merge({key: value})
        assert len(problems) == 1, (key, value, problems)
        assert key in problems[0]
        assert getattr(merged, key) == entry["default"], (key, value)


ENUMS = [e for e in SERVER_ENTRIES if "enum" in e]


@pytest.mark.parametrize("entry", ENUMS, ids=_ids(ENUMS))
def test_server_accepts_exactly_the_schema_enum(entry: dict[str, Any]) -> None:
    key = entry["key"]
    for value in entry["enum"]:
        merged, problems = _merge({key: value})
        assert problems == [] and getattr(merged, key) == value, (key, value)
    for value in ("bogus", entry["enum"][0].upper(), 1, ""):
        merged, problems = _merge({key: value})
        assert len(problems) == 1, (key, value)
        assert getattr(merged, key) == entry["default"]


BOOLEANS = [e for e in SERVER_ENTRIES if e["type"] == "boolean"]


@pytest.mark.parametrize("entry", BOOLEANS, ids=_ids(BOOLEANS))
def test_server_accepts_booleans_only(entry: dict[str, Any]) -> None:
    key = entry["key"]
    for value in (True, False):
        merged, problems = _merge({key: value})
        assert problems == [] and getattr(merged, key) is value
    for value in ("true", 1, 0):
        merged, problems = _merge({key: value})
        assert len(problems) == 1, (key, value)
        assert getattr(merged, key) is entry["default"]


STRINGS = [e for e in SERVER_ENTRIES if e["type"] == "string" and "enum" not in e]


@pytest.mark.parametrize("entry", STRINGS, ids=_ids(STRINGS))
def test_server_string_rules_are_the_schema_rules(entry: dict[str, Any]) -> None:
    key = entry["key"]
    merged, problems = _merge({key: "some-value"})
    assert problems == [] and getattr(merged, key) == "some-value"
    merged, problems = _merge({key: 42})
    assert len(problems) == 1 and getattr(merged, key) == getattr(Settings(), key)
    merged, problems = _merge({key: ""})
    if entry.get("minLength", 0) >= 1:
        assert len(problems) == 1, key  # an empty profile or model is refused
        assert getattr(merged, key) == entry["default"]
    else:
        assert problems == [], key


DOTTED = [e for e in SERVER_ENTRIES if e["setting"].count(".") > 1]


@pytest.mark.parametrize("entry", DOTTED, ids=_ids(DOTTED))
def test_server_reads_the_nested_vscode_section(entry: dict[str, Any]) -> None:
    # VS Code's workspace/configuration answer nests `pycsamt.openai.model` as
    # {"openai": {"model": ...}}; the server must map it to the schema's key
    outer, inner = entry["setting"].split(".")[1:3]
    value: Any = entry["enum"][-1] if "enum" in entry else "nested-value"
    if entry["type"] == "boolean":
        value = not entry["default"]
    merged, problems = _merge({"pycsamt": {outer: {inner: value}}})
    assert problems == []
    assert getattr(merged, entry["key"]) == value
