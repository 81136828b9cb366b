"""The facts of the static package model: what one module binds and defines.

Plain records (:class:`Binding`, :class:`FunctionInfo`, :class:`ClassInfo`,
the :class:`Resolution` a query returns) and the small AST and naming helpers
the extractor, the PEP 562 analyser and the resolver share. Nothing here walks
more than one node or knows about other modules; :class:`ModuleInfo`, the
per-module record, lives with the extractor that fills it
(:mod:`pycsamt_lsp.model.extract`).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pycsamt_lsp.corpus.layout import LAYOUT_PREFIXES as LAYOUT_PREFIXES
from pycsamt_lsp.corpus.layout import STUBS_SUFFIX as STUBS_SUFFIX
from pycsamt_lsp.corpus.layout import package_dir as package_dir
from pycsamt_lsp.corpus.layout import package_dirs as package_dirs
from pycsamt_lsp.pyast.signatures import params_of
from pycsamt_lsp.text.identifiers import split_identifier

#: Bumped whenever the persisted shape of :class:`ModuleInfo` changes.
MODEL_VERSION = 5  # 3: no credentials (issue 19); 4: locals()/sys.modules writes (17)
# 5: modules the index leaves out recorded as deferred (model.deferred, issue 18)


EXISTS, ABSENT, UNKNOWN = "exists", "absent", "unknown"


_SOURCE_SUFFIXES = (".py", ".pyi", ".pyx")


_COMPILED_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\.[^/]*)?\.(so|pyd)$")


#: Decorators that leave a function's keyword parameters as written.
_TRUSTED_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "abstractmethod",
        "abc.abstractmethod",
        "typing.overload",
        "typing.final",
        "typing_extensions.final",
        "typing.override",
        "typing_extensions.override",
        "functools.cache",
        "functools.lru_cache",
        "functools.cached_property",
        "contextlib.contextmanager",
        "contextlib.asynccontextmanager",
    }
)


_DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass", "dataclass"})


#: Class decorators known not to add or remove attributes.
_NEUTRAL_CLASS_DECORATORS = _DATACLASS_DECORATORS | {
    "functools.total_ordering",
    "typing.final",
    "typing_extensions.final",
    "typing.runtime_checkable",
    "typing_extensions.runtime_checkable",
}


_NEUTRAL_METACLASSES = frozenset({"abc.ABCMeta", "ABCMeta"})


def in_stubs_package(rel: str, package: str) -> bool:
    """True for a path inside ``package-stubs/`` (or ``src/package-stubs/``)."""
    parts = rel.split("/", 2)
    stubs = package + STUBS_SUFFIX
    return parts[0] == stubs or (len(parts) > 1 and parts[:2] == ["src", stubs])


def _package_parts(rel: str, package: str) -> list[str] | None:
    """Path segments from the package folder on (``src/`` layout stripped,
    ``package-stubs`` read as ``package``)."""
    parts = rel.split("/")
    if (
        len(parts) >= 2
        and parts[0] == "src"
        and parts[1] in (package, package + STUBS_SUFFIX)
        and package != "src"
    ):
        parts = parts[1:]
    if parts and parts[0] == package + STUBS_SUFFIX:
        parts = [package, *parts[1:]]
    if not parts or parts[0] != package:
        return None
    return parts


def module_name_for(rel: str, package: str) -> tuple[str, bool, str] | None:
    """``(dotted, is_package, kind)`` for a corpus-relative file path, or None.

    ``kind`` is ``source``/``stub``/``cython`` (a ``.pyx``)/``compiled``
    (``.so``/``.pyd``, or a ``.pyx.in``/``.py.in`` template the build turns
    into a module) or ``build``: a file that is no module but tells what the
    build adds to its folder's package (``meson.build`` declaring extension
    modules; C headers / ``.pxd`` of a headers-only package), named after
    that package. ``rel`` may start with ``package/`` or, in a src layout,
    ``src/package/``; in ``package-stubs/`` only ``.pyi`` count. Files
    outside the package and names that are not identifiers (not importable)
    give None.
    """
    parts = _package_parts(rel, package)
    if parts is None or len(parts) < 2:
        return None
    fname = parts[-1]
    if not fname.endswith(".pyi") and in_stubs_package(rel, package):
        return None  # a stub-only package holds nothing Python would load
    dirs = parts[:-1]
    if fname == "meson.build" or fname.endswith((".h", ".pxd")):
        if not all(p.isidentifier() for p in dirs):
            return None
        return ".".join(dirs), False, "build"
    if fname.endswith((".pyx.in", ".py.in")):
        stem, kind = fname.split(".", 1)[0], "compiled"
    elif fname.endswith(_SOURCE_SUFFIXES):
        stem, _, ext = fname.rpartition(".")
        kind = {"pyi": "stub", "pyx": "cython"}.get(ext, "source")
    else:
        m = _COMPILED_RE.match(fname)
        if not m:
            return None
        stem, kind = m.group(1), "compiled"
    if not all(p.isidentifier() for p in dirs):
        return None
    if stem == "__init__":
        return ".".join(dirs), True, kind
    if not stem.isidentifier():
        return None
    return ".".join([*dirs, stem]), False, kind


def identifier_tokens(name: str) -> list[str]:
    """Lower-case word parts of an identifier: ``StaticShiftAgent`` ->
    ``['static', 'shift', 'agent']``, ``estimate_ss_ama`` -> ``['estimate',
    'ss', 'ama']``, ``EDIFile`` -> ``['edi', 'file']``."""
    return split_identifier(name, acronym_before_digit=True)


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _resolve_relative(
    name: str, level: int, module: str, is_package: bool
) -> str | None:
    """Absolute module for a relative ``from`` import, or None if it escapes."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        if level - 1 > len(base):
            return None
        base = base[: len(base) - (level - 1)]
    if not base:
        return None
    return ".".join([*base, name]) if name else ".".join(base)


