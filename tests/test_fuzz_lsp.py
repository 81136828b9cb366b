"""Property-based fuzzing of the real server over LSP (issue 19).

Hypothesis generates buffers (package code, broken syntax, deep nesting,
huge lines, NUL bytes, lone surrogates, odd line endings), incremental edits
(overlapping, past the end, negative) and requests at random positions
(negative, line 1,000,000, character 2**31-1, 2**40). Each test starts ONE
server session (pytest-lsp) and runs every example in it, many requests per
example; after each example hover on a known document and ``pycsamt.query``
must still answer correctly. A second test fuzzes the arguments of every
``pycsamt.*`` command: argument mistakes must come back as ``InvalidParams``
with a message, never an internal error or silence, and the server must
answer ``pycsamt.stats`` after each.

Hypothesis runs in a worker thread and hands each request to the client's
event loop (``run_coroutine_threadsafe``), so the examples are plain
functions while the client stays asynchronous. Sizes: the ``ci`` profile
(default, derandomised) tries a few hundred examples, i.e. thousands of
requests, in well under a minute; ``--hypothesis-profile=nightly`` tries
many more. Every failure hypothesis shrank is kept below as an explicit
regression test (``test_regression_*``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import string
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from pycsamt_lsp.commands.catalog import build_registry
from pycsamt_lsp.commands.registry import field_specs
from test_server import _track_index_state, start  # noqa: F401 - fixtures

#: the server never sees an OpenAI key: ``pycsamt.ask`` answers offline
_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}


# The real server with an editor budget longer than the client's patience
# (the test wrapper only sets the budget here): a request that would have
# been cut by its budget in production is a hang the test reports.
_ENV["PYCSAMT_TEST_BUDGET"] = "120"
_ENV["PYTHONPATH"] = os.pathsep.join(
    [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]
)
_SERVER = [sys.executable, str(Path(__file__).resolve().parent / "lsp_spin_server.py")]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=_SERVER, server_env=_ENV))
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


GOOD = "from pkg.core.shift import correct_shift\ncorrect_shift(1)\n"
HUGE = 2**31 - 1
INVALID_PARAMS = -32602
#: one request may take this long before the test calls it hung
TIMEOUT = 30.0

# -- strategies ---------------------------------------------------------------

_SNIPPETS = [
    "import pkg",
    "import pkg.core.shift as sh",
    "from pkg.core.shift import correct_shift, ShiftAgent as SA",
    "from pkg.core import (",
    "    correct_shift,",
    "from pkg import ",
    "from . import x",
    "from ..core import shift",
    "sh.correct_shift(data, factor=2.0)",
    "agent = SA('L1', k=2)",
    "agent.run(verbose=True)",
    "pkg.phase.strike_angle(z)",
    "pkg.",
    "sh.",
    "pkg.core.shift.ShiftAgent.",
    "def f(",
    "class C:",
    '    """Static shift.',
    "",
    '    """',
    "    if group is None or name not in group:",
    "    for station in survey stations:",
    "x = (",
    "]]]",
    "lambda: (yield)",
    "# pkg.core",
    "'''unterminated",
    "s = 'é😀'; correct_shift(1)",
]
_ODD = [
    "\x00",
    "\ud800",
    "\udfff",
    "\ufeff",
    "\r",
    "\r\n",
    "\t",
    "\x0c",
    "\u2028",
    "😀",
    "\\",
]


@st.composite
def _pathological(draw) -> str:
    kind = draw(
        st.sampled_from(["nest", "chain", "long", "brackets", "indent", "longname"])
    )
    n = draw(st.integers(1, 3000))
    if kind == "longname":  # a snippet with one of its words made huge
        words = draw(st.sampled_from(_SNIPPETS)).split(" ")
        i = draw(st.integers(0, len(words) - 1))
        words[i] = words[i] + "a" * (n * 20)
        return " ".join(words) + draw(st.sampled_from(["", " as x)", ")", " as", "."]))
    if kind == "nest":
        return "x = " + "(" * n + "1" + ")" * draw(st.integers(0, n))
    if kind == "chain":
        return "pkg." + "a." * n
    if kind == "long":
        return draw(st.sampled_from(["x", "pkg ", "é", "\x00", "."])) * (n * 30)
    if kind == "brackets":
        return "[" * n
    return " " * n + "pkg.core"


