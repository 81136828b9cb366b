"""A static model of a Python package: what exists, what provably does not.

DESIGN 6. The model is built from parsed source only; nothing of the modelled
package is ever imported or executed. It answers three questions:

* ``resolve("pkg.a.b")`` -- does this dotted name exist (and where), is it
  provably absent (the namespace it would live in is *closed* and has no such
  name or submodule), or can it not be known (open namespace, compiled module,
  external star import, class with external bases...)? Absence is only ever
  claimed when it is provable, because the validator turns it into an error.
* ``members``/``signature`` -- what completion and hover cards need.
* ``suggest`` -- real symbols close to a hallucinated name, for quick fixes.

Per-module facts live in :class:`ModuleInfo`, extracted from one ``ast.Module``
(``ModuleInfo.from_tree``) so the server can share the parse with the index,
and JSON-serialisable (``to_dict``/``from_dict``) so the model can be persisted
next to the index and warm-started without re-parsing. :class:`PackageModel`
holds one ``ModuleInfo`` per file and does every cross-module step (re-export
chains, star imports, lazy ``__getattr__`` targets, class bases) at query
time, with a cache that every update clears; that keeps incremental updates a
matter of replacing one file's ``ModuleInfo``.

PEP 562 module ``__getattr__`` gets a small abstract interpretation
(:class:`_GetattrAnalyzer`): when it only admits names drawn from module-level
literal collections (or ``name == "x"`` tests) and raises otherwise, the
namespace stays closed and is extended by exactly the admitted names, each
resolved to the target its body would import; names it raises for under a
finite test (pyCSAMT's ``_REMOVED`` table) are absent, with the package's own
message rendered from the literal. Anything it cannot follow makes the
namespace open.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import os
import re
import time
import weakref
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pycsamt_lsp.corpus.safety import MODEL_MAX_BYTES, read_regular
from pycsamt_lsp.corpus.testfiles import is_test_module
from pycsamt_lsp.index.heap import paused_gc
from pycsamt_lsp.pyast.signatures import params_of
from pycsamt_lsp.text.identifiers import split_identifier
from pycsamt_lsp.text.secrets import mask, mask_tree

__all__ = [
    "MODEL_VERSION",
    "Binding",
    "ClassInfo",
    "FunctionInfo",
    "ModuleInfo",
    "PackageModel",
    "Resolution",
    "identifier_tokens",
    "module_name_for",
]

#: Bumped whenever the persisted shape of :class:`ModuleInfo` changes.
MODEL_VERSION = 2

EXISTS, ABSENT, UNKNOWN = "exists", "absent", "unknown"

_SOURCE_SUFFIXES = (".py", ".pyi", ".pyx")
#: Folders under a corpus root that may hold the package: flat, then ``src/``.
LAYOUT_PREFIXES = ("", "src/")
_COMPILED_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\.[^/]*)?\.(so|pyd)$")
_SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", "node_modules"})

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
#: Bases that contribute no public attributes a generated script could use.
_EMPTY_BASES = frozenset(
    {
        "builtins.object",
        "abc.ABC",
        "typing.Generic",
        "typing.Protocol",
        "typing_extensions.Protocol",
    }
)
_EXCEPTION_ATTRS = frozenset({"args", "with_traceback", "add_note"})
_BUILTIN_NAMES = frozenset(dir(builtins))
#: ``globals().<method>`` calls that only read the namespace.
_READONLY_GLOBALS_METHODS = frozenset(
    {"get", "keys", "items", "values", "copy", "__contains__", "__getitem__"}
)
_READONLY_GLOBALS_WRAPPERS = frozenset(
    {"set", "list", "sorted", "len", "dict", "tuple", "frozenset", "iter"}
)


# --------------------------------------------------------------------------
# small helpers


def package_dir(root: Path, package: str) -> Path | None:
    """Where ``package`` sits under ``root``: ``root/package`` (flat layout)
    or ``root/src/package`` (src layout); None when neither is a folder."""
    for pre in LAYOUT_PREFIXES:
        cand = Path(root) / pre / package
        if cand.is_dir():
            return cand
    return None


def _package_parts(rel: str, package: str) -> list[str] | None:
    """Path segments from the package folder on (``src/`` layout stripped)."""
    parts = rel.split("/")
    if len(parts) >= 2 and parts[0] == "src" and parts[1] == package != "src":
        parts = parts[1:]
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
    ``src/package/``. Files outside the package and names that are not
    identifiers (not importable) give None.
    """
    parts = _package_parts(rel, package)
    if parts is None or len(parts) < 2:
        return None
    fname = parts[-1]
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


def _stem(token: str) -> str:
    return token[:-1] if len(token) > 3 and token.endswith("s") else token


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