def _literal(node: ast.AST | None) -> Any:
    """``ast.literal_eval`` that also unwraps ``frozenset({...})`` and friends;
    raises ValueError when the value is not a literal."""
    if node is None:
        raise ValueError("no value")
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and (_dotted(node.func) or "").rsplit(".", 1)[-1]
        in {"frozenset", "set", "tuple", "list", "dict", "MappingProxyType"}
        and not node.keywords
    ):
        if not node.args:
            return ()
        if len(node.args) == 1:
            return ast.literal_eval(node.args[0])
        raise ValueError("not a literal")
    return ast.literal_eval(node)


class _Src:
    """Source text sliced by AST positions (UTF-8 byte columns)."""

    __slots__ = ("lines",)

    def __init__(self, data: bytes | str) -> None:
        if isinstance(data, str):
            raw = data.encode("utf-8", "surrogatepass")
        elif not data.startswith(b"\xef\xbb\xbf"):
            # valid UTF-8 decodes and encodes back to itself, and invalid
            # bytes were kept as they are: no copy round trip (issue 18)
            raw = data
        else:
            try:
                raw = data.decode("utf-8-sig").encode("utf-8")
            except UnicodeDecodeError:
                raw = data
        self.lines = raw.splitlines(keepends=True)

    def segment(self, node: ast.AST, limit: int = 240) -> str | None:
        try:
            l0, c0 = node.lineno - 1, node.col_offset  # type: ignore[attr-defined]
            l1, c1 = node.end_lineno - 1, node.end_col_offset  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            return None
        if l0 < 0 or l1 >= len(self.lines):
            return None
        if l0 == l1:
            raw = self.lines[l0][c0:c1]
        else:
            raw = (
                self.lines[l0][c0:]
                + b"".join(self.lines[l0 + 1 : l1])
                + self.lines[l1][:c1]
            )
        text = raw.decode("utf-8", "replace")
        return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(node: ast.AST | None, src: _Src | None) -> str | None:
    if node is None:
        return None
    if src is not None:
        seg = src.segment(node)
        if seg is not None:
            return seg
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001  # pragma: no cover - no text, not a failed build
        return None
    return text if len(text) <= 240 else text[:237] + "..."