_line = st.one_of(
    st.sampled_from(_SNIPPETS),
    st.text(alphabet=string.printable, max_size=40),
    st.lists(st.sampled_from(_SNIPPETS + _ODD), max_size=4).map("".join),
    st.text(max_size=20),
    _pathological(),
)
buffers = st.one_of(
    st.lists(_line, max_size=30).map("\n".join),
    st.tuples(st.lists(_line, max_size=20), st.sampled_from(["\n", "\r\n", "\r"])).map(
        lambda t: t[1].join(t[0])
    ),
)
_coord = st.one_of(
    st.integers(-5, 40),
    st.sampled_from([1_000_000, HUGE, 2**40, -(2**31), -1]),
)
positions = st.tuples(_coord, _coord)
#: a request point: a raw line and either a raw character or "k characters
#: before the end of that line" (resolved against the buffer's first text)
points_st = st.tuples(
    _coord,
    st.one_of(
        _coord.map(lambda c: ("abs", c)), st.integers(0, 6).map(lambda k: ("end", k))
    ),
)
edits = st.one_of(
    st.tuples(positions, positions, _line),  # incremental: range + new text
    buffers.map(lambda text: (None, None, text)),  # whole document
)


# -- the loop bridge ----------------------------------------------------------


class Bridge:
    """Runs coroutines on the client's loop from hypothesis' thread."""

    def __init__(self, client: LanguageClient, loop: asyncio.AbstractEventLoop):
        self.client, self.loop = client, loop
        self.examples = 0
        self.requests = 0
        self.logs_seen = 0

    def call(self, coro, timeout: float = TIMEOUT) -> Any:
        fut = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(coro, timeout), self.loop
        )
        self.requests += 1
        return fut.result(timeout + 5)

    def request(self, method: str, params: Any) -> Any:
        """A request with raw JSON params (negative positions included): the
        typed client API would refuse them before they reach the server."""

        async def send():
            proto = self.client.protocol
            msg_id = f"fuzz-{uuid.uuid4().hex}"
            fut: concurrent.futures.Future = concurrent.futures.Future()
            proto._request_futures[msg_id] = fut
            proto._result_types[msg_id] = None  # the raw JSON result
            proto._send_data(
                {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            )
            return await asyncio.wrap_future(fut)

        return self.call(send())

    def notify(self, method: str, params: Any) -> None:
        async def send():
            self.client.protocol._send_data(
                {"jsonrpc": "2.0", "method": method, "params": params}
            )

        self.call(send())


def _pos(p: tuple[int, int]) -> dict[str, int]:
    return {"line": p[0], "character": p[1]}


def _open(b: Bridge, uri: str, text: str, language: str = "python") -> None:
    b.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": uri,
                "languageId": language,
                "version": 1,
                "text": text,
            }
        },
    )


def _edit(b: Bridge, uri: str, version: int, edit) -> None:
    start, end, text = edit
    change: dict[str, Any] = {"text": text}
    if start is not None:
        change["range"] = {"start": _pos(start), "end": _pos(end)}
    b.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [change],
        },
    )


def _field(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


def _alive(b: Bridge, good: str) -> None:
    """Hover on the known document and a query both answer correctly, and
    the server logged no internal failure since the last check."""
    logs = b.client.log_messages[b.logs_seen :]
    b.logs_seen = len(b.client.log_messages)
    failures = [m.message[:300] for m in logs if " failed" in m.message]
    assert not failures, failures
    h = b.request(
        "textDocument/hover",
        {"textDocument": {"uri": good}, "position": {"line": 0, "character": 30}},
    )
    value = _field(_field(h, "contents"), "value")
    assert "def correct_shift(" in value, h
    res = b.call(
        b.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="pycsamt.query",
                arguments=[{"query": "correct the static shift", "k": 3}],
            )
        )
    )
    assert _field(res, "results"), res


