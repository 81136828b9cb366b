"""Module files the index leaves out, modelled only when something asks.

Why: a build models every module file of the package, but about a quarter
of the pyCSAMT sdist's module bytes (its UI glue, its own RAG internals and
eval tables) and more than half of a maintainer checkout's (678 unit-test
modules inside the package) are files the index never chunks. Parsing them
was 25-45 % of a build's CPU, for facts an editing session rarely reads.

So a build lists such a file (name, path, content hash) without parsing it:
a :class:`DeferredModuleInfo`. Its path-derived fields (``name``, ``rel``,
``is_package``, ``kind``: all that the module table and the package-wide
path scans read) are set; the first read of any other field parses the file
under the corpus root (size-bounded, :func:`read_regular`), once, and keeps
the facts. Answers do not change: the facts are the ones an eager build
extracts from the same bytes. A changed file (hash differs from the one
recorded) is parsed as it is now, and logged; a missing or unreadable one
becomes a module whose namespace is unknown, never a crash. Nothing is
imported or executed (``ast`` only).

Package-wide reads decide which files may wait. Resolution walks
``injects`` and ``registered_modules`` of every file before it calls a name
absent, so only files whose text cannot produce them are deferred (those
two fields are then known to be empty without a parse). The suggestion
index reads the names of every public non-test module the profile indexes,
so only modules it never reads are deferred: unit tests inside the package,
modules with a private part (``pkg/app/_glue.py``) and the modules the
profile leaves out of the index (UI glue, the package's RAG internals: the
server's ``suggest_demote``), whose names the package-wide did-you-mean
leaves out (the profile judges them not worth indexing; a query inside one
such module still reads that module's names: ``model.suggest``). Before
that, the build read the names of those modules
(:class:`HeadModuleInfo`, one parse each: ~10 % of a checkout build's CPU)
so that every did-you-mean could offer them, ranked last; deferring them
while still suggesting their names moved 2.3 s of parsing to the first
suggestion of every later process. A module file whose text could inject
or register names is still read whole or as a head.

The persisted model records such a module as deferred (its JSON object has
``"deferred": sha256``) whether or not it was materialised since, so what a
build writes depends only on the corpus; a loaded model materialises them the
same way.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import unicodedata
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pycsamt_lsp.corpus.safety import MODEL_MAX_BYTES, read_regular
from pycsamt_lsp.corpus.testfiles import is_test_module
from pycsamt_lsp.model.extract import ModuleInfo, module_info_from_bytes

__all__ = ["DeferredModuleInfo", "HeadModuleInfo", "deferrable", "record_of"]

log = logging.getLogger(__name__)

#: What the package-wide scans read of every module: ``setattr(obj, "n", v)``
#: injections (``dynamic._scan_injects``: a call of the *name* ``setattr``,
#: so not ``monkeypatch.setattr``) and ``sys.modules[...]`` /
#: ``sys.meta_path`` registrations (``extract``: an attribute ``modules``,
#: so a dot before it, maybe across a continued line or a comment in
#: brackets). A file matching none of these has neither, so both fields
#: are empty without a parse; a false match only means a parse.
_SCANNED = re.compile(rb"(?<![.\w])setattr\b|\.(?:[\s\\]|#[^\n]*)*modules\b|meta_path")
#: :data:`_SCANNED`'s first two alternatives alone, each led by its literal
#: (a leading lookbehind kept the regex from skipping to ``setattr``: it
#: tried every byte, 0.1 s of a checkout build over 176 test modules; the
#: lookbehind after the word asks the same of the byte before it).
_SETATTR_CALL = re.compile(rb"setattr\b(?<![.\w]setattr)")
_MODULES_ATTR = re.compile(rb"\.(?:[\s\\]|#[^\n]*)*modules\b")

#: Text through which a module binds names its source does not spell.
_COMPUTED_NAMES = re.compile(
    rb"\b(?:globals|locals|vars|attach)\b|__getattr__|__dict__"
)
#: Literals one of which every :data:`_COMPUTED_NAMES` match holds: the
#: pattern (no literal prefix) tried every byte, 0.2 s of the first holders
#: scan on the sdist's 290 deferred modules; most files hold none of them.
_COMPUTED_WORDS = (
    b"globals",
    b"locals",
    b"vars",
    b"attach",
    b"__getattr__",
    b"__dict__",
)
#: A PEP 263 encoding declaration on one of the first two lines.
_CODING = re.compile(rb"(?:[^\n]*\n)?[ \t\f]*#[^\n]*?coding[:=][ \t]*([-\w.]+)")
#: Names whose answer a deferred module keeps (:meth:`DeferredModuleInfo.binds`).
_BINDS_KEPT = 64

#: Fields read without materialising: from the path, or known empty.
_PATH_FIELDS = ("name", "rel", "is_package", "kind")
_EMPTY_FIELDS = ("registered_modules", "injects")
_ALL_FIELDS = tuple(f.name for f in fields(ModuleInfo))
_LAZY_FIELDS = tuple(
    n for n in _ALL_FIELDS if n not in _PATH_FIELDS and n not in _EMPTY_FIELDS
)
#: each field's slot descriptor of ModuleInfo (read-only: a shared table)
_SLOT = MappingProxyType({n: ModuleInfo.__dict__[n] for n in _ALL_FIELDS})

#: One lock for every deferred module's first parse: parses are rare and
#: short, and one lock per module would cost a lock object each.
_LOCK = threading.Lock()


def deferrable(name: str, kind: str, data: bytes, *, suggested: bool = True) -> bool:
    """True when the module *name* (of model *kind*, file bytes *data*) may
    be deferred: a test module, one with a private part, or one whose names
    are not *suggested* package-wide (the suggestion index never reads
    their names), plain Python source whose text has nothing
    :data:`_SCANNED` matches (the plain substring tests first: most files
    have none of the words, and the pattern's scan of every dot was most of
    this test's time; the pattern's alternatives are searched one by one,
    each behind its literal: :data:`_SETATTR_CALL`)."""
    if kind != "source" or (suggested and not _never_suggested(name)):
        return False
    # ``_SCANNED.search(data) is None``: no alternative matches anywhere
    if b"meta_path" in data:
        return False
    if b"setattr" in data and _SETATTR_CALL.search(data) is not None:
        return False
    return b"modules" not in data or _MODULES_ATTR.search(data) is None


def _never_suggested(name: str) -> bool:
    """What ``suggest._SuggestIndex`` leaves out unread: test modules
    (``is_test_module``) and, through ``all_symbols``, private modules."""
    return is_test_module(name) or any(p.startswith("_") for p in name.split("."))


def _computes_names(data: bytes) -> bool:
    """``_COMPUTED_NAMES.search(data) is not None``, the pattern tried only
    when one of its literals is in the text."""
    return any(w in data for w in _COMPUTED_WORDS) and bool(
        _COMPUTED_NAMES.search(data)
    )


def _nfkc_non_ascii_lines(data: bytes) -> str:
    """The NFKC form of the lines of UTF-8 *data* that hold a non-ASCII
    byte, newline-joined. An ASCII name absent from *data* is in the NFKC
    form of the whole text exactly when it is in this: NFKC works line by
    line (a newline neither decomposes nor composes with anything, and is
    never inside a UTF-8 sequence) and leaves an ASCII line as it is. Half
    the time of normalising the whole text, on the sdist's UI glue."""
    lines = [line for line in data.split(b"\n") if not line.isascii()]
    return unicodedata.normalize("NFKC", b"\n".join(lines).decode("utf-8", "replace"))


