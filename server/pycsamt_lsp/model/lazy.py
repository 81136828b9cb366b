"""The persisted package model, loaded so that only what editing touches is held.

Why: a server holds the model of every module of the package (1,152 on the
pyCSAMT sdist) for as long as it runs, but an editing session reads the
functions and classes of a few dozen. Decoded, their parameter tables and
docstrings were ~35 MB of the server's RSS; the names a module binds (what
resolution, suggestions and the validator's whole-package scans walk) are a
few MB.

So :func:`read_persisted` (for :meth:`PackageModel.load_persisted`) keeps, per module, a :class:`LazyModuleInfo`: every
field of :class:`~pycsamt_lsp.model.extract.ModuleInfo` decoded except
``doc``, ``functions`` and ``classes``, plus where the module's JSON object
sits in ``package_model.json``. The first read of one of those three fields
re-reads that slice (``os.pread`` on a descriptor held open, so an atomic
replace of the file by a later persist does not disturb it), decodes it with
``ModuleInfo.from_dict`` and keeps the result in a small LRU shared by the
modules of one load; the least recently used modules drop their decoded
fields again past a byte budget. Readers always get complete, immutable
facts; only *when* they are decoded changes.

The file format is the one :func:`~pycsamt_lsp.model.state.save_model`
writes (plain JSON, ``ensure_ascii``): the loader walks its two outer
objects with the standard decoder's ``raw_decode`` to learn each module's
span, so character offsets are byte offsets. A file that is not pure ASCII
(written by something else) is decoded eagerly, as before.
"""

from __future__ import annotations

import json
import os
import re
import threading
import weakref
from collections import OrderedDict
from dataclasses import fields
from pathlib import Path
from typing import Any

from pycsamt_lsp.model.deferred import record_of
from pycsamt_lsp.model.extract import ModuleInfo
from pycsamt_lsp.model.facts import MODEL_VERSION, ClassInfo, FunctionInfo

__all__ = ["DEFAULT_BUDGET", "LazyModuleInfo", "ModelFacts", "read_persisted"]

#: Decoded JSON bytes of module facts an LRU keeps (about 4x that in objects).
DEFAULT_BUDGET = 768 * 1024
#: Modules kept decoded whatever their size (a hover card walks a few at once).
_MIN_KEPT = 8

_LAZY_FIELDS = ("doc", "functions", "classes")
_BASE_DOC = ModuleInfo.__dict__["doc"]
_BASE_FUNCTIONS = ModuleInfo.__dict__["functions"]
_BASE_CLASSES = ModuleInfo.__dict__["classes"]
_FIELD_NAMES = tuple(f.name for f in fields(ModuleInfo))


class ModelFacts:
    """One persisted model file, read by span, and the LRU of decoded modules."""

    def __init__(self, path: Path, budget: int = DEFAULT_BUDGET) -> None:
        self.path = str(path)
        self.fd = os.open(self.path, os.O_RDONLY)
        self.budget = budget
        self.lock = threading.Lock()
        # weak: the modules own this object (their source), not the reverse,
        # so a replaced model and its descriptor go with reference counting
        self.kept: OrderedDict[int, tuple[weakref.ref[LazyModuleInfo], int]] = (
            OrderedDict()
        )
        self.kept_bytes = 0
        self.decodes = 0  # how many module slices were decoded (tests, benchmarks)

    def read(self, offset: int, length: int) -> ModuleInfo:
        """The module whose JSON object is at ``[offset, offset + length)``."""
        raw = os.pread(self.fd, length, offset)
        if len(raw) != length:
            raise OSError(f"{self.path}: short read at {offset}")
        self.decodes += 1
        return ModuleInfo.from_dict(json.loads(raw))

    def keep(self, info: LazyModuleInfo, size: int) -> None:
        """Note *info* as decoded (most recent); evict past the budget.
        Called with :attr:`lock` held."""
        key = id(info)
        old = self.kept.pop(key, None)
        if old is not None:
            self.kept_bytes -= old[1]
        self.kept[key] = (weakref.ref(info), size)
        self.kept_bytes += size
        while self.kept_bytes > self.budget and len(self.kept) > _MIN_KEPT:
            _, (ref, vsize) = self.kept.popitem(last=False)
            self.kept_bytes -= vsize
            victim = ref()
            if victim is not None:
                victim._drop()

    def touch(self, info: LazyModuleInfo) -> None:
        """Mark *info* as just used. Called with :attr:`lock` held."""
        try:
            self.kept.move_to_end(id(info))
        except KeyError:  # pinned by an assignment, not in the LRU
            pass

    def __del__(self) -> None:  # pragma: no cover - GC timing
        try:
            os.close(self.fd)
        except (OSError, AttributeError):
            pass


