"""The compiled methods attrs generates for lsprotocol, kept between server starts.

Why: importing ``lsprotocol.types`` (the LSP types pygls speaks) makes ~570
attrs classes, and attrs writes each class's ``__init__``, ``__eq__``,
``__repr__``... as Python source and compiles it, at every import: 560-590
``compile`` calls, 0.15-0.23 CPU-s of the language server's start (issue 18:
spawn -> first answer). The code those calls produce depends only on the
source text, the file name attrs gives it, the compile mode and flags, and
the interpreter, so it is what a ``.pyc`` file is to a module: this module
keeps it in one ``marshal`` file (in the cache folder, named by the
interpreter's cache tag, e.g. ``attrs-code-cpython-311.marshal``) and hands
it back to attrs on the next start.

How: while :func:`attrs_code_cache` is active, ``attr._make``'s global name
``compile`` (which its generated-method helper calls) is a function that
looks ``(source, filename, mode)`` up in that file's table (by a 128-bit
BLAKE2b digest of them) and compiles on a miss, with the future flags ``attr._make`` itself has (what
its own ``compile`` calls inherit), so a hit is the very code object a
compile would give. The file is rewritten, atomically, when a start missed
anything or used fewer entries than it held (a new attrs or lsprotocol:
only what this start used is kept). A method whose source changes from
start to start (a frozen class's ``__hash__`` holds ``hash()`` of a string,
randomized per process: cattrs' ``AttributeOverride``) is marked volatile
in the file, compiled every time and no reason to rewrite it: before, that
one miss rewrote the 1.2 MB file at every server start (``marshal.dumps``
and an ``fsync`` before the server could answer: 12 M instructions of 1.79 G
to the ``initialize`` answer, under callgrind). A missing, unreadable or
foreign file is ignored (everything is compiled, as before); if ``attr._make`` is not
what this expects, nothing is changed. Trust: the file sits in the user's
own cache folder, like the ``.pyc`` files of the environment.
"""

from __future__ import annotations
import __future__

import logging
import marshal
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import CodeType
from typing import Any, NamedTuple

try:  # what hashlib hands out, without loading OpenSSL's _hashlib (~1.5 ms)
    from _blake2 import blake2b
except ImportError:  # an interpreter without the builtin module
    from hashlib import blake2b

__all__ = [
    "StartCodeCache",
    "attrs_code_cache",
    "default_folder",
    "early_code_cache",
    "lean_init_globals",
    "remove_stale_temps",
    "server_imports",
    "start_code_cache",
]

log = logging.getLogger(__name__)

#: First item of the file: what the code objects in it were compiled by.
_HEADER = ("pycsamt-lsp attrs code 3", sys.version, sys.implementation.cache_tag)

_Key = bytes


class _Table(NamedTuple):
    """What the file holds besides its header."""

    #: code object by :func:`_key` of the compile's arguments
    code: dict[_Key, CodeType]
    #: the key each generated file name had at the last start
    names: dict[str, _Key]
    #: generated file names whose source differs from start to start (a
    #: frozen attrs class's ``__hash__`` holds ``hash()`` of a string, which
    #: hash randomization changes): compiled every time, never stored, and
    #: no reason to rewrite the file
    volatile: frozenset[str]


def _empty() -> _Table:
    return _Table({}, {}, frozenset())


def _read(path: Path, header: tuple[str, ...] = _HEADER) -> _Table:
    """The table in *path*, or an empty one (missing, damaged, foreign)."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return _empty()
    if not (isinstance(data, tuple) and len(data) == 4 and data[0] == header):
        return _empty()
    code, names, volatile = data[1:]
    if not (
        isinstance(code, dict)
        and isinstance(names, dict)
        and isinstance(volatile, frozenset)
        and all(isinstance(c, CodeType) for c in code.values())
    ):
        return _empty()
    return _Table(code, names, volatile)


def _key(source: str, filename: str, mode: str) -> bytes:
    """128-bit BLAKE2b of the compile's arguments (Python's own hash-based
    ``.pyc`` files trust a 64-bit hash of the source): the table then holds
    no copy of the ~1 MB of generated source."""
    h = blake2b(digest_size=16)
    for part in (mode, filename, source):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


#: a temp file of a cache file untouched this long belongs to no live writer
STALE_TEMP_SECONDS = 60.0


def _write(path: Path, table: _Table, header: tuple[str, ...] = _HEADER) -> None:
    from pycsamt_lsp.storage.atomic import atomic_write_bytes

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path)
        atomic_write_bytes(path, marshal.dumps((header, *table)))
    except (OSError, ValueError) as exc:
        log.debug("attrs code cache not written: %s", exc)


def remove_stale_temps(path: Path, older_than: float = STALE_TEMP_SECONDS) -> int:
    """Remove the ``.NAME.XXXXXXXX`` temps of *path* (``atomic_write_bytes``'
    names) that nobody wrote to for *older_than* seconds; how many.

    Why: the cattrs file is written in a worker once the first answer is
    out, and a client that ends the session right away ends the process
    during that write: the temp (0.3-0.6 MB) stayed in the cache folder,
    one more every few such starts. A writer's own temp is younger."""
    import time

    prefix = f".{path.name}."
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    now, removed = time.time(), 0
    for entry in entries:
        rest = entry.name[len(prefix) :]
        if not (entry.name.startswith(prefix) and rest):
            continue
        if not all(c.isascii() and (c.isalnum() or c == "_") for c in rest):
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime < older_than:
                continue
            os.unlink(entry.path)
            removed += 1
        except OSError:
            continue
    return removed


