"""The one dependency rule (../shared/DESIGN.md, "Layout"), read from the source with ast: imports
run down, never in a circle.

- No import cycle between the modules of tensorforge/ and tensorforge_measure/, counting the
  imports inside functions too: a lazy import still ties two modules together (the circle
  core_plugin <-> commands was one). Imports under `if TYPE_CHECKING:` are left out: they never
  run, and an annotation may name a type from anywhere.
- The command layer sits on top. On the measuring side only core_plugin (the hook
  implementations the Core loads through its entry point) and the command modules import
  tensorforge_measure.commands, and nothing imports core_plugin; the commands reach the Ops
  host through tensorforge_measure.host. On the Core side nothing below the CLI imports the
  root group or the command modules, except the plugin author's kit (ALLOWED_CORE_COMMAND_USERS).
- No module imports the package it lives in (its __init__ or an ancestor's), except the pairs in
  ALLOWED_UPWARD, each with its reason.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("tensorforge", "tensorforge_measure")

# (importer, imported): a module importing a package above it, and why that is fine.
ALLOWED_UPWARD = {
    # `tensorforge --version`: the version string is a constant of the package's __init__.
    ("tensorforge.cli.main", "tensorforge"),
    # the pytest plugin hands out the kit's own helpers (fresh_host), defined in its __init__.
    ("tensorforge.testing.pytest_plugin", "tensorforge.testing"),
}

# Core modules that may import the command layer (tensorforge.cli.main, tensorforge.cli.commands),
# and why: the plugin author's kit runs a plugin's commands through the real root group.
ALLOWED_CORE_COMMAND_USERS = {"tensorforge.testing", "tensorforge.testing.pytest_plugin"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under `node`, at any depth, except those under TYPE_CHECKING."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif _is_type_checking(child):
            yield from _imports(ast.Module(body=child.orelse, type_ignores=[]))  # its `else:` runs
        else:
            yield from _imports(child)


def _known(name: str) -> str | None:
    """The module of ours that `name` denotes (a module, or the module holding that name)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {m for alias in node.names if (m := _known(alias.name))}
    base = node.module or ""
    if node.level:  # relative: from the module's package, one level up per extra dot
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    found = set()
    for alias in node.names:  # `from pkg import sub` imports the submodule pkg.sub
        full = f"{base}.{alias.name}"
        target = full if full in MODULES else _known(base)
        if target:
            found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {t for node in _imports(tree) for t in _targets(module, node)} - {module}
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _edges():
    return ((module, target) for module, targets in sorted(GRAPH.items()) for target in sorted(targets))


def test_the_graph_is_read():
    """Guards against a vacuous pass: the modules and the imports the rules below rely on are seen."""
    assert len(MODULES) > 100
    assert "tensorforge_measure.host" in GRAPH["tensorforge_measure.core_plugin"]  # inside a function
    assert "tensorforge_measure.host" in GRAPH["tensorforge_measure.commands.gate"]  # inside a function
    assert "tensorforge.cli.commands.targets" in GRAPH["tensorforge.cli.main"]  # (the others load lazily)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_measuring_rooms_never_import_the_command_layer():
    command_layer = "tensorforge_measure.commands"
    reached = [
        f"{module} -> {target}"
        for module, target in _edges()
        if target == "tensorforge_measure.core_plugin"
        or (
            (target == command_layer or target.startswith(command_layer + "."))
            and module != "tensorforge_measure.core_plugin"
            and not (module == command_layer or module.startswith(command_layer + "."))
        )
    ]
    assert reached == []


def test_the_core_rooms_never_import_the_command_layer():
    def in_command_layer(module: str) -> bool:
        return module == "tensorforge.cli.main" or module.startswith("tensorforge.cli.commands")

    reached = [
        f"{module} -> {target}"
        for module, target in _edges()
        if in_command_layer(target) and not in_command_layer(module) and module not in ALLOWED_CORE_COMMAND_USERS
    ]
    assert reached == []


def test_no_module_imports_a_package_above_it():
    upward = {(module, target) for module, target in _edges() if module.startswith(target + ".")}
    assert sorted(upward - ALLOWED_UPWARD) == []
    assert sorted(ALLOWED_UPWARD - upward) == [], "an allowed exception no longer occurs: remove it"