class LazyModuleInfo(ModuleInfo):
    """A :class:`ModuleInfo` whose ``doc``, ``functions`` and ``classes`` are
    decoded from the persisted model on first read (see the module doc).

    Assigning one of them pins the value (no longer lazy). Equal to a plain
    ``ModuleInfo`` with the same facts.
    """

    __slots__ = ("__weakref__", "_facts", "_span")

    _facts: ModelFacts | None
    _span: tuple[int, int] | None

    @classmethod
    def of(
        cls, head: ModuleInfo, facts: ModelFacts, offset: int, length: int
    ) -> LazyModuleInfo:
        """A lazy module with *head*'s decoded fields; the lazy ones are read
        from ``facts`` at ``[offset, offset + length)`` when first needed."""
        info = cls(**{n: getattr(head, n) for n in _FIELD_NAMES})
        info._facts, info._span = facts, (offset, length)
        info._drop()
        return info

    def _drop(self) -> None:
        """Forget the decoded lazy fields (they are read again when needed)."""
        for d in (_BASE_DOC, _BASE_FUNCTIONS, _BASE_CLASSES):
            try:
                d.__delete__(self)
            except AttributeError:
                pass

    def _heavy(
        self,
    ) -> tuple[str | None, dict[str, FunctionInfo], dict[str, ClassInfo]]:
        facts = self._facts
        if facts is None:  # pragma: no cover - every field was assigned
            raise AttributeError("module facts were never set")
        with facts.lock:
            try:
                got = (
                    _BASE_DOC.__get__(self, ModuleInfo),
                    _BASE_FUNCTIONS.__get__(self, ModuleInfo),
                    _BASE_CLASSES.__get__(self, ModuleInfo),
                )
            except AttributeError:
                pass
            else:
                facts.touch(self)
                return got
        span = self._span
        assert span is not None
        full = facts.read(*span)
        if full.name != self.name or full.rel != self.rel:
            raise ValueError(f"{facts.path}: the module at {span[0]} is not {self.rel}")
        got = (full.doc, full.functions, full.classes)
        with facts.lock:
            _BASE_DOC.__set__(self, got[0])
            _BASE_FUNCTIONS.__set__(self, got[1])
            _BASE_CLASSES.__set__(self, got[2])
            facts.keep(self, span[1])
        return got

    def _pin(self) -> None:
        """An assigned lazy field: decode the others once and stop being lazy."""
        if getattr(self, "_span", None) is None:
            return
        doc, functions, classes = self._heavy()
        facts = self._facts
        assert facts is not None
        with facts.lock:
            old = facts.kept.pop(id(self), None)
            if old is not None:
                facts.kept_bytes -= old[1]
            self._span = None
            _BASE_DOC.__set__(self, doc)
            _BASE_FUNCTIONS.__set__(self, functions)
            _BASE_CLASSES.__set__(self, classes)

    def persisted_json(self) -> str | None:
        """The module's JSON object as the persisted file holds it (what
        ``json.dumps(self.to_dict())`` gives), or None once a lazy field was
        assigned (then the file no longer describes this module)."""
        span, facts = self._span, self._facts
        if span is None or facts is None:
            return None
        raw = os.pread(facts.fd, span[1], span[0])
        if len(raw) != span[1]:
            raise OSError(f"{facts.path}: short read at {span[0]}")
        return raw.decode("ascii")

    @property
    def doc(self) -> str | None:
        """The module docstring (decoded on first read)."""
        return self._heavy()[0]

    @doc.setter
    def doc(self, value: str | None) -> None:
        self._pin()
        _BASE_DOC.__set__(self, value)

    @property
    def functions(self) -> dict[str, FunctionInfo]:
        """Module-level functions (decoded on first read)."""
        return self._heavy()[1]

    @functions.setter
    def functions(self, value: dict[str, FunctionInfo]) -> None:
        self._pin()
        _BASE_FUNCTIONS.__set__(self, value)

    @property
    def classes(self) -> dict[str, ClassInfo]:
        """Module-level classes (decoded on first read)."""
        return self._heavy()[2]

    @classes.setter
    def classes(self, value: dict[str, ClassInfo]) -> None:
        self._pin()
        _BASE_CLASSES.__set__(self, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModuleInfo):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _FIELD_NAMES)

    __hash__ = None  # type: ignore[assignment]  # mutable, as ModuleInfo