def _future_flags(code: CodeType) -> int:
    """The ``from __future__`` flags *code* was compiled with: what a
    ``compile`` called from it inherits."""
    every = 0
    for name in __future__.all_feature_names:
        every |= getattr(__future__, name).compiler_flag
    return code.co_flags & every


@contextmanager
def attrs_code_cache(folder: Path) -> Iterator[None]:
    """Within the block, attrs' generated methods come from (and go to) the
    cache file in *folder*; see the module doc."""
    try:
        import attr._make as make
    except ImportError:
        yield
        return
    if "compile" in vars(make) or not callable(getattr(make, "_compile_and_eval", 0)):
        yield  # not the attrs this was written for: leave it alone
        return
    path = folder / f"attrs-code-{sys.implementation.cache_tag}.marshal"
    known = _read(path)
    code_used: dict[_Key, CodeType] = {}
    names_used: dict[str, _Key] = {}
    volatile_seen: set[str] = set()
    missed = 0
    flags = _future_flags(make._compile_and_eval.__code__)
    builtin = compile

    def cached(source: Any, filename: Any, mode: str, *args: Any, **kw: Any) -> Any:
        nonlocal missed
        if args or kw or type(source) is not str or type(filename) is not str:
            return builtin(source, filename, mode, *args, **kw)
        key = _key(source, filename, mode)
        code = known.code.get(key)
        if code is None:
            code = builtin(source, filename, mode, flags, True)
            if filename in known.volatile or known.names.get(filename, key) != key:
                volatile_seen.add(filename)  # compiled, not kept
                return code
            missed += 1
        code_used[key] = code
        names_used[filename] = key
        return code

    make.compile = cached  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del make.compile  # type: ignore[attr-defined]
        volatile = frozenset(volatile_seen)
        if missed or len(code_used) != len(known.code) or volatile != known.volatile:
            _write(path, _Table(code_used, names_used, volatile))


#: First item of the cattrs file (:class:`StartCodeCache`).
_CATTRS_HEADER = (
    "pycsamt-lsp cattrs code 1",
    sys.version,
    sys.implementation.cache_tag,
)
#: entries the cattrs file keeps at most: past it (new cattrs or lsprotocol
#: sources), only what the start that went over used is kept
CATTRS_CAP = 4096
#: how cattrs names the "files" of its generated functions
_CATTRS_NAME = "<cattrs generated"


