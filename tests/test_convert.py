"""The one validator of outside input (``pycsamt_lsp.convert``): strict JSON
types plus field metadata, in parity with the hand-written checks of the
command registry, the suite loader and the server settings."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

import pytest

from pycsamt_lsp.commands.args import AskArgs, QueryArgs
from pycsamt_lsp.commands.registry import parse_args
from pycsamt_lsp.convert import check_value, merge, structure, type_name
from pycsamt_lsp.errors import ArgumentError, SuiteError
from pycsamt_lsp.lsp.settings import LOG_LEVELS, SEVERITIES, WATCH_MODES, Settings


def test_types_are_strict():
    assert check_value(3, int) == (True, 3)
    assert check_value("3", int)[0] is False  # no coercion
    assert check_value(True, int)[0] is False
    assert check_value(2, float) == (True, 2.0)
    assert check_value(["a"], list[str]) == (True, ["a"])
    assert check_value(["a", 1], list[str])[0] is False
    assert check_value(None, str | None) == (True, None)
    assert type_name(list[str] | None) == "a list of strings or null"


def test_structure_messages_are_the_registry_contract():
    with pytest.raises(ArgumentError, match="missing required field 'question'"):
        parse_args(AskArgs, {"k": 3})
    with pytest.raises(ArgumentError, match="field 'k' must be an integer, got '3'"):
        parse_args(AskArgs, {"question": "x", "k": "3"})
    with pytest.raises(ArgumentError, match=r"unknown field\(s\) 'zz'; expected: "):
        parse_args(QueryArgs, {"query": "x", "zz": 1})
    with pytest.raises(ArgumentError, match="from 1 to 200"):  # check() runs last
        parse_args(QueryArgs, {"query": "x", "k": 0})
    assert parse_args(QueryArgs, [{"query": "x", "kinds": ["doc"]}]).kinds == ["doc"]


def test_structure_with_a_custom_error_and_location():
    @dataclass
    class Rec:
        query: str = field(metadata={"nonblank": True, "message": "needs a query"})
        tags: list[str] | None = None

    with pytest.raises(SuiteError, match=r"^f\.jsonl:2: needs a query$"):
        structure(Rec, {"query": "  "}, error=SuiteError, where="f.jsonl:2: ")
    assert structure(Rec, {"query": "q", "other": 1}, unknown="ignore").query == "q"


# -- parity with the server settings' hand-written validator ----------------


@dataclass(frozen=True)
class SettingsSchema:
    """The server's settings expressed as metadata (what lsp/settings.py checks)."""

    corpusRoot: str | None = field(  # noqa: N815
        default=None,
        metadata={"message": "must be a path string", "empty_is_none": True},
    )
    profile: str = field(default="pycsamt", metadata={"nonempty": True})
    resultCount: int = field(default=10, metadata={"min": 1, "max": 200})  # noqa: N815
    dense: bool = False
    openaiModel: str = field(default="gpt-4o-mini", metadata={"nonempty": True})  # noqa: N815
    logLevel: str = field(default="info", metadata={"choices": LOG_LEVELS})  # noqa: N815
    diagnosticsSeverity: str = field(default="error", metadata={"choices": SEVERITIES})  # noqa: N815
    showSyntaxErrors: bool = False  # noqa: N815
    watch: str = field(default="auto", metadata={"choices": WATCH_MODES})
    debounceMs: int = field(default=250, metadata={"min": 0, "max": 10_000})  # noqa: N815
    indexDir: str | None = field(  # noqa: N815
        default=None,
        metadata={"message": "must be a path string", "empty_is_none": True},
    )


VALUES = [
    None,
    True,
    0,
    1,
    200,
    201,
    -1,
    10_000,
    10_001,
    2.5,
    "x",
    "info",
    "hint",
    "off",
    [],
    {},
]


def test_merge_accepts_and_refuses_what_the_settings_validator_does():
    # every field the schema states is one of the server's (new server fields
    # are simply not covered here until they are added to the schema)
    names = [f.name for f in dataclasses.fields(SettingsSchema)]
    assert set(names) <= {f.name for f in dataclasses.fields(Settings)}
    checked = 0
    for key, value in itertools.product(names, VALUES):
        want, want_problems = Settings().merged({key: value})
        got, got_problems = merge(SettingsSchema(), {key: value})
        assert bool(want_problems) == bool(got_problems), (key, value)
        assert getattr(want, key) == getattr(got, key), (key, value)
        checked += 1
    assert checked == len(names) * len(VALUES)


def test_merge_keeps_the_current_value_and_ignores_unknown_keys():
    s, problems = merge(SettingsSchema(), {"resultCount": 500, "serverPython": "py"})
    assert s.resultCount == 10 and problems == [
        ("resultCount", "must be from 1 to 200")
    ]
