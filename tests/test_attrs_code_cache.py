"""The server's attrs code cache gives lsprotocol's classes the very methods a
plain import compiles (lsp/codecache.py, issue 18: the server's start).

Each import runs in a fresh interpreter (the cache works at import time):
with the cache off, with it on and empty (it is written), on and warm (it
is read, not rewritten), and after the file is damaged (ignored, written
again). Every attrs-generated method of every ``lsprotocol.types`` class
must be the same code, from the same generated file name.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import marshal, sys
from pycsamt_lsp.lsp.codecache import server_imports
with server_imports():
    import lsprotocol.types as t
out = []
for name in sorted(vars(t)):
    cls = getattr(t, name)
    if not isinstance(cls, type) or not hasattr(cls, "__attrs_attrs__"):
        continue
    for meth in ("__init__", "__eq__", "__ne__", "__repr__", "__hash__", "__setattr__"):
        fn = cls.__dict__.get(meth)
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_filename.startswith("<attrs generated"):
            out.append((name, meth, code, code.co_filename, code.co_qualname))
sys.stdout.buffer.write(marshal.dumps(out))
"""


def _methods(cache: Path, *, enabled: bool = True) -> list:
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(cache))
    env["PYCSAMT_LSP_ATTRS_CACHE"] = "1" if enabled else "0"
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    )
    return marshal.loads(out.stdout)


def test_cached_methods_are_the_compiled_ones(tmp_path: Path) -> None:
    plain = _methods(tmp_path / "off", enabled=False)
    assert len(plain) > 500  # ~570 classes, an __init__ at least each
    assert not (tmp_path / "off" / "code").exists()

    cold = _methods(tmp_path / "on")
    files = list((tmp_path / "on" / "code").glob("attrs-code-*.marshal"))
    assert len(files) == 1
    written = files[0].stat().st_mtime_ns
    warm = _methods(tmp_path / "on")
    assert files[0].stat().st_mtime_ns == written  # all hits: not rewritten
    assert cold == plain  # code objects compare by bytecode, constants, names
    assert warm == plain  # ... and the tuples also hold file and qualified names

    files[0].write_bytes(b"not marshal data")
    again = _methods(tmp_path / "on")
    assert again == plain
    assert files[0].stat().st_size > 1000  # written again, whole


def test_the_cache_leaves_attr_as_it_found_it() -> None:
    import attr._make as make

    from pycsamt_lsp.lsp.codecache import attrs_code_cache

    before = dict(vars(make))
    with attrs_code_cache(Path("/nonexistent/never-written")):
        assert callable(vars(make)["compile"])
    assert "compile" not in vars(make)
    assert dict(vars(make)) == before


SERVER_PROBE = r"""
import gc, sys
from pycsamt_lsp.lsp.codecache import server_imports
with server_imports():
    from pycsamt_lsp.lsp.server import serve
print(gc.isenabled())
"""


def _server_imports(cache: Path) -> str:
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(cache), PYCSAMT_LSP_ATTRS_CACHE="1")
    out = subprocess.run(
        [sys.executable, "-c", SERVER_PROBE],
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
        text=True,
    )
    return out.stdout.strip()


def test_the_server_imports_rewrite_nothing_once_warm(tmp_path: Path) -> None:
    """cattrs makes a frozen attrs class whose ``__hash__`` source holds a
    per-process ``hash()``: it is marked volatile (second start), then the
    file stays as it is (it used to be rewritten at every start)."""
    assert _server_imports(tmp_path) == "True"  # the collector is back on
    path = next((tmp_path / "code").glob("attrs-code-*.marshal"))
    _server_imports(tmp_path)
    written = path.stat().st_mtime_ns
    _header, code, names, volatile = marshal.loads(path.read_bytes())
    assert volatile and all(name.startswith("<attrs generated") for name in volatile)
    assert not any(name in names for name in volatile)
    assert len(code) == len(names) > 500
    _server_imports(tmp_path)
    assert path.stat().st_mtime_ns == written