def _iter_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested blocks included (no expressions)."""
    stack = list(reversed(body))
    while stack:
        st = stack.pop()
        yield st
        nested: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            nested.extend(getattr(st, name, ()) or ())
        for h in getattr(st, "handlers", ()) or ():
            nested.extend(h.body)
        for c in getattr(st, "cases", ()) or ():
            nested.extend(c.body)
        stack.extend(reversed(nested))


_GLOBAL_RE = re.compile(rb"^[ \t]*global[ \t]+[A-Za-z_]|\bglobals\s*\(", re.MULTILINE)


def _is_globals_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "globals"
        and not node.args
        and not node.keywords
    )


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


def _str_members(value: Any) -> list[str] | None:
    """The string members of a literal collection (dict keys), or None."""
    if isinstance(value, dict):
        items = list(value.keys())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        return None
    if not all(isinstance(v, str) for v in items):
        return None
    return items


class _Src:
    """Source text sliced by AST positions (UTF-8 byte columns)."""

    __slots__ = ("lines",)

    def __init__(self, data: bytes | str) -> None:
        if isinstance(data, str):
            raw = data.encode("utf-8", "surrogatepass")
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


def _doc(node: ast.AST) -> str | None:
    """The docstring as hover and completion show it: credential values
    masked (a docstring example with a real key; issue 19)."""
    doc = ast.get_docstring(node)  # type: ignore[arg-type]
    return mask(doc) if doc else doc


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


# --------------------------------------------------------------------------
# NameSet: finite or co-finite sets of names (for the __getattr__ analysis)


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


# --------------------------------------------------------------------------
# per-module facts


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
        """The inverse of :meth:`to_list`, for the binding called *name*."""
        return cls(name, v[0], v[1], v[2], v[3], v[4])


@dataclass(slots=True)
class ModuleInfo:
    """Facts about one module file, extracted from one parsed ``ast.Module``.

    ``kind`` is ``source``, ``stub``, ``compiled`` (opaque: every name is
    unknown) or ``namespace`` (a directory without ``__init__``: only its
    submodules exist). ``parse_error`` set means the module exists but its
    namespace is unknown. ``open_reason`` set means the namespace can gain
    names the model cannot see (``globals()`` writes, ``exec``...).
    """

    name: str
    rel: str
    is_package: bool = False
    kind: str = "source"
    doc: str | None = None
    bindings: dict[str, Binding] = field(default_factory=dict)
    all: list[str] | None = None
    all_dynamic: bool = False
    star_imports: list[str] = field(default_factory=list)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    getattr: dict[str, Any] | None = None
    open_reason: str | None = None
    parse_error: str | None = None
    registered_modules: list[str] = field(default_factory=list)
    #: Literal names this module's code sets with ``setattr(obj, "name", v)``
    #: on objects that are not its own classes or ``self``/``cls``: another
    #: module may be the target (scikit-image's plugin manager injects
    #: ``imread_collection`` into plugin modules), so the model never calls
    #: such a name absent anywhere in the package.
    injects: list[str] = field(default_factory=list)

    # -- constructors -------------------------------------------------------

    @classmethod
    def from_tree(
        cls,
        tree: ast.Module,
        *,
        name: str,
        rel: str,
        is_package: bool = False,
        kind: str = "source",
        source: bytes | str | None = None,
    ) -> ModuleInfo:
        """Extract the module's facts from an already-parsed tree.

        ``source`` (the bytes or text the tree was parsed from) is optional:
        with it, defaults and annotations are sliced from the text instead of
        unparsed, and whole-tree walks for ``global``/``globals()`` are
        skipped when the text does not mention them.
        """
        return _ModuleExtractor(tree, name, rel, is_package, kind, source).run()

    @classmethod
    def from_source(
        cls,
        data: bytes | str,
        *,
        name: str,
        rel: str,
        is_package: bool = False,
        kind: str = "source",
    ) -> ModuleInfo:
        """Parse and extract; a parse failure gives a module whose namespace
        is unknown (never raises). The cyclic GC is paused for the file
        (``heap.paused_gc``).
        """
        with paused_gc():
            try:
                tree = ast.parse(data, filename=rel, type_comments=False)
            except (SyntaxError, ValueError) as exc:
                return cls(
                    name=name,
                    rel=rel,
                    is_package=is_package,
                    kind=kind,
                    parse_error=str(exc),
                )
            except RecursionError:  # pragma: no cover - pathological nesting
                return cls(
                    name=name,
                    rel=rel,
                    is_package=is_package,
                    kind=kind,
                    parse_error="too deeply nested",
                )
            return cls.from_tree(
                tree, name=name, rel=rel, is_package=is_package, kind=kind, source=data
            )

    # -- queries --------------------------------------------------------------

    @property
    def known(self) -> bool:
        """True when the namespace was read (not compiled, parsed fine)."""
        return self.kind != "compiled" and self.parse_error is None

    def public_names(self) -> list[str]:
        """Bound names without a leading underscore (a star import without
        ``__all__`` takes these).
        """
        return [n for n in self.bindings if not n.startswith("_")]

    # -- persistence ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON form saved in ``package_model.json``."""
        return {
            "name": self.name,
            "rel": self.rel,
            "is_package": self.is_package,
            "kind": self.kind,
            "doc": self.doc,
            "bindings": {k: b.to_list() for k, b in self.bindings.items()},
            "all": self.all,
            "all_dynamic": self.all_dynamic,
            "star_imports": self.star_imports,
            "functions": {k: f.to_dict() for k, f in self.functions.items()},
            "classes": {k: c.to_dict() for k, c in self.classes.items()},
            "getattr": self.getattr,
            "open_reason": self.open_reason,
            "parse_error": self.parse_error,
            "registered_modules": self.registered_modules,
            "injects": self.injects,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModuleInfo:
        """The inverse of :meth:`to_dict`."""
        d = dict(d)
        d["bindings"] = {k: Binding.from_list(k, v) for k, v in d["bindings"].items()}
        d["functions"] = {
            k: FunctionInfo.from_dict(v) for k, v in d["functions"].items()
        }
        d["classes"] = {k: ClassInfo.from_dict(v) for k, v in d["classes"].items()}
        return cls(**d)


# --------------------------------------------------------------------------
# extraction


class _ModuleExtractor:
    """One pass over the module-level statements (plus targeted walks)."""

    def __init__(
        self,
        tree: ast.Module,
        name: str,
        rel: str,
        is_package: bool,
        kind: str,
        source: bytes | str | None,
    ) -> None:
        self.tree = tree
        self.src = _Src(source) if source is not None else None
        self.raw = source
        self.info = ModuleInfo(name=name, rel=rel, is_package=is_package, kind=kind)
        self.literals: dict[str, ast.AST] = {}
        self.getattr_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.handled_globals: set[int] = set()

    # -- driver ---------------------------------------------------------------

    def run(self) -> ModuleInfo:
        info = self.info
        info.doc = _doc(self.tree)
        self._stmts(self.tree.body, False, {})
        self._scan_globals()
        self._scan_injects()
        if self.getattr_node is not None:
            info.getattr = _GetattrAnalyzer(self).run(self.getattr_node)
            for n, target in info.getattr.get("admitted", {}).items():
                if n not in info.bindings:
                    mod, attr = target if target else (None, None)
                    info.bindings[n] = Binding(
                        n, self.getattr_node.lineno, "lazy", mod, attr, True
                    )
        return info

    def _bind(
        self,
        name: str,
        line: int,
        kind: str,
        cond: bool,
        module: str | None = None,
        attr: str | None = None,
    ) -> None:
        self.info.bindings[name] = Binding(name, line, kind, module, attr, cond)

    def _normalise(self, node: ast.AST) -> str:
        """Dotted name of a decorator/base with import aliases expanded."""
        if isinstance(node, ast.Call):
            node = node.func
        d = _dotted(node)
        if d is None:
            return _text(node, self.src) or "?"
        root, _, rest = d.partition(".")
        b = self.info.bindings.get(root)
        if b is not None and b.kind in ("import", "module") and b.target:
            return f"{b.target}.{rest}" if rest else b.target
        return d

    # -- statements -------------------------------------------------------------

    def _stmts(
        self, body: list[ast.stmt], cond: bool, loop_env: dict[str, list[str]]
    ) -> None:
        for st in body:
            self._stmt(st, cond, loop_env)

    def _stmt(self, st: ast.stmt, cond: bool, loop_env: dict[str, list[str]]) -> None:
        info = self.info
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._bind(st.name, st.lineno, "function", cond)
            info.functions[st.name] = self._function(st)
            info.classes.pop(st.name, None)
            if st.name == "__getattr__":
                self.getattr_node = st
        elif isinstance(st, ast.ClassDef):
            self._bind(st.name, st.lineno, "class", cond)
            info.classes[st.name] = self._class(st)
            info.functions.pop(st.name, None)
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                self._target(t, st, cond, loop_env)
            self._assigned_getattr(st)
            if len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                self.literals[st.targets[0].id] = st.value
                if st.targets[0].id == "__all__":
                    self._set_all(st.value, replace=True)
        elif isinstance(st, ast.AnnAssign):
            if isinstance(st.target, ast.Name):
                if st.value is not None or info.kind == "stub":
                    self._bind(st.target.id, st.lineno, "variable", cond)
                if st.value is not None:
                    self.literals[st.target.id] = st.value
                    if st.target.id == "__all__":
                        self._set_all(st.value, replace=True)
            else:
                self._target(st.target, st, cond, loop_env)
        elif isinstance(st, ast.AugAssign):
            if isinstance(st.target, ast.Name):
                if st.target.id == "__all__" and isinstance(st.op, ast.Add):
                    self._set_all(st.value, replace=False)
                elif st.target.id not in info.bindings:
                    self._bind(st.target.id, st.lineno, "variable", cond)
        elif isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    self._bind(a.asname, st.lineno, "module", cond, a.name)
                else:
                    root = a.name.split(".")[0]
                    self._bind(root, st.lineno, "module", cond, root)
        elif isinstance(st, ast.ImportFrom):
            self._import_from(st, cond)
        elif isinstance(st, ast.If):
            self._stmts(st.body, True, loop_env)
            self._stmts(st.orelse, True, loop_env)
        elif isinstance(st, (ast.Try, ast.TryStar)):
            self._stmts(st.body, True, loop_env)
            for h in st.handlers:
                self._stmts(h.body, True, loop_env)
            self._stmts(st.orelse, True, loop_env)
            self._stmts(st.finalbody, True, loop_env)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                if item.optional_vars is not None:
                    self._target(item.optional_vars, st, True, loop_env)
            self._stmts(st.body, True, loop_env)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            env = dict(loop_env)
            self._target(st.target, st, True, loop_env)
            if isinstance(st.target, ast.Name):
                values = self._literal_strings(st.iter)
                if values is not None:
                    env[st.target.id] = values
            self._stmts(st.body, True, env)
            self._stmts(st.orelse, True, loop_env)
        elif isinstance(st, ast.While):
            self._stmts(st.body, True, loop_env)
            self._stmts(st.orelse, True, loop_env)
        elif isinstance(st, ast.Match):
            for case in st.cases:
                self._stmts(case.body, True, loop_env)
        elif isinstance(st, ast.Delete):
            if not cond:
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        info.bindings.pop(t.id, None)
        elif isinstance(st, ast.Expr):
            self._expr_stmt(st.value)

    def _target(
        self, t: ast.AST, st: ast.stmt, cond: bool, loop_env: dict[str, list[str]]
    ) -> None:
        info = self.info
        if isinstance(t, ast.Name):
            self._bind(t.id, st.lineno, "variable", cond)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._target(e, st, cond, loop_env)
        elif isinstance(t, ast.Starred):
            self._target(t.value, st, cond, loop_env)
        elif isinstance(t, ast.Subscript):
            if _is_globals_call(t.value):
                self.handled_globals.add(id(t.value))
                keys = self._key_strings(t.slice, loop_env)
                if keys is None:
                    info.open_reason = (
                        info.open_reason or f"writes to globals() at line {st.lineno}"
                    )
                for k in keys or ():
                    self._bind(k, st.lineno, "variable", True)
            elif _dotted(t.value) == "sys.modules":
                keys = self._key_strings(t.slice, loop_env)
                if keys is None:
                    if isinstance(t.slice, ast.Name) and t.slice.id == "__name__":
                        info.open_reason = (
                            f"replaces itself in sys.modules at line {st.lineno}"
                        )
                else:
                    info.registered_modules.extend(keys)
        elif isinstance(t, ast.Attribute):
            root = t.value
            if isinstance(root, ast.Name) and root.id in info.classes:
                info.classes[root.id].attributes.setdefault(t.attr, st.lineno)
            elif (
                isinstance(root, ast.Subscript) and _dotted(root.value) == "sys.modules"
            ):
                info.open_reason = f"patches its sys.modules entry at line {st.lineno}"

    def _key_strings(
        self, node: ast.AST, loop_env: dict[str, list[str]]
    ) -> list[str] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name) and node.id in loop_env:
            return list(loop_env[node.id])
        if isinstance(node, ast.JoinedStr):
            names = [
                v.value.id
                for v in node.values
                if isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
            ]
            if (
                len(names) == 1
                and names[0] in loop_env
                and all(
                    isinstance(v, ast.Constant)
                    or (
                        isinstance(v, ast.FormattedValue)
                        and v.conversion == -1
                        and v.format_spec is None
                    )
                    for v in node.values
                )
            ):
                out = []
                for val in loop_env[names[0]]:
                    out.append(
                        "".join(
                            # an f-string's literal parts are str constants
                            str(v.value) if isinstance(v, ast.Constant) else val
                            for v in node.values
                        )
                    )
                return out
        return None

    def _literal_strings(self, node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Name):
            node = self.literals.get(node.id)  # type: ignore[assignment]
            if node is None:
                return None
        try:
            return _str_members(_literal(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    def _import_from(self, st: ast.ImportFrom, cond: bool) -> None:
        info = self.info
        if st.module == "__future__":
            return
        if st.level:
            mod = _resolve_relative(
                st.module or "", st.level, info.name, info.is_package
            )
        else:
            mod = st.module
        for a in st.names:
            if a.name == "*":
                if mod is None:
                    info.open_reason = (
                        info.open_reason or "star import beyond the top-level package"
                    )
                else:
                    info.star_imports.append(mod)
                continue
            self._bind(a.asname or a.name, st.lineno, "import", cond, mod, a.name)

    def _set_all(self, value: ast.AST, replace: bool) -> None:
        info = self.info
        names = self._all_value(value)
        if names is None:
            info.all_dynamic = True
            return
        if replace or info.all is None:
            info.all = list(names)
        else:
            info.all.extend(n for n in names if n not in info.all)

    def _all_value(self, value: ast.AST) -> list[str] | None:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = self._all_value(value.left), self._all_value(value.right)
            return None if left is None or right is None else left + right
        if isinstance(value, ast.Name) and value.id == "__all__":
            return list(self.info.all or [])
        return self._literal_strings(value)

    def _expr_stmt(self, value: ast.AST) -> None:
        info = self.info
        if not isinstance(value, ast.Call):
            return
        func = value.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "__all__"
        ):
            if func.attr == "extend" and len(value.args) == 1:
                self._set_all(value.args[0], replace=False)
            elif func.attr == "append" and len(value.args) == 1:
                arg = value.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    info.all = [*(info.all or []), arg.value]
                else:
                    info.all_dynamic = True
            else:
                info.all_dynamic = True
        elif isinstance(func, ast.Name) and func.id == "exec":
            info.open_reason = (
                info.open_reason or f"calls exec() at line {value.lineno}"
            )
        elif isinstance(func, ast.Name) and func.id == "setattr" and value.args:
            first = value.args[0]
            if (
                isinstance(first, ast.Subscript)
                and _dotted(first.value) == "sys.modules"
            ):
                info.open_reason = (
                    info.open_reason or f"setattr on its module at line {value.lineno}"
                )
            elif isinstance(first, ast.Name) and first.id in info.classes:
                info.classes[
                    first.id
                ].dynamic = f"setattr() on the class at line {value.lineno}"

    def _assigned_getattr(self, st: ast.Assign) -> None:
        """``__getattr__`` bound by an assignment (PEP 562 without a def).

        ``lazy_loader.attach(__name__, submodules=[...], submod_attrs={...})``
        with literal arguments admits exactly those names (each resolved to
        its submodule or ``submodule.name``) and closes the namespace; any
        other value (``attach_stub`` whose ``.pyi`` is missing, a factory the
        model cannot follow) opens it."""
        names = {
            n.id for t in st.targets for n in ast.walk(t) if isinstance(n, ast.Name)
        }
        if "__getattr__" not in names:
            return
        info = self.info
        call = st.value
        fn = _dotted(call.func) if isinstance(call, ast.Call) else None
        if fn is None or fn.rsplit(".", 1)[-1] != "attach":
            info.open_reason = info.open_reason or (
                f"binds __getattr__ to {fn or 'a value'}() at line {st.lineno}"
            )
            return
        assert isinstance(call, ast.Call)
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        pos = call.args

        def value(key: str, i: int) -> Any:
            node: ast.AST | None = kw.get(key, pos[i] if len(pos) > i else None)
            if isinstance(node, ast.Name) and node.id in self.literals:
                node = self.literals[node.id]
            if node is None or (isinstance(node, ast.Constant) and node.value is None):
                return None
            return _literal(node)

        pkg = info.name if info.is_package else info.name.rpartition(".")[0]
        admitted: dict[str, list[Any]] = {}
        try:
            subs = value("submodules", 1) or ()
            attrs = value("submod_attrs", 2) or {}
            if not isinstance(attrs, dict):
                raise ValueError("submod_attrs is not a dict")
            for sub in subs:
                admitted[str(sub)] = [f"{pkg}.{sub}", None]
            for mod, members in attrs.items():
                for n in members:
                    admitted[str(n)] = [f"{pkg}.{mod}", str(n)]
        except (ValueError, TypeError, SyntaxError):
            info.open_reason = info.open_reason or (
                f"lazy_loader.attach with non-literal arguments at line {st.lineno}"
            )
            return
        info.getattr = {
            "mode": "closed",
            "line": st.lineno,
            "reason": None,
            "admitted": admitted,
            "removed": {},
        }
        for n, (mod, attr) in admitted.items():
            if n not in info.bindings or n in ("__getattr__", "__dir__", "__all__"):
                info.bindings[n] = Binding(n, st.lineno, "lazy", mod, attr, True)

    def _scan_injects(self) -> None:
        """Record ``setattr(obj, "lit", v)`` names (see ``ModuleInfo.injects``)."""
        raw = self.raw
        tops: list[ast.stmt] = self.tree.body
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "replace")
            if b"setattr" not in data:
                return
            # walk only the top-level statements whose lines mention it (a
            # whole-tree walk was most of a large module's refresh)
            hits: list[int] = []
            line, pos = 1, 0
            for m in re.finditer(rb"setattr", data):
                line += data.count(b"\n", pos, m.start())
                pos = m.start()
                hits.append(line)
            tops = []
            for top in self.tree.body:
                i = bisect_left(hits, top.lineno)
                if i < len(hits) and hits[i] <= (top.end_lineno or top.lineno):
                    tops.append(top)
        found: set[str] = set()
        for node in (n for top in tops for n in ast.walk(top)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                first = node.args[0]
                if isinstance(first, ast.Name) and (
                    first.id in ("self", "cls") or first.id in self.info.classes
                ):
                    continue
                found.add(node.args[1].value)
        self.info.injects = sorted(found)

    def _scan_globals(self) -> None:
        """Find ``global X`` declarations and uses of ``globals()`` anywhere.

        ``globals()`` read in a test (``"x" in globals()``) or copied is
        harmless; ``globals()["lit"] = v`` binds ``lit``; inside the module's
        ``__getattr__`` the common ``globals()[name] = obj`` cache is part of
        the lazy protocol; anything else makes the namespace open.
        """
        raw = self.raw
        hits: list[int] | None = None
        if raw is not None:
            # Only walk the top-level statements whose lines mention them.
            data = (
                raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
            )
            hits = []
            line, pos = 1, 0
            for m in _GLOBAL_RE.finditer(data):  # count newlines once, not per hit
                line += data.count(b"\n", pos, m.start())
                pos = m.start()
                hits.append(line)
            if not hits:
                return
        info = self.info
        for top in self.tree.body:
            if hits is not None:
                first, last = top.lineno, top.end_lineno or top.lineno
                i = bisect_left(hits, first)
                if i == len(hits) or hits[i] > last:
                    continue
            in_getattr = top is self.getattr_node
            calls: list[ast.Call] = []
            handled: set[int] = set()
            for node in ast.walk(top):
                if isinstance(node, ast.Global):
                    for n in node.names:
                        if n not in info.bindings:
                            self._bind(n, node.lineno, "global", True)
                elif isinstance(node, ast.Call):
                    if _is_globals_call(node):
                        calls.append(node)
                    elif (
                        isinstance(node.func, ast.Name)
                        and node.func.id in _READONLY_GLOBALS_WRAPPERS
                        and node.args
                        and _is_globals_call(node.args[0])
                    ):
                        handled.add(id(node.args[0]))
                elif isinstance(node, ast.Compare):
                    for c in (node.left, *node.comparators):
                        if _is_globals_call(c):
                            handled.add(id(c))
                elif (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Load)
                    and _is_globals_call(node.value)
                ) or (
                    isinstance(node, ast.Attribute)
                    and node.attr in _READONLY_GLOBALS_METHODS
                    and _is_globals_call(node.value)
                ):
                    # ``globals()["_x"]`` / ``globals().get(name)``: a read of
                    # the module's own names (deprecation shims return one)
                    handled.add(id(node.value))
                elif isinstance(node, (ast.Assign, ast.AugAssign)) and not isinstance(
                    top, (ast.Assign, ast.For, ast.AsyncFor, ast.If, ast.Try, ast.With)
                ):
                    targets = (
                        node.targets if isinstance(node, ast.Assign) else [node.target]
                    )
                    for t in targets:
                        if isinstance(t, ast.Subscript) and _is_globals_call(t.value):
                            handled.add(id(t.value))
                            if isinstance(t.slice, ast.Constant) and isinstance(
                                t.slice.value, str
                            ):
                                if t.slice.value not in info.bindings:
                                    self._bind(
                                        t.slice.value, node.lineno, "global", True
                                    )
                            elif not in_getattr:
                                info.open_reason = info.open_reason or (
                                    f"writes to globals() at line {node.lineno}"
                                )
            for c in calls:
                if id(c) not in handled and id(c) not in self.handled_globals:
                    info.open_reason = (
                        info.open_reason
                        or f"passes globals() around at line {c.lineno}"
                    )

    # -- defs and classes ---------------------------------------------------------

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionInfo:
        return FunctionInfo(
            name=node.name,
            line=node.lineno,
            end_line=node.end_lineno or node.lineno,
            params=mask_tree(_params(node.args, self.src)),  # type: ignore[arg-type]
            returns=_text(node.returns, self.src),
            doc=_doc(node),
            decorators=[self._normalise(d) for d in node.decorator_list],
            is_async=isinstance(node, ast.AsyncFunctionDef),
        )

    def _class(self, node: ast.ClassDef) -> ClassInfo:
        ci = ClassInfo(
            name=node.name,
            line=node.lineno,
            end_line=node.end_lineno or node.lineno,
            doc=_doc(node),
        )
        for b in node.bases:
            if isinstance(b, ast.Subscript):
                b = b.value
            ci.bases.append(_dotted(b))
        ci.decorators = [self._normalise(d) for d in node.decorator_list]
        for kw in node.keywords:
            if kw.arg == "metaclass":
                ci.metaclass = self._normalise(kw.value)
        for d, dnode in zip(ci.decorators, node.decorator_list, strict=False):
            if d in _DATACLASS_DECORATORS:
                ci.is_dataclass = True
                if isinstance(dnode, ast.Call):
                    for kw in dnode.keywords:
                        if (
                            kw.arg == "init"
                            and isinstance(kw.value, ast.Constant)
                            and kw.value.value is False
                        ):
                            ci.dataclass_init = False
        if ci.metaclass and ci.metaclass not in _NEUTRAL_METACLASSES:
            ci.dynamic = f"uses metaclass {ci.metaclass}"
        odd = [d for d in ci.decorators if d not in _NEUTRAL_CLASS_DECORATORS]
        if odd and ci.dynamic is None:
            ci.dynamic = f"is decorated by {odd[0]}"
        self._class_body(ci, node.body)
        if "__getattr__" in ci.methods or "__getattribute__" in ci.methods:
            ci.dynamic = ci.dynamic or "defines __getattr__"
        if ci.is_dataclass:
            ci.fields = self._dataclass_fields(node, ci)
        return ci

    def _class_body(self, ci: ClassInfo, body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ci.methods[st.name] = self._function(st)
                self._instance_attrs(ci, st)
            elif isinstance(st, ast.ClassDef):
                ci.classes[st.name] = self._class(st)
                ci.attributes.setdefault(st.name, st.lineno)
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            ci.attributes[n.id] = st.lineno
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and any(
                    isinstance(t, ast.Name) and t.id == "__slots__" for t in targets
                ):
                    for s in self._literal_strings(st.value) or ():  # type: ignore[arg-type]
                        ci.instance_attributes.setdefault(s, st.lineno)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    ci.attributes[(a.asname or a.name).split(".")[0]] = st.lineno
            elif isinstance(st, ast.If):
                self._class_body(ci, st.body)
                self._class_body(ci, st.orelse)
            elif isinstance(st, (ast.Try, ast.TryStar)):
                self._class_body(ci, st.body)
                for h in st.handlers:
                    self._class_body(ci, h.body)
                self._class_body(ci, st.orelse)
                self._class_body(ci, st.finalbody)
            elif isinstance(st, (ast.With, ast.For, ast.While)):
                ci.dynamic = (
                    ci.dynamic
                    or f"computes its body in a loop/with at line {st.lineno}"
                )
                self._class_body(ci, st.body)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                f = _dotted(st.value.func) or ""
                if f in ("locals", "vars") or f.startswith(("locals()", "vars()")):
                    ci.dynamic = ci.dynamic or "writes to its namespace dynamically"

    def _instance_attrs(
        self, ci: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> None:
        """Record ``self.x = ...`` targets and notice dynamic attribute writes.

        Only statements are visited (attribute stores cannot hide inside
        expressions), which keeps this cheap on large method bodies.
        """
        args = [*fn.args.posonlyargs, *fn.args.args]
        if not args:
            return
        me = args[0].arg

        def is_dict_of_me(x: ast.AST) -> bool:
            return (
                isinstance(x, ast.Attribute)
                and x.attr == "__dict__"
                and isinstance(x.value, ast.Name)
                and x.value.id == me
            ) or (
                isinstance(x, ast.Call)
                and isinstance(x.func, ast.Name)
                and x.func.id == "vars"
                and len(x.args) == 1
                and isinstance(x.args[0], ast.Name)
                and x.args[0].id == me
            )

        def store(t: ast.AST, line: int) -> None:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == me
            ):
                ci.instance_attributes.setdefault(t.attr, line)
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in t.elts:
                    store(e, line)
            elif isinstance(t, ast.Starred):
                store(t.value, line)
            elif isinstance(t, ast.Subscript) and is_dict_of_me(t.value):
                ci.dynamic = ci.dynamic or f"writes {me}.__dict__ in {fn.name}"

        for st in _iter_statements(fn.body):
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    store(t, st.lineno)
            elif isinstance(st, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                store(st.target, st.lineno)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    if item.optional_vars is not None:
                        store(item.optional_vars, st.lineno)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                call = st.value
                f = call.func
                if isinstance(f, ast.Name) and f.id == "setattr" and call.args:
                    a0 = call.args[0]
                    if isinstance(a0, ast.Name) and a0.id == me:
                        ci.dynamic = (
                            ci.dynamic or f"uses setattr({me}, ...) in {fn.name}"
                        )
                elif (
                    isinstance(f, ast.Attribute)
                    and f.attr in ("update", "setdefault", "__setitem__")
                    and is_dict_of_me(f.value)
                ):
                    ci.dynamic = ci.dynamic or f"updates {me}.__dict__ in {fn.name}"
        # ``store`` calls itself through its closure cell: a reference cycle
        # that would keep this method's whole subtree alive until a cyclic
        # collection (most of every parse tree, during a build)
        store = None  # type: ignore[assignment]

    def _dataclass_fields(
        self, node: ast.ClassDef, ci: ClassInfo
    ) -> list[dict[str, Any]] | None:
        out: list[dict[str, Any]] = []
        kw_only_all = False
        for d in node.decorator_list:
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if (
                        kw.arg == "kw_only"
                        and isinstance(kw.value, ast.Constant)
                        and kw.value.value is True
                    ):
                        kw_only_all = True
        kw_only = kw_only_all
        for st in node.body:
            if not isinstance(st, ast.AnnAssign) or not isinstance(st.target, ast.Name):
                continue
            ann = _text(st.annotation, self.src) or ""
            if re.match(r"^(typing\.)?ClassVar\b", ann):
                continue
            if re.match(r"^(dataclasses\.)?KW_ONLY$", ann):
                kw_only = True
                continue
            default: str | None = None
            this_kw = kw_only
            if st.value is not None:
                default = _text(st.value, self.src)
                v = st.value
                if (
                    isinstance(v, ast.Call)
                    and (_dotted(v.func) or "").rsplit(".", 1)[-1] == "field"
                ):
                    default = None
                    for kw in v.keywords:
                        if (
                            kw.arg == "init"
                            and isinstance(kw.value, ast.Constant)
                            and kw.value.value is False
                        ):
                            default = "<no-init>"
                        elif kw.arg == "kw_only" and isinstance(kw.value, ast.Constant):
                            this_kw = bool(kw.value.value)
                        elif kw.arg in ("default", "default_factory"):
                            default = default or _text(kw.value, self.src)
                    if default == "<no-init>":
                        continue
            out.append(
                {
                    "name": st.target.id,
                    "kind": "keyword_only" if this_kw else "positional_or_keyword",
                    "default": default,
                    "annotation": ann or None,
                }
            )
        return out


class _GetattrAnalyzer:
    """Abstract interpretation of a module-level ``__getattr__`` (PEP 562).

    Tracks the set of names that can reach each statement (finite when drawn
    from literal collections, co-finite otherwise). A ``return`` reached by a
    finite set admits those names, each with the target its body computes
    (``import_module(".x")``, ``getattr(mod, name)``...); a ``return`` reached
    by a co-finite set opens the namespace. A ``raise`` reached by a finite
    set records removals (message rendered from the literal); raises inside
    ``except`` handlers are runtime failures of admitted names, not removals.
    """

    def __init__(self, ex: _ModuleExtractor) -> None:
        self.ex = ex
        self.module = ex.info.name
        self.package = (
            ex.info.name if ex.info.is_package else ex.info.name.rpartition(".")[0]
        )
        self.admitted: dict[str, tuple[str, str | None] | None] = {}
        self.removed: dict[str, str] = {}
        self.open_reason: str | None = None
        self.param = "name"
        self._lit_cache: dict[str, Any] = {}

    def run(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
        args = [*fn.args.posonlyargs, *fn.args.args]
        if len(args) != 1:
            self.open_reason = "__getattr__ has an unexpected signature"
        else:
            self.param = args[0].arg
            try:
                rest = self._block(fn.body, _NameSet.all(), [], False)
                if not rest.empty:
                    self._admit(rest, [], None)
            except RecursionError:  # pragma: no cover - defensive
                self.open_reason = "__getattr__ too complex"
        mode = "open" if self.open_reason else "closed"
        return {
            "mode": mode,
            "line": fn.lineno,
            "reason": self.open_reason,
            "admitted": {k: list(v) if v else None for k, v in self.admitted.items()}
            if mode == "closed"
            else {},
            "removed": self.removed if mode == "closed" else {},
        }

    # -- control flow -------------------------------------------------------------

    def _block(
        self,
        stmts: list[ast.stmt],
        names: _NameSet,
        path: list[ast.stmt],
        in_handler: bool,
    ) -> _NameSet:
        path = list(path)
        for st in stmts:
            if names.empty or self.open_reason:
                return names
            if isinstance(st, ast.Return):
                self._admit(names, path, st.value)
                return _NameSet.of(())
            if isinstance(st, ast.Raise):
                if not in_handler:
                    self._raise(names, path, st.exc)
                return _NameSet.of(())
            if isinstance(st, ast.If):
                pred = self._pred(st.test, path)
                yes, no = (
                    (names, names) if pred is None else (names & pred, names - pred)
                )
                names = self._block(st.body, yes, path, in_handler) | self._block(
                    st.orelse, no, path, in_handler
                )
            elif isinstance(st, (ast.Try, ast.TryStar)):
                through = self._block(st.body, names, path, in_handler)
                handled = _NameSet.of(())
                for h in st.handlers:
                    handled = handled | self._block(h.body, names, path, True)
                if st.orelse:
                    through = self._block(
                        st.orelse, through, [*path, *st.body], in_handler
                    )
                names = through | handled
                if st.finalbody:
                    names = self._block(st.finalbody, names, path, in_handler)
                path = [*path, *st.body]
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                names = self._block(st.body, names, path, in_handler)
                path = [*path, *st.body]
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.Match)):
                self.open_reason = f"__getattr__ loops at line {st.lineno}"
                return _NameSet.of(())
            else:
                path.append(st)
        return names

    def _admit(
        self, names: _NameSet, path: list[ast.stmt], value: ast.AST | None
    ) -> None:
        if not names.finite:
            self.open_reason = (
                "__getattr__ returns for names not drawn from a literal collection"
            )
            return
        for n in names.names:
            if n in self.admitted:
                continue
            target = None
            if value is not None:
                got = self._eval_path(path, value, n)
                if got is not None and got[0] in ("module", "attr"):
                    mod, _, attr = got[1].rpartition(".")
                    target = (got[1], None) if got[0] == "module" else (mod, attr)
            self.admitted[n] = target

    def _raise(
        self, names: _NameSet, path: list[ast.stmt], exc: ast.AST | None
    ) -> None:
        if not names.finite:
            return  # the closing "otherwise AttributeError"
        arg = None
        if isinstance(exc, ast.Call) and exc.args:
            arg = exc.args[0]
        for n in names.names:
            if n in self.admitted or n in self.removed:
                continue
            msg = None
            if arg is not None:
                got = self._eval_path(path, arg, n)
                if got is not None and got[0] == "str":
                    msg = got[1]
            self.removed[n] = (
                msg
                or f"'{self.module}.{n}' is listed as unavailable by {self.module}.__getattr__"
            )

    # -- predicates -----------------------------------------------------------------

    def _collection(self, node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Name):
            if node.id not in self._lit_cache:
                self._lit_cache[node.id] = self.ex._literal_strings(node)
            return self._lit_cache[node.id]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "keys"
            and not node.args
        ):
            return self._collection(node.func.value)
        return self.ex._literal_strings(node)

    def _is_param(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.param

    def _pred(self, test: ast.AST, path: list[ast.stmt]) -> _NameSet | None:
        if isinstance(test, ast.BoolOp):
            parts = [self._pred(v, path) for v in test.values]
            if any(p is None for p in parts):
                return None
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if isinstance(test.op, ast.And) else (out | p)  # type: ignore[operator]
            return out
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._pred(test.operand, path)
            return None if inner is None else inner.complement()
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if self._is_param(test.left):
                if isinstance(op, (ast.In, ast.NotIn)):
                    coll = self._collection(right)
                    if coll is None:
                        return None
                    s = _NameSet.of(coll)
                    return s if isinstance(op, ast.In) else s.complement()
                if (
                    isinstance(op, (ast.Eq, ast.NotEq))
                    and isinstance(right, ast.Constant)
                    and isinstance(right.value, str)
                ):
                    s = _NameSet.of([right.value])
                    return s if isinstance(op, ast.Eq) else s.complement()
            # ``v is None`` / ``v is not None`` where v = COLL.get(name)
            if (
                isinstance(test.left, ast.Name)
                and isinstance(right, ast.Constant)
                and right.value is None
            ):
                got = self._get_var(test.left.id, path)
                if got is not None and isinstance(
                    op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)
                ):
                    return (
                        got
                        if isinstance(op, (ast.IsNot, ast.NotEq))
                        else got.complement()
                    )
            return None
        if isinstance(test, ast.Name):
            return self._get_var(test.id, path)
        return None

    def _get_var(self, var: str, path: list[ast.stmt]) -> _NameSet | None:
        """Names for which ``var`` (assigned ``COLL.get(name)``) is set."""
        for st in reversed(path):
            if isinstance(st, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == var for t in st.targets
            ):
                v = st.value
                if (
                    isinstance(v, ast.Call)
                    and isinstance(v.func, ast.Attribute)
                    and v.func.attr == "get"
                    and v.args
                    and self._is_param(v.args[0])
                    and (
                        len(v.args) == 1
                        or (
                            isinstance(v.args[1], ast.Constant)
                            and v.args[1].value is None
                        )
                    )
                ):
                    coll = self._collection(v.func.value)
                    return None if coll is None else _NameSet.of(coll)
                return None
        return None

    # -- value evaluation ---------------------------------------------------------------

    def _eval_path(
        self, path: list[ast.stmt], expr: ast.AST, name: str
    ) -> tuple[str, Any] | None:
        env: dict[str, tuple[str, Any] | None] = {self.param: ("str", name)}
        for st in path:
            try:
                self._exec(st, env)
            except Exception:  # noqa: BLE001  # pragma: no cover - best effort
                return None
        try:
            return self._eval(expr, env)
        except Exception:  # noqa: BLE001  # pragma: no cover - best effort
            return None

    def _exec(self, st: ast.stmt, env: dict[str, tuple[str, Any] | None]) -> None:
        if isinstance(st, ast.Assign):
            val = self._eval(st.value, env)
            for t in st.targets:
                self._assign(t, val, env)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            self._assign(st.target, self._eval(st.value, env), env)
        elif isinstance(st, ast.ImportFrom):
            mod = (
                _resolve_relative(
                    st.module or "", st.level, self.module, self.ex.info.is_package
                )
                if st.level
                else st.module
            )
            for a in st.names:
                if mod is not None:
                    env[a.asname or a.name] = ("attr", f"{mod}.{a.name}")
        elif isinstance(st, ast.Import):
            for a in st.names:
                env[a.asname or a.name.split(".")[0]] = (
                    "module",
                    a.name if a.asname else a.name.split(".")[0],
                )

    def _assign(
        self,
        t: ast.AST,
        val: tuple[str, Any] | None,
        env: dict[str, tuple[str, Any] | None],
    ) -> None:
        if isinstance(t, ast.Name):
            env[t.id] = val
        elif isinstance(t, (ast.Tuple, ast.List)):
            items = val[1] if val is not None and val[0] == "tuple" else None
            for i, e in enumerate(t.elts):
                self._assign(
                    e, items[i] if items is not None and i < len(items) else None, env
                )

    def _wrap(self, value: Any) -> tuple[str, Any] | None:
        if isinstance(value, str):
            return ("str", value)
        if isinstance(value, (tuple, list)):
            return ("tuple", [self._wrap(v) for v in value])
        return None

    def _eval(
        self, node: ast.AST | None, env: dict[str, tuple[str, Any] | None]
    ) -> tuple[str, Any] | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return self._wrap(node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id == "__name__":
                return ("str", self.module)
            if node.id == "__package__":
                return ("str", self.package)
            b = self.ex.info.bindings.get(node.id)
            if b is not None and b.kind in ("import", "module") and b.target:
                return ("module" if b.kind == "module" else "attr", b.target)
            return None
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.format_spec is None:
                    inner = self._eval(v.value, env)
                    if inner is None or inner[0] != "str":
                        return None
                    out.append(
                        repr(inner[1]) if v.conversion == ord("r") else str(inner[1])
                    )
                else:
                    return None
            return ("str", "".join(out))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if left and right and left[0] == right[0] == "str":
                return ("str", left[1] + right[1])
            return None
        if isinstance(node, ast.Subscript):
            key = self._eval(node.slice, env)
            if key is None or key[0] != "str":
                return None
            if isinstance(node.value, ast.Name):
                lit = self.ex.literals.get(node.value.id)
                try:
                    table = _literal(lit)
                except Exception:  # noqa: BLE001 - not a literal table: unknown
                    return None
                if isinstance(table, dict) and key[1] in table:
                    return self._wrap(table[key[1]])
            return None
        if isinstance(node, ast.Attribute):
            base = self._eval(node.value, env)
            if base is not None and base[0] in ("module", "attr"):
                return ("attr", f"{base[1]}.{node.attr}")
            return None
        if isinstance(node, ast.Call):
            fname = _dotted(node.func) or ""
            fb = self._eval(node.func, env) if isinstance(node.func, ast.Name) else None
            target = fb[1] if fb is not None and fb[0] in ("attr", "module") else fname
            if target.endswith("import_module") and node.args:
                spec = self._eval(node.args[0], env)
                anchor = None
                if len(node.args) > 1:
                    anchor = self._eval(node.args[1], env)
                for kw in node.keywords:
                    if kw.arg == "package":
                        anchor = self._eval(kw.value, env)
                if spec is None or spec[0] != "str":
                    return None
                mod = spec[1]
                if mod.startswith("."):
                    if anchor is None or anchor[0] != "str":
                        return None
                    level = len(mod) - len(mod.lstrip("."))
                    mod = _resolve_relative(mod.lstrip("."), level, anchor[1], True)
                    if mod is None:
                        return None
                return ("module", mod)
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
            ):
                # ``TABLE.get(name)`` on a module-level literal dict
                return self._eval(
                    ast.Subscript(
                        value=node.func.value, slice=node.args[0], ctx=ast.Load()
                    ),
                    env,
                )
            if fname == "getattr" and len(node.args) >= 2:
                base = self._eval(node.args[0], env)
                attr = self._eval(node.args[1], env)
                if base and attr and base[0] in ("module", "attr") and attr[0] == "str":
                    return ("attr", f"{base[1]}.{attr[1]}")
            return None
        return None


