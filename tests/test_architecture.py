"""The package's architecture, checked on its source (issue 13).

One direction of dependency (engine <- interfaces), no import cycles, and no
state in module globals: two workspaces in one process must never share a
cache, so a module-level mutable container or a ``global`` rebinding is a
bug by construction. The checks read the ASTs; nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "server" / "pycsamt_lsp"
ROOT_NAME = "pycsamt_lsp"
#: interface layers: they may import the engine, never the other way round
INTERFACES = ("pycsamt_lsp.lsp", "pycsamt_lsp.cli", "pycsamt_lsp.__main__")
COMMANDS = ("pycsamt_lsp.commands",)
MUTABLE_CALLS = frozenset(
    {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"}
    | {"WeakValueDictionary", "WeakKeyDictionary", "WeakSet"}
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST):
    """Every node outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _target(name: str) -> str | None:
    """The package module *name* refers to (a submodule or its parent)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str, path: Path) -> set[str]:
    """Package modules *mod* imports at run time (any depth of the file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    here = mod if is_pkg else mod.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                absmod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                absmod = node.module or ""
            names = [absmod] + [f"{absmod}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == ROOT_NAME or not name.startswith(ROOT_NAME + "."):
                continue
            target = _target(name)
            if target and target != mod and target != ROOT_NAME:
                found.add(target)
    return found


GRAPH = {mod: _imports(mod, path) for mod, path in MODULES.items()}


def _within(mod: str, prefixes: tuple[str, ...]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_sees_the_package():
    assert len(MODULES) > 30
    assert "pycsamt_lsp.workspace.facade" in MODULES
    # the graph is real: the server imports the workspace
    assert any(_within(t, ("pycsamt_lsp.workspace",)) for t in GRAPH["pycsamt_lsp.cli"])


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_cycle_detection_can_fail():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_engine_never_imports_the_interfaces():
    bad = [
        (mod, target)
        for mod, targets in GRAPH.items()
        if not _within(mod, INTERFACES + COMMANDS)
        for target in targets
        if _within(target, INTERFACES + COMMANDS)
    ]
    assert bad == []


def test_only_lsp_imports_lsp():
    """Only the server and the entry points that start it (``serve``)."""
    bad = [
        (mod, target)
        for mod, targets in GRAPH.items()
        if not _within(mod, INTERFACES)
        for target in targets
        if _within(target, ("pycsamt_lsp.lsp",))
    ]
    assert bad == []


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp):
        return True
    if isinstance(value, ast.ListComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        fn = value.func
        name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
        return name in MUTABLE_CALLS
    return False


def module_state(source: str) -> list[str]:
    """Module-level mutable containers and ``global`` rebindings in *source*."""
    tree = ast.parse(source)
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and _mutable(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [ast.unparse(t) for t in targets]
            if names != ["__all__"]:
                found.append(f"{', '.join(names)} (line {node.lineno})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"global {', '.join(node.names)} (line {node.lineno})")
    return found


def test_no_module_level_mutable_state():
    bad = {
        mod: hits
        for mod, path in MODULES.items()
        if (hits := module_state(path.read_text(encoding="utf-8")))
    }
    assert bad == {}


def test_state_detection_can_fail():
    src = "import collections\nA = {}\nB: list = []\nC = collections.defaultdict(list)\nD = (1, 2)\n__all__ = ['x']\ndef f():\n    global D\n"
    assert module_state(src) == [
        "A (line 2)",
        "B (line 3)",
        "C (line 4)",
        "global D (line 8)",
    ]