class _Cursor:
    """Walks the outer objects of a JSON document held as a str."""

    _WS = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.dec = json.JSONDecoder()

    def ws(self) -> None:
        self.pos = self._WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def expect(self, ch: str) -> None:
        self.ws()
        if self.text[self.pos : self.pos + 1] != ch:
            raise ValueError(f"expected {ch!r} at {self.pos} of the package model")
        self.pos += 1

    def peek(self) -> str:
        self.ws()
        return self.text[self.pos : self.pos + 1]

    def value(self) -> tuple[Any, int, int]:
        """The next JSON value and its ``[start, end)``."""
        self.ws()
        start = self.pos
        obj, self.pos = self.dec.raw_decode(self.text, start)
        return obj, start, self.pos

    def members(self):  # -> Iterator[str]
        """Keys of the object at the cursor; the caller reads each value."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            key, _, _ = self.value()
            if not isinstance(key, str):
                raise ValueError("package model: object key is not a string")
            self.expect(":")
            yield key
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}")
            return


def read_persisted(
    path: Path, *, budget: int = DEFAULT_BUDGET, root: Path | None = None
) -> tuple[dict[str, Any], dict[str, ModuleInfo] | None, dict[str, str]]:
    """``package_model.json`` (the document ``{"model": PackageModel.to_dict(),
    "shas": {...}}``) as ``(model, files, shas)``.

    ``files`` maps every module file to a :class:`LazyModuleInfo` and
    ``model`` holds the other keys of the model (version checked); for a
    file that is not pure ASCII ``files`` is None and ``model`` is the whole
    decoded model, for :meth:`PackageModel.from_dict`. A module the build
    deferred (:mod:`pycsamt_lsp.model.deferred`) is read from under *root*
    when first used.
    :class:`ValueError` (or ``KeyError``/``TypeError``) for a document of
    another version or shape, as :meth:`PackageModel.from_dict` raises.
    """
    raw = Path(path).read_bytes()
    if not raw.isascii():  # not our writer's ensure_ascii output: eager
        doc = json.loads(raw.decode("utf-8"))
        return doc["model"], None, dict(doc["shas"])
    text = raw.decode("ascii")
    del raw
    facts = ModelFacts(Path(path), budget)
    cur = _Cursor(text)
    model_d: dict[str, Any] = {}
    files: dict[str, ModuleInfo] = {}
    shas: Any = None
    seen_model = False
    for key in cur.members():
        if key == "model":
            seen_model = True
            for mkey in cur.members():
                if mkey != "files":
                    model_d[mkey], _, _ = cur.value()
                    if mkey == "model_version" and model_d[mkey] != MODEL_VERSION:
                        raise ValueError(
                            f"package model version {model_d[mkey]} != {MODEL_VERSION}"
                        )
                    continue
                for rel in cur.members():
                    d, start, end = cur.value()
                    if not isinstance(d, dict):
                        raise TypeError(f"package model: {rel!r} is not an object")
                    if "deferred" in d:  # listed, parsed from root when used
                        files[rel] = record_of(d, root)
                        continue
                    head = ModuleInfo.from_dict(
                        {**d, "doc": None, "functions": {}, "classes": {}}
                    )
                    files[rel] = LazyModuleInfo.of(head, facts, start, end - start)
        elif key == "shas":
            shas, _, _ = cur.value()
        else:
            cur.value()
    if not seen_model or shas is None:
        raise KeyError("package model: 'model' or 'shas' missing")
    if model_d.get("model_version") != MODEL_VERSION:
        raise ValueError(
            f"package model version {model_d.get('model_version')} != {MODEL_VERSION}"
        )
    if not isinstance(model_d.get("package"), str):
        raise TypeError("package model: 'package' is not a string")
    model_d["dirs"] = list(model_d["dirs"])
    return model_d, files, dict(shas)
