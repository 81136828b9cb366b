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