class DeferredModuleInfo(ModuleInfo):
    """A :class:`ModuleInfo` parsed from its file on first use (module doc).

    Equal to the eager ``ModuleInfo`` of the same bytes (comparing reads, so
    materialises). Assigning a field materialises the others first.
    """

    __slots__ = ("_binds", "_ready", "_root", "_sha")

    _binds: dict[str, bool]
    _root: Path | None
    _sha: str
    _ready: bool

    @classmethod
    def of(
        cls,
        *,
        name: str,
        rel: str,
        is_package: bool,
        sha: str,
        root: Path | None,
    ) -> DeferredModuleInfo:
        """A deferred source module: *sha* is the SHA-256 (hex) of the bytes
        the build saw, *root* the corpus root its ``rel`` is relative to."""
        info = cls.__new__(cls)
        for n, v in (
            ("name", name),
            ("rel", rel),
            ("is_package", is_package),
            ("kind", "source"),
            ("registered_modules", []),
            ("injects", []),
        ):
            _SLOT[n].__set__(info, v)
        object.__setattr__(info, "_root", Path(root) if root is not None else None)
        object.__setattr__(info, "_sha", sha)
        object.__setattr__(info, "_ready", False)
        object.__setattr__(info, "_binds", {})
        return info

    @classmethod
    def from_record(cls, d: dict[str, Any], root: Path | None) -> DeferredModuleInfo:
        """The inverse of :meth:`to_dict`."""
        sha = d["deferred"]
        if not isinstance(sha, str):
            raise TypeError(f"package model: {d.get('rel')!r} deferred is not a hash")
        return cls.of(
            name=d["name"],
            rel=d["rel"],
            is_package=bool(d["is_package"]),
            sha=sha,
            root=root,
        )

    @property
    def sha(self) -> str:
        """The content hash the build recorded."""
        return self._sha

    @property
    def materialised(self) -> bool:
        """Whether the file was parsed already."""
        return self._ready

    def binds(self, name: str) -> bool:
        """``name in self.bindings``, without a parse when the file's text
        proves the answer is no (a scan for the modules that hold every
        imported name of a missing module read all 653 test modules of a
        checkout: 2.5 s). Exact: every binding of a plain-ASCII file that
        does not compute names (``globals()``/``locals()``/``vars()`` writes,
        ``__getattr__``, ``lazy_loader.attach``, ``__dict__``) is an
        identifier (NFKC-normalised) or a string literal of its text."""
        return self.may_bind(name) and name in self.bindings

    def may_bind(self, name: str) -> bool:
        """False when ``binds(name)`` is False, known without a parse (the
        file's text: :meth:`binds`); True when it may be True (parsed by
        :meth:`binds` to know). A caller asking for several names asks
        this of each first: one absent name then parses nothing."""
        if self._ready:
            return name in self.bindings
        known = self._binds.get(name)
        if known is None:
            known = self._may_bind(name)
            if len(self._binds) >= _BINDS_KEPT:
                self._binds.clear()
            self._binds[name] = known
        return known

    def _may_bind(self, name: str) -> bool:
        if self._root is None or not name.isascii():
            return True
        try:
            data = read_regular(self._root / self.rel, MODEL_MAX_BYTES)
        except OSError:
            return True  # parsed (as unknown) by the caller's next read
        # the name in the bytes: maybe bound (the parse tells); checked
        # first, as it answers without the scans below
        if data is None or name.encode() in data or _computes_names(data):
            return True
        if data.isascii():
            return False
        # identifiers are NFKC-normalised ("\ufb01le" binds "file"): look in
        # the normalised text; a file in another declared encoding is parsed
        m = _CODING.match(data)
        declared = m.group(1).decode("ascii").lower().replace("_", "-") if m else ""
        if m and declared not in ("utf-8", "utf8"):
            return True
        return name in _nfkc_non_ascii_lines(data)

    def to_dict(self) -> dict[str, Any]:
        """The deferred record (never the parsed facts: what is persisted
        depends on the corpus only, not on what was read meanwhile)."""
        return {
            "name": self.name,
            "rel": self.rel,
            "is_package": self.is_package,
            "kind": self.kind,
            "deferred": self._sha,
        }

    def materialise(self) -> None:
        """Parse the file now (once; thread-safe)."""
        if self._ready:
            return
        with _LOCK:
            if self._ready:
                return
            got = self._parse()
            for n in _LAZY_FIELDS + _EMPTY_FIELDS:
                _SLOT[n].__set__(self, getattr(got, n))
            object.__setattr__(self, "_ready", True)

    def _parse(self) -> ModuleInfo:
        if self._root is None:
            return self._unknown("no corpus root to read it from")
        try:
            data = read_regular(self._root / self.rel, MODEL_MAX_BYTES)
        except OSError as exc:
            log.info("deferred module %s unreadable: %s", self.rel, exc)
            return self._unknown(f"unreadable: {exc}")
        if data is None:
            return self._unknown(f"unreadable: larger than {MODEL_MAX_BYTES} bytes")
        if hashlib.sha256(data).hexdigest() != self._sha:
            log.info(
                "deferred module %s changed since the build: parsed as is", self.rel
            )
        return module_info_from_bytes(
            data, self.name, self.rel, self.is_package, "source", self._root
        )

    def _unknown(self, why: str) -> ModuleInfo:
        """What an eager model holds for a file it cannot read."""
        return ModuleInfo(
            name=self.name,
            rel=self.rel,
            is_package=self.is_package,
            kind="source",
            parse_error=why,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModuleInfo):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _ALL_FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as ModuleInfo

    def __repr__(self) -> str:
        state = "parsed" if self._ready else "deferred"
        return f"DeferredModuleInfo({self.name!r}, {self.rel!r}, {state})"