class StartCodeCache:
    """The code a server's start generates as source and compiles, kept
    between starts: cattrs' (un)structure functions, and the methods of the
    dataclasses and named tuples the engine's modules define.

    Why: pygls structures every message and unstructures every answer with
    functions cattrs writes as Python source and compiles, one per LSP class
    the first time it is met: ~70 ``compile`` calls (~80 KB of source) from
    the converter's set-up to the first answer, 12.7 ms of thread CPU on a
    loaded 2-core machine (issue 18: warm start); ``dataclasses`` runs ``exec``
    on the source of each generated method (~56 of them in the modules a warm
    start imports after ``serve`` began) and ``namedtuple`` runs ``eval`` on
    its ``__new__``'s. Same idea as :func:`attrs_code_cache`, over a window that
    ends after the first answer (:meth:`stop`), with its own file,
    ``cattrs-code-<tag>.marshal``: which classes a start meets depends on the
    client (its capabilities, what it sends first), so the file keeps the
    union of what starts used (up to :data:`CATTRS_CAP` entries) instead of
    the last start's, and is rewritten only when a start compiled something
    it did not hold. A cattrs file name whose source differs from start to
    start is volatile (compiled every time, not kept), as there; the
    ``"<string>"`` sources of ``exec`` and ``eval`` are keyed by their text.
    Each stand-in compiles a miss with the future flags of the function that
    calls it (what its own ``compile``, ``exec`` or ``eval`` would inherit),
    so a hit is the very code object the plain call would make.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / f"cattrs-code-{sys.implementation.cache_tag}.marshal"
        self._patched: list[tuple[Any, str]] = []
        self._known = _empty()
        self._loaded = False
        self._code: dict[_Key, CodeType] = {}
        self._names: dict[str, _Key] = {}
        self._volatile: set[str] = set()
        self._missed = 0

    def _code_for(self, source: str, filename: str, mode: str, flags: int) -> CodeType:
        """The code of *source*: from the file, or compiled (and kept)."""
        key = _key(source, filename, mode)
        known = self._known
        code = known.code.get(key)
        if code is None:
            code = compile(source, filename, mode, flags, True)
            tracked = filename.startswith(_CATTRS_NAME)
            if tracked and (
                filename in known.volatile or known.names.get(filename, key) != key
            ):
                self._volatile.add(filename)  # compiled, not kept
                return code
            self._missed += 1
            if tracked:
                self._names[filename] = key
        elif filename.startswith(_CATTRS_NAME):
            self._names[filename] = key
        self._code[key] = code
        return code

    def install(self) -> bool:
        """Stand in for ``cattrs.gen``'s ``compile``, ``dataclasses``' ``exec``
        and ``collections``' ``eval`` (each left alone when it is not what
        this expects); False when none was."""
        self.install_builtins()
        self.install_cattrs()
        return bool(self._patched)

    def _load(self) -> None:
        if not self._loaded:
            self._known = _read(self.path, _CATTRS_HEADER)
            self._loaded = True

    def install_builtins(self) -> bool:
        """The ``dataclasses`` and ``namedtuple`` stand-ins only: what
        ``python -m pycsamt_lsp serve`` installs before it imports the CLI
        (:mod:`pycsamt_lsp.__main__`), so that the ~70 methods the CLI's and
        the server's own dataclasses generate come from the file too
        (``cattrs`` is not imported yet then: :meth:`install_cattrs`, once
        the server's imports are done); False when neither was installed."""
        self._load()
        before = len(self._patched)
        import collections
        import dataclasses

        create = getattr(dataclasses, "_create_fn", None)
        self._stand_in(dataclasses, getattr(create, "__code__", None), "exec", exec)
        code = getattr(collections.namedtuple, "__code__", None)
        self._stand_in(collections, code, "eval", eval)
        return len(self._patched) > before

    def install_cattrs(self) -> bool:
        """The stand-in for ``cattrs.gen``'s ``compile``; False when it was
        not installed (no cattrs, not the cattrs this expects, or there already)."""
        self._load()
        gen: Any
        try:
            import cattrs.gen as gen
        except ImportError:
            return False
        fn = getattr(gen, "make_dict_unstructure_fn_from_attrs", None)
        code = getattr(fn, "__code__", None)
        if code is None or "compile" not in code.co_names or "compile" in vars(gen):
            return False
        flags = _future_flags(code)

        def cached_compile(
            source: Any, filename: Any, mode: str, *args: Any, **kw: Any
        ) -> Any:
            if args or kw or type(source) is not str or type(filename) is not str:
                return compile(source, filename, mode, *args, **kw)
            return self._code_for(source, filename, mode, flags)

        self._patch(gen, "compile", cached_compile)
        return True

    def _stand_in(
        self, module: Any, code: CodeType | None, name: str, builtin: Any
    ) -> None:
        """Stand in for the builtin *name* (``exec`` or ``eval``) in *module*
        when *code* (the generating function's) calls it and the module does
        not already shadow it; a string source is compiled through the cache
        with *code*'s future flags, anything else goes to *builtin* as is."""
        if code is None or name not in code.co_names or name in vars(module):
            return  # (also: already standing in)
        flags = _future_flags(code)

        def cached(source: Any, *args: Any, **kw: Any) -> Any:
            if type(source) is str and not kw:
                source = self._code_for(source, "<string>", name, flags)
            return builtin(source, *args, **kw)

        self._patch(module, name, cached)

    def _patch(self, module: Any, name: str, fn: Any) -> None:
        setattr(module, name, fn)
        self._patched.append((module, name))

    def stop(self) -> Callable[[], None] | None:
        """End the window (on the event loop's thread, which runs the
        converter); returns the write of the file to run elsewhere, or None
        when the file holds everything this start used."""
        patched, self._patched = self._patched, []
        if not patched:
            return None
        for module, name in patched:
            delattr(module, name)
        known = self._known
        volatile = frozenset(known.volatile | self._volatile)
        if not self._missed and volatile == known.volatile:
            return None
        code = {**known.code, **self._code}
        names = {**known.names, **self._names}
        if len(code) > CATTRS_CAP:
            code, names = dict(self._code), dict(self._names)
        for name in volatile:
            names.pop(name, None)
        table = _Table(code, names, volatile)
        path = self.path
        return lambda: _write(path, table, _CATTRS_HEADER)


def start_code_cache(early: StartCodeCache | None = None) -> StartCodeCache | None:
    """A :class:`StartCodeCache` installed in the cache folder, or None
    (switched off like the attrs cache, or cattrs not as expected);
    *early*: the one :func:`early_code_cache` installed, completed here."""
    if not _enabled():
        return None
    if early is not None:
        early.install_cattrs()
        return early if early._patched else None
    cache = StartCodeCache(default_folder())
    return cache if cache.install() else None


def early_code_cache() -> StartCodeCache | None:
    """The ``dataclasses``/``namedtuple`` part of a :class:`StartCodeCache`,
    installed before the CLI is imported (``python -m pycsamt_lsp serve``);
    the server completes it (:func:`start_code_cache`). None when switched
    off or when neither stand-in applies."""
    if not _enabled():
        return None
    cache = StartCodeCache(default_folder())
    return cache if cache.install_builtins() else None


#: the modules whose attrs classes get no copy of the module's namespace
#: (:func:`lean_init_globals`)
_LEAN_MODULES = frozenset({"lsprotocol.types"})


class _ModulesWithout(Mapping[str, Any]):
    """``sys.modules`` without some names (read-only; see :class:`_SysView`)."""

    def __init__(self, hidden: frozenset[str]) -> None:
        self._hidden = hidden

    def __contains__(self, name: object) -> bool:
        return name not in self._hidden and name in sys.modules

    def __getitem__(self, name: str) -> Any:
        if name in self._hidden:
            raise KeyError(name)
        return sys.modules[name]

    def __iter__(self) -> Iterator[str]:
        return (n for n in list(sys.modules) if n not in self._hidden)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _SysView:
    """What ``attr._make`` sees as ``sys`` inside :func:`lean_init_globals`:
    the real module, but for ``modules``."""

    def __init__(self, hidden: frozenset[str]) -> None:
        self.modules = _ModulesWithout(hidden)

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


@contextmanager
def lean_init_globals(hidden: frozenset[str] = _LEAN_MODULES) -> Iterator[None]:
    """Within the block, an attrs class defined in one of the *hidden*
    modules gets no copy of that module's namespace in its methods' globals.

    Why: attrs copies the whole namespace of a class's module (as far as it
    is defined yet) into the globals of each class's generated ``__init__``
    (twice: once for ``__init__``'s own script, again when it joins the
    class's other methods), "so that ``typing.get_type_hints(C.__init__)``
    resolves string types". ``lsprotocol.types`` defines its ~550 classes
    one after the other in one ~800-name module: 208,000 dictionary entries,
    5.5 MB the server keeps for good, and ~0.1 G instructions of its start
    (issue 18). The generated methods never read those names (attrs hands
    them their defaults, validators and converters by their own names), and
    no one asks ``get_type_hints`` of an ``__init__`` there: pygls and
    cattrs read the classes' fields (resolved by lsprotocol), never
    ``__init__``'s globals; the methods' code is the same either way. How:
    ``attr._make``'s global ``sys`` is a view whose ``modules`` does not
    show the hidden modules; everything else is the real ``sys``. If
    ``attr._make`` is not what this expects, nothing is changed.
    """
    try:
        import attr._make as make
    except ImportError:
        yield
        return
    if vars(make).get("sys") is not sys:
        yield  # not the attrs this was written for (or already inside)
        return
    make.sys = _SysView(hidden)  # type: ignore[assignment]
    try:
        yield
    finally:
        make.sys = sys


def default_folder() -> Path:
    """Where the file lives: ``code/`` in the cache folder
    (``$PYCSAMT_LSP_CACHE`` or ``~/.cache/pycsamt-lsp``)."""
    from pycsamt_lsp.corpus.discovery import cache_dir

    return cache_dir() / "code"


def _enabled() -> bool:
    """Off with ``PYCSAMT_LSP_ATTRS_CACHE=0`` (to measure or rule it out):
    then neither the code cache nor :func:`lean_init_globals` is used."""
    return os.environ.get("PYCSAMT_LSP_ATTRS_CACHE", "1") != "0"


@contextmanager
def server_imports() -> Iterator[None]:
    """The block that imports the server: with the cache unless switched off.

    The cyclic collector is left running: pausing it for the imports, then
    collecting once and freezing the rest, took the ``initialize`` answer
    from 1794 to 1739 M instructions (callgrind) but raised the settled RSS
    by 3 MB, with no wall or CPU change beyond the noise of alternating runs;
    freezing without that collection answered sooner (0.40 s against 0.53)
    but kept the imports' garbage until the model load: settled RSS
    98.9-100.5 MB, over the 100 MB aim once (issue 18).
    """
    if not _enabled():
        yield
        return
    with attrs_code_cache(default_folder()), lean_init_globals():
        yield