# --------------------------------------------------------------------------
# resolution


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


class PackageModel:
    """Static model of one package (see the module docstring)."""

    def __init__(self, package: str, root: Path | None = None) -> None:
        self.package = package
        self.root = Path(root) if root is not None else None
        self._files: dict[str, ModuleInfo] = {}
        self._dirs: set[str] = set()
        self._modules: dict[str, ModuleInfo] | None = None
        self._registered: set[str] | None = None
        self._injects: dict[str, str] | None = None
        self._cache: dict[tuple[str, str], _Step] = {}
        self._resolve_cache: dict[str, Resolution] = {}
        self._suggest_index: _SuggestIndex | None = None
        self._suggest_cache: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self._call_cache: dict[tuple[Any, ...], dict[str, Any] | None] = {}
        self._suggest_demote: Callable[[str], bool] | None = None
        self.build_seconds: float | None = None

    @property
    def suggest_demote(self) -> Callable[[str], bool] | None:
        """Predicate on a module's corpus-relative path: True ranks that
        module's symbols last in suggestions (still real, still resolvable).
        The server passes ``lambda rel: not profile.should_index(rel)`` so
        UI glue and private helpers the index leaves out come last."""
        return self._suggest_demote

    @suggest_demote.setter
    def suggest_demote(self, pred: Callable[[str], bool] | None) -> None:
        self._suggest_demote = pred
        self._suggest_index = None
        self._suggest_cache.clear()

    # -- building -------------------------------------------------------------------

    @classmethod
    def build(cls, root: Path, package: str, *, workers: int = 1) -> PackageModel:
        """Walk every file of ``root/package`` and model it (never raises on
        a bad file: unreadable/unparsable modules exist with unknown names).

        Parsing dominates; ``workers > 1`` parses in that many spawned
        processes (the trees never cross the process boundary, only the
        extracted ModuleInfo objects do)."""
        t0 = time.perf_counter()
        model = cls(package, root)
        top = package_dir(Path(root), package)
        if top is not None:
            todo: list[str] = []
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames[:] = sorted(
                    d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")
                )
                rel_dir = Path(dirpath).relative_to(root).as_posix()
                model._dirs.add(rel_dir)
                for fn in sorted(filenames):
                    rel = f"{rel_dir}/{fn}"
                    meta = module_name_for(rel, package)
                    if meta is None:
                        continue
                    if meta[2] == "compiled":
                        model._add_file(rel, None)
                    else:
                        todo.append(rel)
            if workers > 1 and len(todo) > 50:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                chunks = [todo[i :: workers * 4] for i in range(workers * 4)]
                ctx = multiprocessing.get_context("spawn")
                with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                    for infos in pool.map(
                        _extract_files,
                        [str(root)] * len(chunks),
                        [package] * len(chunks),
                        chunks,
                    ):
                        for info in infos:
                            model._files[info.rel] = info
            else:
                for info in _extract_files(str(root), package, todo):
                    model._files[info.rel] = info
            model._invalidate()
        else:
            single = Path(root) / f"{package}.py"
            if single.is_file():
                model.add_module(
                    ModuleInfo.from_source(
                        single.read_bytes(), name=package, rel=f"{package}.py"
                    )
                )
        model.build_seconds = time.perf_counter() - t0
        return model

    def _add_file(self, rel: str, data: bytes | None) -> bool:
        meta = module_name_for(rel, self.package)
        if meta is None:
            return False
        dotted, is_pkg, kind = meta
        if kind == "compiled":
            info = ModuleInfo(name=dotted, rel=rel, is_package=is_pkg, kind="compiled")
        else:
            info = module_info_from_bytes(
                data or b"", dotted, rel, is_pkg, kind, self.root
            )
        self.add_module(info)
        return True

    def add_module(self, info: ModuleInfo) -> None:
        """Add or replace the module parsed from ``info.rel``."""
        if (
            info.kind == "cython"
            and (info.open_reason or "").startswith("cython-include")
            and self.root is not None
        ):
            # extracted without the corpus root at hand: read its includes now
            try:
                data = (self.root / info.rel).read_bytes()
            except OSError:
                pass
            else:
                info = module_info_from_bytes(
                    data, info.name, info.rel, info.is_package, "cython", self.root
                )
        self._files[info.rel] = info
        parent = info.rel.rpartition("/")[0]
        while parent:
            self._dirs.add(parent)
            parent = parent.rpartition("/")[0]
        self._invalidate()

    def add_tree(
        self, rel: str, tree: ast.Module, source: bytes | str | None = None
    ) -> ModuleInfo | None:
        """Model a file from a tree the caller already parsed (the index's
        parse); returns the ModuleInfo, or None if ``rel`` is not a module of
        the package."""
        meta = module_name_for(rel, self.package)
        if meta is None:
            return None
        dotted, is_pkg, kind = meta
        info = ModuleInfo.from_tree(
            tree, name=dotted, rel=rel, is_package=is_pkg, kind=kind, source=source
        )
        self.add_module(info)
        return info

    def update_file(self, rel: str, data: bytes | None) -> bool:
        """Incremental update: ``data`` None means the file was deleted.

        Returns True when the model changed (``rel`` is a module file of the
        package). A new file adds a module (and its directories)."""
        if module_name_for(rel, self.package) is None:
            return False
        if data is None:
            if self._files.pop(rel, None) is None:
                return False
            self._invalidate()
            return True
        return self._add_file(rel, data)

    def remove_directory(self, rel_dir: str) -> None:
        """Forget a deleted directory (and every module under it)."""
        prefix = rel_dir.rstrip("/") + "/"
        for rel in [r for r in self._files if r.startswith(prefix)]:
            del self._files[rel]
        self._dirs = {
            d for d in self._dirs if d != rel_dir and not d.startswith(prefix)
        }
        self._invalidate()

    def copy(self) -> PackageModel:
        """A model sharing this one's (immutable) module facts, with empty caches.

        Updates go to a copy that is then swapped in, so readers on other
        threads keep a consistent model while a file change is applied.
        """
        new = PackageModel(self.package, self.root)
        new._files = dict(self._files)
        new._dirs = set(self._dirs)
        new._suggest_demote = self._suggest_demote
        return new

    def _invalidate(self) -> None:
        self._modules = None
        self._registered = None
        self._injects = None
        self._cache.clear()
        self._resolve_cache.clear()
        self._call_cache.clear()
        self._suggest_cache.clear()
        self._suggest_index = None

    @property
    def modules(self) -> dict[str, ModuleInfo]:
        """Dotted module name -> the ModuleInfo Python would load.

        Precedence follows the import system: a package directory beats a
        module file beats a namespace directory; within one, a ``.pyi`` stub
        (for names) beats the source a compiled extension is built from
        (``.pyx``, or a ``.py`` compiled by Cython, as lxml ships them) beats
        the opaque extension itself.
        """
        if self._modules is None:
            best: dict[str, tuple[tuple[int, int], ModuleInfo]] = {}
            for info in self._files.values():
                if info.kind == "build":
                    continue
                key = (2 if info.is_package else 1, _KIND_RANK.get(info.kind, 0))
                cur = best.get(info.name)
                if cur is None or key > cur[0]:
                    best[info.name] = (key, info)
            mods = {k: v[1] for k, v in best.items()}
            for d in self._dirs:
                parts = _package_parts(d, self.package)
                if parts is None or not all(p.isidentifier() for p in parts):
                    continue
                dotted = ".".join(parts)
                if dotted not in mods:
                    mods[dotted] = ModuleInfo(
                        name=dotted, rel=d, is_package=True, kind="namespace"
                    )
            self._modules = mods
        return self._modules

    # -- persistence ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The whole model as ``package_model.json`` holds it (versioned, files in
        path order so equal models serialise equally).
        """
        return {
            "model_version": MODEL_VERSION,
            "package": self.package,
            "files": {rel: info.to_dict() for rel, info in sorted(self._files.items())},
            "dirs": sorted(self._dirs),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], root: Path | None = None) -> PackageModel:
        """The inverse of :meth:`to_dict`; :class:`ValueError` for a document of
        another ``model_version``.
        """
        if d.get("model_version") != MODEL_VERSION:
            raise ValueError(
                f"package model version {d.get('model_version')} != {MODEL_VERSION}"
            )
        model = cls(d["package"], root)
        model._files = {rel: ModuleInfo.from_dict(v) for rel, v in d["files"].items()}
        model._dirs = set(d["dirs"])
        return model

    # -- resolution ------------------------------------------------------------------

    def resolve(self, dotted: str, *, module: str | None = None) -> Resolution:
        """Exists / absent / unknown for a dotted name (attribute semantics:
        a module's namespace first, then its submodules).

        ``module``: a prefix of ``dotted`` known to be bound to that module
        (``import a.b.c as x`` binds the module ``a.b.c`` even when package
        ``a.b`` rebinds the name ``c``); the walk starts there.
        """
        key = dotted if module is None else f"{module}|{dotted}"
        hit = self._resolve_cache.get(key)
        if hit is not None:
            return hit
        res = self._resolve(dotted, module)
        self._resolve_cache[key] = res
        return res

    def _resolve(self, dotted: str, module: str | None = None) -> Resolution:
        parts = dotted.split(".")
        if parts[0] != self.package:
            return Resolution(
                dotted,
                UNKNOWN,
                reason="outside-package",
                message=f"'{dotted}' is not in package '{self.package}'",
                failed_at=0,
            )
        top = self.modules.get(self.package)
        if top is None:
            return Resolution(
                dotted,
                UNKNOWN,
                reason="empty-model",
                message=f"package '{self.package}' is not modelled",
                failed_at=0,
            )
        start = 1
        ref: _Ref = self._module_ref(self.package)
        if (
            module is not None
            and module in self.modules
            and dotted.startswith(module + ".")
        ):
            ref = self._module_ref(module)
            start = module.count(".") + 1
        for i, part in enumerate(parts[start:], start):
            step = self._attr(ref, part, frozenset())
            if isinstance(step, _Fail):
                return Resolution(
                    dotted,
                    step.status,
                    reason=step.reason,
                    message=step.message,
                    failed_at=i,
                    parent=".".join(parts[:i]),
                )
            ref = step
        return self._found(dotted, ref)

    def resolve_module(self, dotted: str) -> Resolution:
        """For ``import a.b.c`` / ``from a.b.c import x``: every prefix must
        be a module (import-system semantics, not attribute lookup)."""
        parts = dotted.split(".")
        if parts[0] != self.package:
            return Resolution(
                dotted,
                UNKNOWN,
                reason="outside-package",
                message=f"'{dotted}' is not in package '{self.package}'",
                failed_at=0,
            )
        mods = self.modules
        registered = self._registered_modules()
        for i in range(len(parts)):
            name = ".".join(parts[: i + 1])
            if name in mods:
                continue
            if name in registered:
                return Resolution(
                    dotted,
                    UNKNOWN,
                    kind="module",
                    reason="registered-module",
                    message=f"'{name}' is registered in sys.modules at import time",
                    failed_at=i,
                    parent=".".join(parts[:i]),
                )
            parent = ".".join(parts[:i])
            pinfo = mods.get(parent)
            if pinfo is not None and pinfo.kind == "compiled":
                return Resolution(
                    dotted,
                    UNKNOWN,
                    reason="compiled",
                    message=f"'{parent}' is a compiled extension module",
                    failed_at=i,
                    parent=parent,
                )
            if pinfo is not None and self._headers_only(parent):
                return Resolution(
                    dotted,
                    UNKNOWN,
                    kind="module",
                    reason="build-generated",
                    message=(
                        f"'{parent}' ships C headers only; its build may add '{name}'"
                    ),
                    failed_at=i,
                    parent=parent,
                )
            if pinfo is not None and not pinfo.is_package:
                msg = f"No module named '{name}'; '{parent}' is not a package"
            else:
                msg = f"No module named '{name}'"
            return Resolution(
                dotted,
                ABSENT,
                reason="no-such-module",
                message=msg,
                failed_at=i,
                parent=parent,
            )
        return self._found(dotted, self._module_ref(dotted))

    def resolve_from(self, module: str, name: str) -> Resolution:
        """``from module import name``: the module by import semantics, then
        the name in its namespace or as a submodule."""
        mres = self.resolve_module(module)
        if not mres.exists:
            return mres
        dotted = f"{module}.{name}"
        step = self._attr(self._module_ref(module), name, frozenset())
        if isinstance(step, _Fail):
            return Resolution(
                dotted,
                step.status,
                reason=step.reason,
                message=step.message,
                failed_at=len(module.split(".")),
                parent=module,
            )
        return self._found(dotted, step)

    def _headers_only(self, package: str) -> bool:
        """A package of C headers / ``.pxd`` and no module but its
        ``__init__`` (lxml's ``includes``): builds add header subpackages."""
        has_headers = False
        prefix = package + "."
        for info in self._files.values():
            if info.kind == "build" and info.name == package:
                has_headers = has_headers or info.rel.endswith((".h", ".pxd"))
            elif info.name.startswith(prefix):
                return False
        return has_headers

    def _registered_modules(self) -> set[str]:
        if self._registered is None:
            self._registered = {
                m for info in self._files.values() for m in info.registered_modules
            }
        return self._registered

    def _found(self, dotted: str, ref: _Ref) -> Resolution:
        path, line = self._location(ref)
        return Resolution(
            dotted,
            EXISTS,
            kind=ref.kind,
            target=ref.dotted,
            path=path,
            line=line,
            conditional=ref.conditional,
            module=ref.module,
        )

    def _location(self, ref: _Ref) -> tuple[str | None, int | None]:
        if ref.module is None:
            return None, None
        info = self.modules.get(ref.module)
        if info is None:
            return None, None
        if ref.kind in ("package", "module", "namespace"):
            return info.rel, 1
        if not ref.qual:
            return info.rel, None
        b = info.bindings.get(ref.qual[0])
        if len(ref.qual) == 1:
            return info.rel, b.line if b else None
        ci = info.classes.get(ref.qual[0])
        for q in ref.qual[1:-1]:
            ci = ci.classes.get(q) if ci else None
        last = ref.qual[-1]
        if ci is None:
            return info.rel, None
        if last in ci.methods:
            return info.rel, ci.methods[last].line
        if last in ci.classes:
            return info.rel, ci.classes[last].line
        return info.rel, ci.attributes.get(last) or ci.instance_attributes.get(last)

    def _module_ref(self, dotted: str) -> _Ref:
        info = self.modules[dotted]
        kind = (
            "namespace"
            if info.kind == "namespace"
            else ("package" if info.is_package else "module")
        )
        return _Ref(kind, dotted, dotted)

    def _attr(self, ref: _Ref, name: str, seen: frozenset[Any]) -> _Step:
        if ref.kind in ("package", "module", "namespace"):
            if seen:
                # Results computed inside a chain depend on the chain (cycle
                # detection), so only top-level lookups are cached.
                return self._module_attr(ref.dotted, name, seen)
            key = (ref.dotted, name)
            hit = self._cache.get(key)
            if hit is None:
                hit = self._module_attr(ref.dotted, name, seen)
                self._cache[key] = hit
            return hit
        if ref.kind == "class":
            return self._class_attr(ref, name, seen)
        if ref.kind == "external":
            return _Fail(
                UNKNOWN,
                "external",
                f"'{ref.dotted}' is outside the package; '{name}' was not checked",
            )
        return _Fail(
            UNKNOWN,
            "value",
            f"attributes of {ref.kind} '{ref.dotted}' are not modelled",
        )

    def _module_attr(self, mod: str, name: str, seen: frozenset[Any]) -> _Step:
        info = self.modules.get(mod)
        if info is None:  # pragma: no cover - callers pass known modules
            return _Fail(ABSENT, "no-such-module", f"No module named '{mod}'")
        if (mod, name) in seen or len(seen) > 64:
            return _Fail(UNKNOWN, "cycle", f"re-export cycle through '{mod}.{name}'")
        seen = seen | {(mod, name)}
        if info.kind == "compiled":
            if f"{mod}.{name}" in self.modules:
                return self._module_ref(f"{mod}.{name}")
            return _Fail(UNKNOWN, "compiled", f"'{mod}' is a compiled extension module")
        b = info.bindings.get(name) if info.known else None
        sub = f"{mod}.{name}"
        if b is not None and b.kind in ("variable", "global") and sub in self.modules:
            # ``globals()[name] = import_module(...)`` and friends: a plain
            # variable named like an existing submodule is that submodule
            # (importing the submodule rebinds the name anyway).
            return self._module_ref(sub)
        if b is not None and b.kind != "lazy":
            return self._binding(info, b, seen)
        if name.startswith("__") and name.endswith("__"):
            return _Ref("attribute", f"{mod}.{name}", mod, (name,))
        if sub in self.modules:
            return self._module_ref(sub)
        if not info.known:
            reason = "parse-error" if info.parse_error else "compiled"
            return _Fail(
                UNKNOWN, reason, f"'{mod}' could not be read ({info.parse_error})"
            )
        uncertain: _Fail | None = None
        for star in info.star_imports:
            step = self._star(star, name, seen)
            if isinstance(step, _Ref):
                return step
            if step is not None:
                uncertain = uncertain or step
        ga = info.getattr
        if ga is not None:
            if ga["mode"] == "closed":
                if name in ga["admitted"]:
                    return self._binding(
                        info,
                        b or Binding(name, ga["line"], "lazy", conditional=True),
                        seen,
                    )
                if name in ga["removed"]:
                    return _Fail(ABSENT, "removed", ga["removed"][name])
            else:
                uncertain = uncertain or _Fail(
                    UNKNOWN,
                    "open-namespace",
                    f"'{mod}' defines __getattr__ ({ga['reason']}); '{name}' cannot be verified",
                )
        if info.open_reason:
            uncertain = uncertain or _Fail(
                UNKNOWN,
                "open-namespace",
                f"'{mod}' {info.open_reason}; '{name}' cannot be verified",
            )
        if mod == self.package and info.kind == "namespace":
            uncertain = uncertain or _Fail(
                UNKNOWN,
                "open-namespace",
                f"'{mod}' is a namespace package that other distributions may extend",
            )
        if uncertain is not None:
            return uncertain
        if sub in self._registered_modules():
            return _Fail(
                UNKNOWN,
                "registered-module",
                f"'{sub}' is registered at import time or declared by the build",
            )
        injector = self._injected().get(name)
        if injector is not None:
            return _Fail(
                UNKNOWN,
                "injected",
                f"'{name}' may be set on '{mod}' at run time by setattr() in {injector}",
            )
        return _Fail(
            ABSENT, "no-such-name", f"'{mod}' has no attribute or submodule '{name}'"
        )

    def _injected(self) -> dict[str, str]:
        """Name -> a module that ``setattr``s it (``ModuleInfo.injects``)."""
        if self._injects is None:
            out: dict[str, str] = {}
            for info in self._files.values():
                for n in info.injects:
                    out.setdefault(n, info.name)
            self._injects = out
        return self._injects

    def _binding(self, info: ModuleInfo, b: Binding, seen: frozenset[Any]) -> _Step:
        mod = info.name
        if b.kind == "class":
            return _Ref("class", f"{mod}.{b.name}", mod, (b.name,), b.conditional)
        if b.kind == "function":
            return _Ref("function", f"{mod}.{b.name}", mod, (b.name,), b.conditional)
        if b.kind in ("variable", "global"):
            return _Ref("variable", f"{mod}.{b.name}", mod, (b.name,), b.conditional)
        target = b.target
        if target is None:
            if b.kind == "lazy":
                return _Ref("lazy", f"{mod}.{b.name}", mod, (b.name,), True)
            return _Fail(
                UNKNOWN,
                "broken-reexport",
                f"'{mod}.{b.name}' is imported from outside the top-level package",
            )
        if not self._inside(target):
            return _Ref("external", target, None, (), b.conditional)
        if b.kind == "module" or (b.kind == "lazy" and b.attr is None):
            if target in self.modules:
                step: _Step = self._module_ref(target)
            else:
                res = self.resolve_module(target)
                step = _Fail(
                    res.status, res.reason or "no-such-module", res.message or ""
                )
        elif b.module in self.modules:
            assert b.attr is not None
            sub = f"{b.module}.{b.attr}"
            if b.module == mod and sub in self.modules:
                # ``from . import sub`` in a package's __init__: getattr fails
                # while the package initialises, so the import system loads
                # the submodule.
                return self._module_ref(sub)
            step = self._attr(self._module_ref(b.module), b.attr, seen)
            if (
                isinstance(step, _Fail)
                and step.reason == "cycle"
                and sub in self.modules
            ):
                return self._module_ref(sub)
        else:
            res = self.resolve_module(b.module or "")
            step = _Fail(res.status, res.reason or "no-such-module", res.message or "")
        if isinstance(step, _Fail):
            if step.status == ABSENT and b.kind == "lazy":
                # The name exists only through its lazy target.
                return _Fail(
                    ABSENT,
                    "broken-lazy",
                    f"'{mod}.{b.name}' is loaded lazily from '{target}', which does not exist ({step.message})",
                )
            if step.status == ABSENT:
                return _Fail(
                    UNKNOWN,
                    "broken-reexport",
                    f"'{mod}.{b.name}' re-exports '{target}', which was not found ({step.message})",
                )
            return step
        if b.conditional and not step.conditional:
            return _Ref(step.kind, step.dotted, step.module, step.qual, True)
        return step

    def _walk(
        self, dotted: str, seen: frozenset[Any], module: str | None = None
    ) -> _Step:
        """Attribute walk from the top package (or from ``module``, a prefix
        of ``dotted`` known to be that module)."""
        parts = dotted.split(".")
        if parts[0] != self.package or self.package not in self.modules:
            return _Fail(
                UNKNOWN, "outside-package", f"'{dotted}' is outside the package"
            )
        ref: _Step = self._module_ref(self.package)
        start = 1
        if (
            module is not None
            and module in self.modules
            and (dotted == module or dotted.startswith(module + "."))
        ):
            ref = self._module_ref(module)
            start = module.count(".") + 1
        for part in parts[start:]:
            ref = self._attr(ref, part, seen)  # type: ignore[arg-type]
            if isinstance(ref, _Fail):
                return ref
        return ref

    def _inside(self, dotted: str) -> bool:
        return dotted == self.package or dotted.startswith(self.package + ".")

    def _star(self, star: str, name: str, seen: frozenset[Any]) -> _Step | None:
        """What ``from star import *`` contributes for ``name`` (None: nothing)."""
        if not self._inside(star):
            return _Fail(
                UNKNOWN,
                "open-namespace",
                f"star import from external '{star}' may provide '{name}'",
            )
        sinfo = self.modules.get(star)
        if sinfo is None:
            return None
        if not sinfo.known:
            return _Fail(
                UNKNOWN,
                "open-namespace",
                f"star import from unreadable '{star}' may provide '{name}'",
            )
        if sinfo.all is not None and not sinfo.all_dynamic:
            if name not in sinfo.all:
                return None
        elif name.startswith("_"):
            return None
        step = self._attr(self._module_ref(star), name, seen)
        if isinstance(step, _Fail) and step.status == ABSENT:
            # Not in the star-imported module at all (with a dynamic
            # __all__ it may still be unexported, never invented).
            return None
        return step

    # -- classes -----------------------------------------------------------------------

    def class_info(self, ref_or_dotted: _Ref | str) -> ClassInfo | None:
        """The ClassInfo of a class ref or a dotted name that resolves to one."""
        if isinstance(ref_or_dotted, str):
            step = self._walk(ref_or_dotted, frozenset())
            if not isinstance(step, _Ref) or step.kind != "class":
                return None
            ref = step
        else:
            ref = ref_or_dotted
        info = self.modules.get(ref.module or "")
        if info is None or not ref.qual:
            return None
        ci = info.classes.get(ref.qual[0])
        for q in ref.qual[1:]:
            ci = ci.classes.get(q) if ci else None
        return ci

    def _base_refs(
        self, ref: _Ref, ci: ClassInfo, seen: frozenset[Any]
    ) -> list[_Step | str]:
        """Each base as a class ref, an external/builtin dotted string, or a
        failure. Base names are looked up in the defining module."""
        out: list[_Step | str] = []
        mod = ref.module or ""
        info = self.modules.get(mod)
        for base in ci.bases:
            if base is None:
                out.append(
                    _Fail(
                        UNKNOWN,
                        "unknown-base",
                        f"'{ref.dotted}' has a computed base class",
                    )
                )
                continue
            root = base.split(".")[0]
            if info is not None and root in info.bindings:
                step = self._walk(f"{mod}.{base}", seen)
                if isinstance(step, _Ref) and step.kind == "external":
                    out.append(step.dotted)
                else:
                    out.append(step)
            elif root in _BUILTIN_NAMES:
                out.append(f"builtins.{base}")
            else:
                out.append(
                    _Fail(
                        UNKNOWN,
                        "unknown-base",
                        f"base '{base}' of '{ref.dotted}' is not resolvable",
                    )
                )
        if not ci.bases:
            out.append("builtins.object")
        return out

    def _class_attr(self, ref: _Ref, name: str, seen: frozenset[Any]) -> _Step:
        if (ref.dotted, name, "cls") in seen or len(seen) > 64:
            return _Fail(UNKNOWN, "cycle", f"class hierarchy cycle at '{ref.dotted}'")
        seen = seen | {(ref.dotted, name, "cls")}
        ci = self.class_info(ref)
        if ci is None:
            return _Fail(UNKNOWN, "value", f"class '{ref.dotted}' is not modelled")
        member = f"{ref.dotted}.{name}"
        if name in ci.methods:
            return _Ref("method", member, ref.module, (*ref.qual, name))
        if name in ci.classes:
            return _Ref("class", member, ref.module, (*ref.qual, name))
        if name in ci.attributes or name in ci.instance_attributes:
            return _Ref("attribute", member, ref.module, (*ref.qual, name))
        if name.startswith("__") and name.endswith("__"):
            return _Fail(UNKNOWN, "dunder", f"'{name}' may be inherited from object")
        uncertain: _Fail | None = None
        if ci.dynamic:
            uncertain = _Fail(
                UNKNOWN,
                "dynamic-class",
                f"'{ref.dotted}' {ci.dynamic}; '{name}' cannot be verified",
            )
        for base in self._base_refs(ref, ci, seen):
            if isinstance(base, str):
                if base in _EMPTY_BASES:
                    continue
                if base.startswith("builtins.") and base.endswith(
                    ("Error", "Exception", "Warning")
                ):
                    if name in _EXCEPTION_ATTRS:
                        return _Ref("attribute", member, None)
                    continue
                uncertain = uncertain or _Fail(
                    UNKNOWN,
                    "unknown-base",
                    f"'{ref.dotted}' inherits from '{base}'; '{name}' cannot be verified",
                )
                continue
            if isinstance(base, _Fail):
                uncertain = uncertain or _Fail(UNKNOWN, "unknown-base", base.message)
                continue
            if base.kind != "class":
                uncertain = uncertain or _Fail(
                    UNKNOWN,
                    "unknown-base",
                    f"base '{base.dotted}' of '{ref.dotted}' is not a modelled class",
                )
                continue
            step = self._class_attr(base, name, seen)
            if isinstance(step, _Ref):
                return step
            if step.status == UNKNOWN:
                uncertain = uncertain or step
        if uncertain is not None:
            return uncertain
        return _Fail(
            ABSENT, "no-such-name", f"'{ref.dotted}' has no attribute '{name}'"
        )

    def _constructor(
        self, ref: _Ref, seen: frozenset[str] = frozenset()
    ) -> tuple[list[dict[str, Any]] | None, str | None, bool]:
        """(params without self, reason when unknown, trusted) for a class call."""
        if ref.dotted in seen or len(seen) > 32:
            return None, "class hierarchy cycle", True
        seen = seen | {ref.dotted}
        ci = self.class_info(ref)
        if ci is None:
            return None, "class not modelled", True
        if ci.metaclass and ci.metaclass not in _NEUTRAL_METACLASSES:
            return None, f"uses metaclass {ci.metaclass}", True
        odd = [d for d in ci.decorators if d not in _NEUTRAL_CLASS_DECORATORS]
        trusted = not odd
        for special in ("__init__", "__new__"):
            fn = ci.methods.get(special)
            if fn is not None:
                return fn.params[1:], None, trusted and fn.trusted
        own_fields = ci.fields if ci.is_dataclass and ci.dataclass_init else None
        inherited: list[dict[str, Any]] = []
        for base in self._base_refs(ref, ci, frozenset()):
            if isinstance(base, str):
                if base in _EMPTY_BASES:
                    continue
                if base.startswith("builtins.") and base.endswith(
                    ("Error", "Exception", "Warning")
                ):
                    return (
                        [
                            {
                                "name": "args",
                                "kind": "var_positional",
                                "default": None,
                                "annotation": None,
                            }
                        ],
                        None,
                        trusted,
                    )
                return None, f"inherits its constructor from '{base}'", trusted
            if isinstance(base, _Fail) or base.kind != "class":
                return None, "a base class is not modelled", trusted
            params, why, t = self._constructor(base, seen)
            if params is None:
                return None, why, trusted
            if own_fields is None:
                return params, None, trusted and t
            bci = self.class_info(base)
            if bci is not None and not bci.is_dataclass:
                return None, "dataclass with a non-dataclass base", trusted
            inherited = params
            break
        if own_fields is not None:
            merged = {p["name"]: p for p in inherited}
            for p in own_fields:
                merged[p["name"]] = p
            return list(merged.values()), None, trusted
        return [], None, trusted

    # -- queries for the editor ---------------------------------------------------------

    def call_signature(
        self, dotted: str, *, bound: bool = False, module: str | None = None
    ) -> dict[str, Any] | None:
        """What a call to ``dotted`` accepts, for keyword checks.

        Returns None when ``dotted`` is not a modelled callable, else
        ``{"params", "var_keyword", "trusted", "reason"}``: ``params`` is
        None when the signature cannot be known (``reason`` says why);
        ``trusted`` is False when a decorator may have changed it. ``bound``
        drops ``self`` of a method reached through an instance.
        """
        key = (dotted, bound, module)
        if key not in self._call_cache:
            self._call_cache[key] = self._call_signature(dotted, bound, module)
        return self._call_cache[key]

    def _call_signature(
        self, dotted: str, bound: bool, module: str | None
    ) -> dict[str, Any] | None:
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref):
            return None
        params: list[dict[str, Any]] | None
        reason = None
        trusted = True
        if step.kind == "class":
            params, reason, trusted = self._constructor(step)
        elif step.kind == "function":
            fn = (
                self.modules[step.module or ""].functions.get(step.qual[0])
                if step.module
                else None
            )
            if fn is None:
                return None
            params, trusted = fn.params, fn.trusted
        elif step.kind == "method":
            ci = self.class_info(_Ref("class", "", step.module, step.qual[:-1]))
            fn = ci.methods.get(step.qual[-1]) if ci else None
            if fn is None:
                return None
            params, trusted = fn.params, fn.trusted
            if fn.method_kind == "classmethod" or (
                bound and fn.method_kind == "function"
            ):
                params = params[1:]
        else:
            return None
        return {
            "params": params,
            "var_keyword": bool(params)
            and any(p["kind"] == "var_keyword" for p in params or ()),
            "trusted": trusted,
            "reason": reason,
        }

    def signature(
        self, dotted: str, *, module: str | None = None
    ) -> dict[str, Any] | None:
        """Hover data: ``{dotted, kind, params, returns, doc, path, line,
        end_line, decorators}`` for a function, method or class; None otherwise."""
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref) or step.module is None:
            return None
        info = self.modules[step.module]
        if step.kind == "function":
            fn = info.functions.get(step.qual[0])
            if fn is None:
                return None
            return self._sig_dict(step, info, fn)
        if step.kind == "method":
            ci = self.class_info(_Ref("class", "", step.module, step.qual[:-1]))
            fn = ci.methods.get(step.qual[-1]) if ci else None
            return self._sig_dict(step, info, fn) if fn else None
        if step.kind == "class":
            ci = self.class_info(step)
            if ci is None:
                return None
            params, _, _ = self._constructor(step)
            return {
                "dotted": step.dotted,
                "kind": "class",
                "params": params,
                "returns": None,
                "doc": ci.doc,
                "path": info.rel,
                "line": ci.line,
                "end_line": ci.end_line,
                "decorators": ci.decorators,
                "bases": ci.bases,
            }
        return None

    @staticmethod
    def _sig_dict(step: _Ref, info: ModuleInfo, fn: FunctionInfo) -> dict[str, Any]:
        return {
            "dotted": step.dotted,
            "kind": step.kind,
            "params": fn.params,
            "returns": fn.returns,
            "doc": fn.doc,
            "path": info.rel,
            "line": fn.line,
            "end_line": fn.end_line,
            "decorators": fn.decorators,
            "is_async": fn.is_async,
        }

    def doc(self, dotted: str, *, module: str | None = None) -> str | None:
        """The docstring of what ``dotted`` resolves to (module, class,
        function or method), if any."""
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref) or step.module is None:
            return None
        info = self.modules.get(step.module)
        if info is None:
            return None
        if step.kind in ("package", "module", "namespace"):
            return info.doc
        if step.kind == "function":
            fn = info.functions.get(step.qual[0])
            return fn.doc if fn else None
        if step.kind == "class":
            ci = self.class_info(step)
            return ci.doc if ci else None
        if step.kind == "method":
            ci = self.class_info(_Ref("class", "", step.module, step.qual[:-1]))
            fn = ci.methods.get(step.qual[-1]) if ci else None
            return fn.doc if fn else None
        return None

    def members(
        self, dotted: str, *, module: str | None = None
    ) -> list[tuple[str, str]]:
        """``(name, kind)`` of a module's or class's members, public first.

        A dotted name that is a module path lists that module (what
        ``import a.b.c as x; x.`` completes), even if its package rebinds
        the name."""
        if module is None and dotted in self.modules:
            module = dotted
        step = self._walk(dotted, frozenset(), module)
        if not isinstance(step, _Ref):
            return []
        names: dict[str, str] = {}
        if step.kind in ("package", "module", "namespace"):
            info = self.modules[step.dotted]
            prefix = step.dotted + "."
            for m in self.modules:
                if m.startswith(prefix) and "." not in m[len(prefix) :]:
                    names[m[len(prefix) :]] = "module"
            candidates = set(info.bindings) | set(info.all or ())
            for star in info.star_imports:
                sinfo = self.modules.get(star)
                if sinfo is not None:
                    candidates |= set(sinfo.all or sinfo.public_names())
            for n in candidates:
                if n in names or (n.startswith("__") and n.endswith("__")):
                    continue
                r = self._attr(step, n, frozenset())
                if isinstance(r, _Ref):
                    if r.kind == "external" and n not in (info.all or ()):
                        continue
                    names[n] = r.kind
        elif step.kind == "class":
            seen: set[str] = set()
            stack = [step]
            while stack:
                cref = stack.pop(0)
                if cref.dotted in seen:
                    continue
                seen.add(cref.dotted)
                ci = self.class_info(cref)
                if ci is None:
                    continue
                for n, fn in ci.methods.items():
                    names.setdefault(
                        n, "property" if fn.method_kind == "property" else "method"
                    )
                for n in ci.classes:
                    names.setdefault(n, "class")
                for n in (*ci.attributes, *ci.instance_attributes):
                    names.setdefault(n, "attribute")
                for b in self._base_refs(cref, ci, frozenset()):
                    if isinstance(b, _Ref) and b.kind == "class":
                        stack.append(b)
        return sorted(
            names.items(), key=lambda kv: (kv[0].startswith("_"), kv[0].lower())
        )

    def all_symbols(self, include_private: bool = False) -> Iterator[str]:
        """Dotted names of every module and module-level definition or
        in-package re-export (public ones unless ``include_private``)."""
        for mod in sorted(self.modules):
            if not include_private and any(p.startswith("_") for p in mod.split(".")):
                continue
            yield mod
            info = self.modules[mod]
            for n, b in info.bindings.items():
                if n.startswith("_") and not include_private:
                    continue
                if b.kind in ("import", "module") and not (
                    b.target and self._inside(b.target)
                ):
                    continue
                yield f"{mod}.{n}"

    # -- suggestions ------------------------------------------------------------------------

    def prepare(self) -> None:
        """Build the lazily built parts (module table, suggestion index) now,
        e.g. off the event loop right after a build or an update."""
        _ = self.modules
        if self._suggest_index is None:
            self._suggest_index = _SuggestIndex(self)

    def suggest(
        self,
        dotted_or_name: str,
        k: int = 3,
        *,
        kind: str | None = None,
        within: str | None = None,
    ) -> list[str]:
        """Up to ``k`` real dotted symbols named like the (hallucinated) one.

        ``kind="module"`` restricts to modules; ``within`` to names under a
        dotted prefix. Only names that resolve as existing are returned, each
        canonical symbol once (under its shortest public path).
        """
        key = (dotted_or_name, k, kind, within)
        hit = self._suggest_cache.get(key)
        if hit is not None:
            return list(hit)
        if self._suggest_index is None:
            self._suggest_index = _SuggestIndex(self)
        got = self._suggest_index.query(dotted_or_name, k, kind=kind, within=within)
        if len(self._suggest_cache) > 4096:
            self._suggest_cache.clear()
        self._suggest_cache[key] = tuple(got)
        return got