def _exercise(b: Bridge, uri: str, text: str, edit_list, points) -> None:
    """Open *text*, apply the edits, ask everything at every point, close."""
    _open(b, uri, text)
    for version, e in enumerate(edit_list, start=2):
        _edit(b, uri, version, e)
    lines = text.split("\n")
    points = [_resolve(lines, p) for p in points]
    for p in points:
        for method in (
            "textDocument/hover",
            "textDocument/completion",
            "textDocument/definition",
        ):
            b.request(method, {"textDocument": {"uri": uri}, "position": _pos(p)})
        b.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": _pos(p), "end": _pos(points[0])},
                "context": {"diagnostics": []},
            },
        )
    b.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def _resolve(lines: list[str], point) -> tuple[int, int]:
    line, (mode, value) = point
    if mode == "abs":
        return line, value
    text = lines[line] if 0 <= line < len(lines) else ""
    return line, len(text.encode("utf-16-le", "surrogatepass")) // 2 - value


async def _session(client: LanguageClient, tmp_path: Path) -> tuple[Bridge, str]:
    await start(client, tmp_path)
    good = (tmp_path / "good.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=good, language_id="python", version=1, text=GOOD
            )
        )
    )
    return Bridge(client, asyncio.get_running_loop()), good


_FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- buffers, edits, positions ------------------------------------------------


async def test_fuzz_buffers_edits_and_positions(client: LanguageClient, tmp_path):
    b, good = await _session(client, tmp_path)

    @_FUZZ
    @given(
        text=buffers,
        edit_list=st.lists(edits, max_size=5),
        points=st.lists(points_st, min_size=1, max_size=8),
    )
    def example(text: str, edit_list, points) -> None:
        b.examples += 1
        uri = (tmp_path / f"fuzz_{b.examples}.py").as_uri()
        _exercise(b, uri, text, edit_list, points)
        _alive(b, good)

    await asyncio.to_thread(example)
    print(f"\nfuzz buffers: {b.examples} examples, {b.requests} requests")
    assert b.examples >= 20


# -- command arguments ----------------------------------------------------------