def _lazy_property(name: str) -> property:
    slot = _SLOT[name]

    def get(self: DeferredModuleInfo) -> Any:
        if not self._ready:
            self.materialise()
        return slot.__get__(self, ModuleInfo)

    def put(self: DeferredModuleInfo, value: Any) -> None:
        if not self._ready:
            self.materialise()
        slot.__set__(self, value)

    return property(get, put, doc=f"``ModuleInfo.{name}``, parsed on first read.")


def _known_property(name: str) -> property:
    """A field known without a parse until the file is parsed (then the
    parsed value: a file changed since the build may differ)."""
    slot = _SLOT[name]

    def get(self: DeferredModuleInfo) -> Any:
        return slot.__get__(self, ModuleInfo)

    def put(self: DeferredModuleInfo, value: Any) -> None:
        if not self._ready:
            self.materialise()
        slot.__set__(self, value)

    return property(get, put, doc=f"``ModuleInfo.{name}`` (empty when deferred).")


for _name in _LAZY_FIELDS:
    setattr(DeferredModuleInfo, _name, _lazy_property(_name))
for _name in _EMPTY_FIELDS:
    setattr(DeferredModuleInfo, _name, _known_property(_name))

#: What :class:`HeadModuleInfo` keeps from the build: all but these.
_HEAVY_FIELDS = ("doc", "functions", "classes")
_HEAD_FIELDS = tuple(
    n for n in _ALL_FIELDS if n not in _PATH_FIELDS and n not in _HEAVY_FIELDS
)