def _frame(obj: dict) -> bytes:
    import json

    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_damaged_cache_through_the_real_entry_point(tmp_path: Path) -> None:
    """``python -m pycsamt_lsp serve`` with a damaged cache file answers
    ``initialize`` as usual, exits 0 after shutdown/exit and writes the file
    again, whole."""
    import json

    folder = tmp_path / "code"
    folder.mkdir()
    path = folder / f"attrs-code-{sys.implementation.cache_tag}.marshal"
    path.write_bytes(marshal.dumps(("pycsamt-lsp attrs code 3", "x")) + b"\x00junk")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        },
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(tmp_path))
    env.pop("PYCSAMT_LSP_ATTRS_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-m", "pycsamt_lsp", "serve"],
        input=b"".join(_frame(m) for m in messages),
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    bodies = [
        json.loads(part.split(b"\r\n\r\n", 1)[1])
        for part in out.stdout.split(b"Content-Length: ")[1:]
    ]
    init = next(b for b in bodies if b.get("id") == 1)
    assert "capabilities" in init["result"]
    assert init["result"]["serverInfo"]["name"] == "pycsamt-lsp"
    header, code, _names, _volatile = marshal.loads(path.read_bytes())
    assert header[0] == "pycsamt-lsp attrs code 3" and len(code) > 500


LEAN_PROBE = r"""
import sys
import attr._make as make
from pycsamt_lsp.lsp.codecache import server_imports
with server_imports():
    import lsprotocol.types as t
    from pygls.protocol import default_converter
assert make.sys is sys  # given back
g = t.Position.__init__.__globals__
# the module's namespace is not copied into the methods' globals
assert "Range" not in g and "ALL_TYPES_MAP" not in g, sorted(g)[:20]
assert t.Position(1, 2) == t.Position(line=1, character=2)
assert repr(t.TextEdit(t.Range(t.Position(0, 0), t.Position(0, 1)), "x")).startswith("TextEdit(range=")
conv = default_converter()
raw = {"processId": 7, "rootUri": None, "capabilities": {"window": {"workDoneProgress": True}}}
params = conv.structure(raw, t.InitializeParams)
assert params.capabilities.window.work_done_progress is True
assert conv.unstructure(params)["capabilities"] == raw["capabilities"]
# other modules' attrs classes still get their module's namespace
import attrs
assert "attrs" in attrs.define(type("Probe", (), {"__module__": __name__})).__init__.__globals__
print("ok")
"""