_REGISTRY = build_registry()
#: commands whose run is long whatever the arguments (a whole evaluation,
#: a rebuild): fuzzed on their argument checks only, see ``_valid_enough``
_SLOW = {"pycsamt.eval", "pycsamt.rebuild"}
_junk = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63),
        st.floats(allow_nan=False),
        st.text(max_size=30),
        st.sampled_from(["", "x" * 100_000, "../../etc/passwd", "\x00", "\ud800"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def command_calls(draw) -> tuple[str, list[Any]]:
    name = draw(st.sampled_from(sorted(_REGISTRY)))
    specs = field_specs(_REGISTRY[name].args)
    shape = draw(st.sampled_from(["valid", "fields", "fields", "junk", "many"]))
    if shape == "junk":
        return name, [draw(_junk)]
    if shape == "many":
        return name, draw(st.lists(_junk, min_size=2, max_size=3))
    args: dict[str, Any] = {}
    for spec in specs:
        if shape == "valid":
            how = (
                "good"
                if spec.describe()["required"]
                else draw(st.sampled_from(["good", "missing"]))
            )
        else:
            how = draw(st.sampled_from(["good", "edge", "missing", "junk"]))
        if how == "missing":
            continue
        if how == "junk":
            args[spec.name] = draw(_junk)
        else:
            args[spec.name] = _value(spec, draw, edge=how == "edge")
    if shape != "valid" and draw(st.booleans()) and draw(st.booleans()):
        args[draw(st.text(min_size=1, max_size=10))] = draw(_junk)
    return name, [args]


def _value(spec, draw, *, edge: bool) -> Any:
    """A value of the field's type: plausible, or at the edges (``edge``)."""
    kind = spec.describe()["type"]
    kinds = kind if isinstance(kind, list) else [kind]
    if "integer" in kinds:
        return draw(
            st.sampled_from([0, -1, 2**31, 10**9, 201]) if edge else st.integers(1, 10)
        )
    if "boolean" in kinds:
        return draw(st.booleans())
    if "array" in kinds:
        return draw(
            st.lists(st.sampled_from(["python_symbol", "doc", "x", ""]), max_size=3)
        )
    if spec.name == "path":
        return draw(
            st.sampled_from(
                ["pkg/core/shift.py", "pkg/phase.py"]
                + (
                    ["nope.py", "../x.py", "/etc/passwd", "pkg/%2e%2e/x", "pkg/\x00"]
                    if edge
                    else []
                )
            )
        )
    if spec.name in ("suiteDir",):
        return draw(st.sampled_from(["/nonexistent", "", "."]))
    if edge:
        return draw(st.sampled_from(["", " ", "x" * 200_000, "\x00", "\ud800", "é😀"]))
    return draw(
        st.one_of(
            st.sampled_from(["shift", "correct_shift", "ShiftAgent.run", "pkg"]),
            st.text(min_size=1, max_size=30),
        )
    )


def _valid_enough(name: str, args: list[Any]) -> bool:
    """Whether a slow command's arguments would pass validation (then it
    would run for real: skipped, its happy path has its own tests)."""
    from pycsamt_lsp.commands.registry import parse_args

    try:
        parse_args(_REGISTRY[name].args, args)
    except Exception:  # noqa: BLE001 - invalid: the server must refuse it quickly
        return False
    return True


async def test_fuzz_command_arguments(client: LanguageClient, tmp_path):
    b, _good = await _session(client, tmp_path)
    outcomes = {"ok": 0, "invalid": 0}

    @_FUZZ
    @given(call=command_calls())
    def example(call) -> None:
        name, args = call
        if name in _SLOW and _valid_enough(name, args):
            return
        b.examples += 1
        try:
            b.call(
                b.client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=name, arguments=args)
                ),
                timeout=60,
            )
            outcomes["ok"] += 1
        except TimeoutError:
            raise AssertionError(
                f"{name} {json.dumps(args)[:300]} got no answer"
            ) from None
        except Exception as exc:  # noqa: BLE001 - the error is the point
            text = str(exc)
            assert getattr(exc, "code", None) == INVALID_PARAMS, (
                name,
                json.dumps(args, default=repr)[:300],
                type(exc).__name__,
                text[:500],
            )
            assert name in text, text
            outcomes["invalid"] += 1
        stats = b.call(
            b.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="pycsamt.stats", arguments=[{}])
            )
        )
        assert _field(stats, "n_chunks") > 0

    await asyncio.to_thread(example)
    print(f"\nfuzz commands: {b.examples} calls, {b.requests} requests, {outcomes}")
    assert outcomes["invalid"] > 0 and outcomes["ok"] > 0


# -- regressions: every failure hypothesis shrank, kept as an explicit test ------


@pytest.mark.parametrize(
    ("text", "edit_list", "points"),
    [
        # CPython's parser raises MemoryError (not SyntaxError) on a long line
        # of names: diagnostics failed with an empty message
        (("pkg " * 2000).strip(), [], [(0, ("end", 0))]),
        # a lone surrogate: the client side must count its UTF-16 units too
        ("\ud800", [], [(0, ("end", 0))]),
    ],
    ids=["parser-memory-error", "lone-surrogate"],
)
async def test_regression_buffers(
    client: LanguageClient, tmp_path, text, edit_list, points
):
    b, good = await _session(client, tmp_path)

    def run() -> None:
        _exercise(b, (tmp_path / "reg.py").as_uri(), text, edit_list, points)
        _alive(b, good)

    await asyncio.to_thread(run)