class HeadModuleInfo(DeferredModuleInfo):
    """A module the index leaves out whose names the build reads (one whose
    text may inject or register names, or an indexed file the index could
    not take, whose names the suggestion index reads): the build extracts what it binds and exports
    (:func:`~pycsamt_lsp.model.extract.module_head`, one parse, no def or
    class facts) and its ``doc``, ``functions`` and ``classes`` are parsed
    from the file on first read, as :class:`DeferredModuleInfo` does."""

    __slots__ = ()

    @classmethod
    def of_head(
        cls, head: ModuleInfo, *, sha: str, root: Path | None
    ) -> HeadModuleInfo:
        """*head*'s bound names and exports (its defs and classes are
        placeholders, dropped), the rest read from *root* when used."""
        info = cls.of(
            name=head.name, rel=head.rel, is_package=head.is_package, sha=sha, root=root
        )
        assert isinstance(info, HeadModuleInfo)
        for n in _HEAD_FIELDS:
            _SLOT[n].__set__(info, getattr(head, n))
        return info

    @classmethod
    def from_record(cls, d: dict[str, Any], root: Path | None) -> DeferredModuleInfo:
        """The inverse of :meth:`to_dict`."""
        head = ModuleInfo.from_dict(
            {
                **d["head"],
                "name": d["name"],
                "rel": d["rel"],
                "is_package": d["is_package"],
                "kind": d["kind"],
                "doc": None,
                "functions": {},
                "classes": {},
            }
        )
        sha = d["deferred"]
        if not isinstance(sha, str):
            raise TypeError(f"package model: {d.get('rel')!r} deferred is not a hash")
        return cls.of_head(head, sha=sha, root=root)

    def binds(self, name: str) -> bool:
        """``name in self.bindings`` (known: no parse, no read)."""
        return name in self.bindings

    def may_bind(self, name: str) -> bool:
        """:meth:`binds` (known)."""
        return name in self.bindings

    def to_dict(self) -> dict[str, Any]:
        """The deferred record with the head the build extracted."""
        d = super().to_dict()
        full = ModuleInfo.to_dict(self._head_view())
        d["head"] = {n: full[n] for n in _HEAD_FIELDS}
        return d

    def _head_view(self) -> ModuleInfo:
        """A plain ModuleInfo of the head fields (never parses)."""
        return ModuleInfo(
            name=self.name,
            rel=self.rel,
            is_package=self.is_package,
            kind=self.kind,
            **{n: _SLOT[n].__get__(self, ModuleInfo) for n in _HEAD_FIELDS},
        )

    def __repr__(self) -> str:
        state = "parsed" if self._ready else "head only"
        return f"HeadModuleInfo({self.name!r}, {self.rel!r}, {state})"


for _name in _HEAD_FIELDS:
    setattr(HeadModuleInfo, _name, _known_property(_name))
del _name


def record_of(d: dict[str, Any], root: Path | None) -> DeferredModuleInfo:
    """A persisted deferred record (``"deferred"`` in it) as its module."""
    if "head" in d:
        return HeadModuleInfo.from_record(d, root)
    return DeferredModuleInfo.from_record(d, root)