#: Below this a "suggestion" shares little more than a common word.
_MIN_SUGGEST_SCORE = 0.5


def _extract_files(root: str, package: str, rels: list[str]) -> list[ModuleInfo]:
    """Read, parse and extract files (a process-pool worker in ``build``)."""
    out: list[ModuleInfo] = []
    for rel in rels:
        meta = module_name_for(rel, package)
        if meta is None:
            continue
        dotted, is_pkg, kind = meta
        try:
            data = read_regular(Path(root) / rel, MODEL_MAX_BYTES)
            if data is None:
                raise OSError(f"larger than {MODEL_MAX_BYTES} bytes")
        except OSError as exc:  # a FIFO fails at once (issue 19)
            out.append(
                ModuleInfo(
                    name=dotted,
                    rel=rel,
                    is_package=is_pkg,
                    kind=kind,
                    parse_error=f"unreadable: {exc}",
                )
            )
            continue
        out.append(module_info_from_bytes(data, dotted, rel, is_pkg, kind, Path(root)))
    return out


_MESON_EXT_RE = re.compile(r"extension_module\(\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")

#: Which file describes a module when several have its name (see ``modules``).
_KIND_RANK = MappingProxyType({"stub": 4, "cython": 3, "source": 2, "compiled": 1})


def module_info_from_bytes(
    data: bytes,
    name: str,
    rel: str,
    is_package: bool,
    kind: str,
    root: Path | None = None,
) -> ModuleInfo:
    """Facts of one module file of any kind but ``compiled``.

    A ``.pyx`` goes through :func:`~pycsamt_lsp.model.cython.cython_stub`;
    its ``include`` files are read relative to it under ``root`` (without a
    root the namespace stays open, and ``PackageModel.add_module`` completes
    it when the model has one)."""
    if kind == "build":
        info = ModuleInfo(name=name, rel=rel, kind="build")
        if rel.endswith("meson.build"):
            text = data.decode("utf-8", errors="replace")
            info.registered_modules = [
                f"{name}.{m}" for m in _MESON_EXT_RE.findall(text)
            ]
        return info
    if kind != "cython":
        return ModuleInfo.from_source(
            data, name=name, rel=rel, is_package=is_package, kind=kind
        )
    from pycsamt_lsp.model.cython import cython_stub

    here = (Path(root) / rel).parent if root is not None else None

    def read(path: str) -> str | None:
        if here is None:
            return None
        try:
            return (here / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    stub = cython_stub(data.decode("utf-8", errors="replace"), read)
    info = ModuleInfo.from_source(
        stub.source, name=name, rel=rel, is_package=is_package, kind="cython"
    )
    for b in info.bindings.values():
        b.line = stub.lines.get(b.line, b.line)
    for obj in (*info.functions.values(), *info.classes.values()):
        for attr in ("line", "end_line"):
            v = getattr(obj, attr, None)
            if isinstance(v, int):
                setattr(obj, attr, stub.lines.get(v, v))
    if stub.open_reason and info.open_reason is None:
        info.open_reason = stub.open_reason
    return info


class _SuggestIndex:
    """Token -> symbols map over every public name, for fast suggestions.

    Scoring (identifier parts, not characters, carry the meaning): coverage
    of the query's parts (an acronym of the query, ``ss`` for
    ``static_shift``, covers them all), precision over the candidate's parts,
    a small bonus for exact/prefix names and for package-level (re-exported)
    paths, a penalty per nesting level, and a character ratio for the final
    order of the shortlist.
    """

    def __init__(self, model: PackageModel) -> None:
        # A proxy, not a reference: the model owns this index, and a cycle
        # would keep every replaced model alive until a full collection.
        self.model = weakref.proxy(model)
        demote = model.suggest_demote
        mods = model.modules
        # dotted, name, tokens, compact name, is_module, static score part
        self.entries: list[tuple[str, str, frozenset[str], str, bool, float]] = []
        self.by_token: dict[str, list[int]] = defaultdict(list)
        seen: set[str] = set()
        for dotted in model.all_symbols():
            if dotted in seen or is_test_module(dotted):
                continue
            seen.add(dotted)
            parent, _, name = dotted.rpartition(".")
            is_module = dotted in mods
            toks = frozenset(_stem(t) for t in identifier_tokens(name))
            if not toks:
                continue
            pinfo = mods.get(parent)
            static = -0.03 * max(0, dotted.count(".") - 1)
            if pinfo is not None and pinfo.is_package:
                static += 0.08
            home = mods.get(dotted) if is_module else pinfo
            if demote is not None and home is not None and demote(home.rel):
                static -= 0.5
            idx = len(self.entries)
            self.entries.append(
                (dotted, name, toks, name.replace("_", "").lower(), is_module, static)
            )
            for t in toks:
                self.by_token[t].append(idx)
        self.vocab_by_letter: dict[str, list[str]] = defaultdict(list)
        for t in self.by_token:
            self.vocab_by_letter[t[0]].append(t)

    def query(
        self, text: str, k: int, *, kind: str | None, within: str | None
    ) -> list[str]:
        parent, _, name = text.rpartition(".")
        raw = identifier_tokens(name)
        qset = {_stem(t) for t in raw}
        if not qset:
            return []
        acronym = "".join(t[0] for t in raw) if len(raw) >= 2 else None
        qcompact = name.replace("_", "").lower()
        lookup = set(qset)
        for t in qset:
            if t not in self.by_token and len(t) >= 4:
                lookup.update(
                    difflib.get_close_matches(
                        t, self.vocab_by_letter.get(t[0], []), n=3, cutoff=0.8
                    )
                )
        if acronym and acronym in self.by_token:
            lookup.add(acronym)
        scores: dict[int, float] = {}
        acronym_only: set[int] = set()
        for t in lookup:
            for i in self.by_token.get(t, ()):
                if i in scores:
                    continue
                dotted, _, toks, compact, is_module, static = self.entries[i]
                if kind == "module" and not is_module:
                    continue
                if within and not dotted.startswith(within + "."):
                    continue
                exact = len(qset & toks)
                matched = exact + 0.8 * len(
                    {u for u in toks if u in lookup and u != acronym} - qset
                )
                if acronym and acronym in toks and matched < len(qset):
                    cover, prec = 0.5, min(1.0, (matched + 1) / len(toks))
                    if not matched:
                        acronym_only.add(i)
                else:
                    cover, prec = (
                        min(1.0, matched / len(qset)),
                        min(1.0, matched / len(toks)),
                    )
                score = 0.6 * cover + 0.25 * prec + static
                if compact == qcompact:
                    score += 0.15
                elif compact.startswith(qcompact):
                    score += 0.05
                if parent and dotted.startswith(parent + "."):
                    score += 0.05
                scores[i] = score
        if not scores:
            return []
        top = sorted(scores, key=lambda i: -scores[i])[: max(30, 8 * k)]
        words = [t for t in raw if len(t) > 2] or raw
        ranked = []
        for i in top:
            dotted, compact = self.entries[i][0], self.entries[i][3]
            # Evidence from the docstring: "static shift" in the summary of
            # ``emtools.ss`` is what makes the acronym match meaningful.
            doc = (self.model.doc(dotted) or "")[:400].lower()
            evidence = bool(doc) and all(w in doc for w in words)
            if i in acronym_only and not evidence:
                continue
            final = (
                scores[i]
                + 0.15 * difflib.SequenceMatcher(None, qcompact, compact).ratio()
            )
            final += 0.1 if evidence else 0.0
            if final >= _MIN_SUGGEST_SCORE:
                ranked.append((final, dotted))
        ranked.sort(key=lambda x: (-x[0], x[1]))
        out: list[str] = []
        canon: set[str] = set()
        for _, dotted in ranked:
            res = self.model.resolve(dotted)
            if not res.exists:
                continue
            key = res.target or dotted
            if key in canon:
                continue
            canon.add(key)
            out.append(dotted)
            if len(out) >= 3 * k:
                break
        if kind != "module":
            # A module whose own definitions are suggested too is a worse fix
            # than the definition (``agents.static_shift`` vs ``StaticShiftAgent``).
            mods = self.model.modules
            homes = {
                (self.model.resolve(d).target or d).rpartition(".")[0]
                for d in out
                if d not in mods
            }
            out = [d for d in out if d not in mods or d not in homes]
        return out[:k]