@dataclass(frozen=True)
class _NameSet:
    """Either a finite set (``finite=True``) or "every name except ``names``"."""

    names: frozenset[str]
    finite: bool

    @staticmethod
    def all() -> _NameSet:
        return _NameSet(frozenset(), False)

    @staticmethod
    def of(names: Iterable[str]) -> _NameSet:
        return _NameSet(frozenset(names), True)

    @property
    def empty(self) -> bool:
        return self.finite and not self.names

    def __and__(self, other: _NameSet) -> _NameSet:
        if self.finite and other.finite:
            return _NameSet(self.names & other.names, True)
        if self.finite:
            return _NameSet(self.names - other.names, True)
        if other.finite:
            return _NameSet(other.names - self.names, True)
        return _NameSet(self.names | other.names, False)

    def __or__(self, other: _NameSet) -> _NameSet:
        if self.finite and other.finite:
            return _NameSet(self.names | other.names, True)
        if self.finite:
            return _NameSet(other.names - self.names, False)
        if other.finite:
            return _NameSet(self.names - other.names, False)
        return _NameSet(self.names & other.names, False)

    def complement(self) -> _NameSet:
        return _NameSet(self.names, not self.finite)

    def __sub__(self, other: _NameSet) -> _NameSet:
        return self & other.complement()


def _params(args: ast.arguments, src: _Src | None) -> list[dict[str, Any]]:
    """Parameters as ``{name, kind, default, annotation}`` in call order."""
    return params_of(args, drop_self=False, text=lambda node: _text(node, src))