def test_lsprotocol_methods_get_no_copy_of_the_module_namespace(
    tmp_path: Path,
) -> None:
    """``lean_init_globals``: lsprotocol's classes work as before (their
    methods are the compiled ones: see the first test, whose plain import
    has it off) without a copy of ``lsprotocol.types``' namespace each."""
    env = dict(os.environ, PYCSAMT_LSP_CACHE=str(tmp_path), PYCSAMT_LSP_ATTRS_CACHE="1")
    out = subprocess.run(
        [sys.executable, "-c", LEAN_PROBE],
        capture_output=True,
        env=env,
        timeout=120,
        text=True,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_lean_init_globals_leaves_attr_as_it_found_it() -> None:
    import attr._make as make

    from pycsamt_lsp.lsp.codecache import lean_init_globals

    before = dict(vars(make))
    with lean_init_globals(frozenset({"some.module"})):
        view = vars(make)["sys"]
        assert view is not sys
        assert "some.module" not in view.modules and "os" in view.modules
        assert view.modules["os"] is os and view.version == sys.version
        with lean_init_globals():  # nested: left as it is
            assert vars(make)["sys"] is view
    assert dict(vars(make)) == before


def _unstructure_codes(conv) -> dict[str, object]:
    """The code of every function cattrs generates for an initialize answer."""
    import lsprotocol.types as t

    result = t.InitializeResult(
        capabilities=t.ServerCapabilities(
            hover_provider=True,
            completion_provider=t.CompletionOptions(trigger_characters=["."]),
            execute_command_provider=t.ExecuteCommandOptions(commands=["x"]),
        )
    )
    conv.unstructure(result)
    out = {}
    for cls in (t.InitializeResult, t.ServerCapabilities, t.CompletionOptions):
        fn = conv.get_unstructure_hook(cls)
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_filename.startswith("<cattrs generated"):
            out[cls.__name__] = code
    return out


def test_the_start_cache_gives_cattrs_the_compiled_functions(tmp_path: Path) -> None:
    """cattrs' generated (un)structure functions of a start come from the
    cattrs file (lsp/codecache.py ``StartCodeCache``): the same code as a
    plain compile, the file written once, then left alone."""
    import cattrs.gen as gen
    from pygls.protocol import default_converter

    from pycsamt_lsp.lsp.codecache import StartCodeCache

    plain = _unstructure_codes(default_converter())
    assert len(plain) == 3
    before = dict(vars(gen))

    cold = StartCodeCache(tmp_path)
    assert cold.install()
    got_cold = _unstructure_codes(default_converter())
    write = cold.stop()
    assert dict(vars(gen)) == before  # cattrs as it was
    assert write is not None  # everything was a miss
    write()
    written = cold.path.stat().st_mtime_ns
    _header, code, names, volatile = marshal.loads(cold.path.read_bytes())
    assert len(code) == len(names) >= 3 and not volatile

    warm = StartCodeCache(tmp_path)
    assert warm.install()
    got_warm = _unstructure_codes(default_converter())
    assert warm.stop() is None  # all hits: nothing to write
    assert cold.path.stat().st_mtime_ns == written
    assert got_cold == plain and got_warm == plain
    assert {c.co_filename for c in got_warm.values()} == {
        c.co_filename for c in plain.values()
    }
    assert dict(vars(gen)) == before


def _probe_classes() -> tuple[object, object]:
    """A dataclass and a named tuple, made afresh (their methods generated)."""
    import collections
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Probe:
        name: str
        size: int = 3

    return Probe, collections.namedtuple("Pair", "left right")


def test_the_start_cache_gives_dataclasses_and_namedtuples_their_code(
    tmp_path: Path,
) -> None:
    """Within the start window (``StartCodeCache``), a dataclass's generated
    methods and a named tuple's ``__new__`` are the code the plain ``exec``
    and ``eval`` make, and the second start finds them all in the file."""
    import collections
    import dataclasses

    from pycsamt_lsp.lsp.codecache import StartCodeCache

    def codes(classes: tuple) -> list:
        probe, pair = classes
        return [
            getattr(probe, m).__code__
            for m in ("__init__", "__repr__", "__eq__", "__setattr__", "__hash__")
        ] + [pair.__new__.__code__]

    plain = codes(_probe_classes())
    before = (dict(vars(dataclasses)), dict(vars(collections)))
    cold = StartCodeCache(tmp_path)
    assert cold.install()
    got_cold = codes(_probe_classes())
    write = cold.stop()
    assert write is not None
    write()
    assert (dict(vars(dataclasses)), dict(vars(collections))) == before
    warm = StartCodeCache(tmp_path)
    assert warm.install()
    got_warm = codes(_probe_classes())
    assert warm.stop() is None  # every one a hit
    assert got_cold == plain and got_warm == plain
    assert [c.co_filename for c in got_warm] == [c.co_filename for c in plain]


def test_the_early_part_then_the_cattrs_part_make_one_start_cache(
    tmp_path: Path,
) -> None:
    """``python -m pycsamt_lsp serve`` installs the dataclass/namedtuple
    stand-ins before the CLI (``early_code_cache``) and the server adds the
    cattrs one (``start_code_cache(early)``): the same cache, every stand-in
    removed by ``stop``, and the second start finds everything in the file."""
    import collections
    import dataclasses

    import cattrs.gen

    from pycsamt_lsp.lsp.codecache import StartCodeCache

    plain = _probe_classes()
    before = [dict(vars(m)) for m in (dataclasses, collections, cattrs.gen)]
    for start in ("cold", "warm"):
        cache = StartCodeCache(tmp_path)
        assert cache.install_builtins()
        assert "compile" not in vars(cattrs.gen)  # not yet: cattrs comes later
        probe, pair = _probe_classes()
        assert cache.install_cattrs()
        assert not cache.install_builtins()  # already standing in: not twice
        assert probe.__init__.__code__ == plain[0].__init__.__code__
        assert pair.__new__.__code__ == plain[1].__new__.__code__
        write = cache.stop()
        assert [dict(vars(m)) for m in (dataclasses, collections, cattrs.gen)] == (
            before
        )
        if start == "cold":
            assert write is not None
            write()
        else:
            assert write is None  # every one a hit


def test_a_write_removes_the_stale_temps_an_interrupted_write_left(
    tmp_path: Path,
) -> None:
    from pycsamt_lsp.lsp.codecache import _empty, _write

    path = tmp_path / "cattrs-code-x.marshal"
    stale = tmp_path / ".cattrs-code-x.marshal.ab12_xyz"
    fresh = tmp_path / ".cattrs-code-x.marshal.cd34_xyz"
    other = tmp_path / ".attrs-code-x.marshal.ef56_xyz"
    for p in (stale, fresh, other):
        p.write_bytes(b"partial")
    old = os.stat(stale).st_mtime - 3600
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    _write(path, _empty())
    assert path.is_file() and not stale.exists()
    assert fresh.exists()  # a live writer's, maybe
    assert other.exists()  # another file's temp: its own write sweeps it