@dataclass(slots=True)
class FunctionInfo:
    """A ``def`` (function or method): what a hover card and a call check need."""

    name: str
    line: int
    end_line: int
    params: list[dict[str, Any]]
    returns: str | None = None
    doc: str | None = None
    decorators: list[str] = field(default_factory=list)
    is_async: bool = False

    @property
    def has_var_keyword(self) -> bool:
        """True with a ``**kwargs``: any keyword argument may be accepted."""
        return any(p["kind"] == "var_keyword" for p in self.params)

    @property
    def trusted(self) -> bool:
        """True when no decorator could have changed the keyword parameters."""
        return all(
            d in _TRUSTED_DECORATORS or d.endswith((".setter", ".getter", ".deleter"))
            for d in self.decorators
        )

    @property
    def method_kind(self) -> str:
        """``staticmethod``, ``classmethod``, ``property`` or ``function``, from
        the decorators (how a call binds the first parameter).
        """
        if "staticmethod" in self.decorators:
            return "staticmethod"
        if "classmethod" in self.decorators:
            return "classmethod"
        if (
            "property" in self.decorators
            or "functools.cached_property" in self.decorators
        ):
            return "property"
        return "function"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form saved in ``package_model.json``."""
        return {
            "name": self.name,
            "line": self.line,
            "end_line": self.end_line,
            "params": self.params,
            "returns": self.returns,
            "doc": self.doc,
            "decorators": self.decorators,
            "is_async": self.is_async,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FunctionInfo:
        """The inverse of :meth:`to_dict`."""
        return cls(**d)


@dataclass(slots=True)
class ClassInfo:
    """A class body: members, bases (as written, resolved at query time),
    constructor data and the reasons its attributes may be open."""

    name: str
    line: int
    end_line: int
    bases: list[str | None] = field(default_factory=list)
    decorators: list[str] = field(default_factory=list)
    metaclass: str | None = None
    doc: str | None = None
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    attributes: dict[str, int] = field(default_factory=dict)
    instance_attributes: dict[str, int] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    dynamic: str | None = None
    is_dataclass: bool = False
    dataclass_init: bool = True
    fields: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form saved in ``package_model.json`` (methods and nested
        classes included).
        """
        return {
            "name": self.name,
            "line": self.line,
            "end_line": self.end_line,
            "bases": self.bases,
            "decorators": self.decorators,
            "metaclass": self.metaclass,
            "doc": self.doc,
            "methods": {k: v.to_dict() for k, v in self.methods.items()},
            "attributes": self.attributes,
            "instance_attributes": self.instance_attributes,
            "classes": {k: v.to_dict() for k, v in self.classes.items()},
            "dynamic": self.dynamic,
            "is_dataclass": self.is_dataclass,
            "dataclass_init": self.dataclass_init,
            "fields": self.fields,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClassInfo:
        """The inverse of :meth:`to_dict`."""
        d = dict(d)
        d["methods"] = {k: FunctionInfo.from_dict(v) for k, v in d["methods"].items()}
        d["classes"] = {k: ClassInfo.from_dict(v) for k, v in d["classes"].items()}
        return cls(**d)


@dataclass(slots=True)
class Binding:
    """A module-level name.

    ``kind`` is function/class/variable/import/module/global/lazy. For
    ``from M import n`` ``module`` is the absolute M and ``attr`` is n; for
    ``import a.b as x`` ``module`` is ``a.b`` and ``attr`` is None. A lazy
    binding (admitted by ``__getattr__``) carries its resolved target in
    ``module``/``attr`` when the body made it known. ``conditional`` marks a
    binding made under ``if``/``try``/``with``/loops or inside a function.
    """

    name: str
    line: int
    kind: str
    module: str | None = None
    attr: str | None = None
    conditional: bool = False

    @property
    def target(self) -> str | None:
        """Absolute dotted re-export target (``M.n`` or ``a.b``), if any."""
        if self.module is None:
            return None
        return f"{self.module}.{self.attr}" if self.attr else self.module

    def to_list(self) -> list[Any]:
        """The compact list form saved in ``package_model.json`` (the name is the
        key of the enclosing mapping).
        """
        return [self.line, self.kind, self.module, self.attr, self.conditional]

    @classmethod
    def from_list(cls, name: str, v: list[Any]) -> Binding:
        """The inverse of :meth:`to_list`, for the binding called *name*.

        The kind, module and attribute strings are interned: decoded from
        JSON, each occurrence would be its own object (23,000 bindings of a
        loaded pyCSAMT model repeat a few thousand distinct values)."""
        mod, attr = v[2], v[3]
        return cls(
            name,
            v[0],
            sys.intern(v[1]),
            sys.intern(mod) if type(mod) is str else mod,
            sys.intern(attr) if type(attr) is str else attr,
            v[4],
        )


@dataclass
class Resolution:
    """The answer of :meth:`PackageModel.resolve`.

    ``status``: exists / absent / unknown. ``kind``: package, module,
    namespace, class, function, method, variable, attribute, external, lazy.
    ``target``: the canonical dotted name (where it is defined). ``path`` and
    ``line``: its location (corpus-relative). ``failed_at``: index of the
    dotted segment that could not be found or verified, ``parent``: the
    dotted name searched at that point. ``reason`` is a short code
    (``no-such-name``, ``removed``, ``open-namespace``, ``compiled``,
    ``parse-error``, ``external``, ``value``, ``dynamic-class``,
    ``unknown-base``, ``dunder``, ``cycle``, ``broken-reexport``,
    ``outside-package``...); ``message`` is for humans.
    """

    dotted: str
    status: str
    kind: str | None = None
    target: str | None = None
    path: str | None = None
    line: int | None = None
    reason: str | None = None
    message: str | None = None
    failed_at: int | None = None
    parent: str | None = None
    conditional: bool = False
    #: The module defining ``target``: pass it as ``module=`` to
    #: ``signature``/``call_signature``/``doc`` to walk from there.
    module: str | None = None

    @property
    def location(self) -> tuple[str, int] | None:
        """``(path, line)`` to jump to (line 1 when the line is unknown, as for a
        module), or None when the name has no source file.
        """
        return (self.path, self.line or 1) if self.path is not None else None

    @property
    def exists(self) -> bool:
        """The model proves the name exists."""
        return self.status == EXISTS

    @property
    def absent(self) -> bool:
        """The model proves the name does not exist (an error, not a warning)."""
        return self.status == ABSENT


@dataclass(frozen=True)
class _Ref:
    """Something found: a module, a class (module + qualname), a member..."""

    kind: str
    dotted: str
    module: str | None = None
    qual: tuple[str, ...] = ()
    conditional: bool = False


@dataclass(frozen=True)
class _Fail:
    status: str
    reason: str
    message: str


_Step = _Ref | _Fail
