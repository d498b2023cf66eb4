"""One public surface per side, as `import pytest` or `from datasette import hookimpl`: a plugin
imports `tensorforge` (and `tensorforge.testing`, the author's kit) and `tensorforge_measure`,
nothing behind them. Checked here:

- every name in each side's `__all__` exists and loads, and what type checkers see (the
  TYPE_CHECKING block) is exactly that list;
- `import tensorforge` / `import tensorforge_measure` stay cheap: the names load on first use;
- every shipped plugin (plugins/tf_*, its tests included) and every example plugin the guide
  teaches (tests/plugins_external) imports only the surfaces, and a shipped plugin imports no
  distribution (another plugin, torch, ...) that its pyproject does not declare;
- the root distribution declares every third-party package the Core and the measuring side import.
"""

import ast
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import tensorforge
import tensorforge_measure

REPO = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p.parent for p in (REPO / "plugins").glob("tf_*/pyproject.toml"))
EXTERNAL = REPO / "tests" / "plugins_external"
SURFACES = {"tensorforge", "tensorforge.testing", "tensorforge_measure"}
FIRST_PARTY = ("tensorforge", "tensorforge_measure")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _sources(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.py") if not {"build", "__pycache__"} & set(p.parts) and ".egg-info" not in str(p)
    )


def imports(source: str) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in `source`, at any depth (lazy imports count),
    including `importlib.import_module("...")` / `__import__("...")` with a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def off_surface(source: str) -> list[str]:
    """The imports of `source` that reach behind a public surface."""
    return [
        f"line {line}: {module}"
        for line, module in imports(source)
        if module.split(".")[0] in FIRST_PARTY and module not in SURFACES
    ]


@pytest.mark.parametrize(
    "line",
    [
        "from tensorforge.hookspecs import hookimpl",
        "import tensorforge.workloads.kinds",
        "def f():\n    from tensorforge_measure.measure.stats import summarize",
        "from tensorforge.api import read_json",
        "import importlib\nimportlib.import_module('tensorforge_measure.measure.timing')",
        "from tensorforge.testing.pytest_plugin import tensorforge_host",
    ],
)
def test_the_check_catches_imports_behind_the_surfaces(line):
    assert off_surface(line)


@pytest.mark.parametrize(
    "line",
    [
        "from tensorforge import hookimpl, WorkloadKind",
        "import tensorforge",
        "from tensorforge.testing import check_target",
        "def f():\n    from tensorforge_measure import operator_range",
        "import tensorforge_measure as tm",
        "from tensorforgeish import x",
    ],
)
def test_the_check_lets_the_surfaces_through(line):
    assert not off_surface(line)


@pytest.mark.parametrize("surface", [tensorforge, tensorforge_measure], ids=lambda m: m.__name__)
def test_every_public_name_exists_and_loads(surface):
    names = surface.__all__
    assert len(names) == len(set(names)), "a name is listed twice"
    missing = [name for name in names if not hasattr(surface, name)]
    assert missing == []
    for name in names:  # as a plugin writes it
        namespace: dict = {}
        exec(f"from {surface.__name__} import {name}", namespace)
        assert namespace[name] is getattr(surface, name)
    assert set(dir(surface)) >= set(names)
    with pytest.raises(AttributeError):
        surface.no_such_name  # noqa: B018


@pytest.mark.parametrize("surface", [tensorforge, tensorforge_measure], ids=lambda m: m.__name__)
def test_type_checkers_see_exactly_the_public_names(surface):
    """The lazy names are declared twice: for run time (`_HOMES`) and for mypy (the TYPE_CHECKING
    block); both must be `__all__`, and both must name the same object."""
    tree = ast.parse(Path(surface.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        for alias in node.names:
            assert alias.asname, f"write `{alias.name} as {alias.name}`: an explicit re-export"
            typed[alias.asname] = f"{node.module}:{alias.name}"
    public = set(surface.__all__) - {"__version__"}
    assert set(typed) == public
    assert set(surface._HOMES) == public
    for name, home in surface._HOMES.items():
        module, _, attribute = home.partition(":")
        assert typed[name] == f"{module}:{attribute or name}", name


@pytest.mark.parametrize("surface", ["tensorforge", "tensorforge_measure"])
def test_importing_a_surface_stays_cheap(surface):
    """The names load on first use: importing the package alone loads none of the modules behind
    it, and nothing heavy (the measuring side's helpers import torch only when first used)."""
    code = f"import sys, json; import {surface}; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    # the lazy loader both surfaces share is the surface's own machinery, not a module behind it
    machinery = {surface, "tensorforge", "tensorforge.host", "tensorforge.host.lazy"}
    behind = [m for m in loaded if m.split(".")[0] in FIRST_PARTY and m not in machinery]
    heavy = [m for m in loaded if m.split(".")[0] in ("torch", "numpy", "click", "pluggy", "attrs", "cattrs")]
    assert (behind, heavy) == ([], [])


def test_torch_loads_only_with_the_helper_that_needs_it():
    code = (
        "import sys; from tensorforge_measure import WorkloadBuilder, hookimpl, Unavailable, summarize; "
        "print('torch' in sys.modules)"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def _declared(pyproject: Path) -> set[str]:
    """Every distribution the pyproject names, in its dependencies or any extra."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return {_normal(Requirement(r).name) for r in requirements}


def _distribution_of(module: str, providers: dict) -> str | None:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return None
    dists = providers.get(top)
    assert dists, f"cannot tell which distribution provides {top!r}: is it installed?"
    return _normal(dists[0])


@pytest.fixture(scope="module")
def providers():
    return metadata.packages_distributions()


def test_there_are_shipped_plugins_to_check():
    assert {p.name for p in PLUGINS} >= {"tf_gemm", "tf_vector", "tf_cpu", "tf_cuda", "tf_distributed", "tf_mlflow"}


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.name)
def test_a_shipped_plugin_imports_only_the_public_surfaces(plugin):
    offenders = [
        f"{path.relative_to(REPO)} {where}"
        for path in _sources(plugin)
        for where in off_surface(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "import from `tensorforge` / `tensorforge_measure` instead"


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.name)
def test_a_shipped_plugin_declares_every_distribution_it_imports(plugin, providers):
    """Another plugin (tf_distributed imports tf_cpu, tf_cuda, tf_collective), torch, mlflow,
    attrs: each is in the plugin's own dependencies (or an extra), not there by chance."""
    declared = _declared(plugin / "pyproject.toml")
    own = _normal(tomllib.loads((plugin / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"])
    undeclared = sorted(
        {
            f"{path.relative_to(REPO)}:{line}: {module} (distribution {dist})"
            for path in _sources(plugin)
            for line, module in imports(path.read_text(encoding="utf-8"))
            for dist in [_distribution_of(module, providers)]
            if dist is not None and dist != own and dist not in declared
        }
    )
    assert undeclared == []


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.name)
def test_a_shipped_plugin_has_its_readme(plugin):
    project = tomllib.loads((plugin / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project.get("readme") == "README.md"
    lines = (plugin / "README.md").read_text(encoding="utf-8").splitlines()
    assert 15 <= len(lines) <= 40
    assert lines[0] == f"# {project['name']}"


def test_the_guides_example_plugins_import_only_the_public_surfaces():
    sources = _sources(EXTERNAL)
    assert len(sources) >= 5
    offenders = [
        f"{path.relative_to(REPO)} {where}"
        for path in sources
        for where in off_surface(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_root_distribution_declares_what_the_core_and_the_measuring_side_import(providers):
    """`run` signs captures with cryptography: it is declared, not there through MLflow by chance.
    The Core may use only the plain dependencies (its test kit also the `test` extra's pytest);
    the measuring side also the extras (torch, matplotlib)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    plain = {_normal(Requirement(r).name) for r in project["dependencies"]}
    assert "cryptography" in plain
    test = {_normal(Requirement(r).name) for r in project["optional-dependencies"]["test"]}
    every = _declared(REPO / "pyproject.toml")
    core = [p for p in _sources(REPO / "tensorforge") if "testing" not in p.parts]
    kit = _sources(REPO / "tensorforge" / "testing")
    for paths, allowed in ((core, plain), (kit, plain | test), (_sources(REPO / "tensorforge_measure"), every)):
        assert paths
        undeclared = sorted(
            {
                f"{path.relative_to(REPO)}:{line}: {module}"
                for path in paths
                for line, module in imports(path.read_text(encoding="utf-8"))
                for dist in [_distribution_of(module, providers)]
                if dist is not None and dist != "tensorforge" and dist not in allowed
            }
        )
        assert undeclared == []


def test_the_plugin_guide_teaches_only_the_public_surfaces():
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 4
    assert [where for block in blocks for where in off_surface(block)] == []
    # and in prose: no `tensorforge.x.y` / `tensorforge_measure.x` module paths to import from
    behind = re.findall(r"`(tensorforge(?:_measure)?\.(?!testing\b)[a-z_.]+)", text)
    assert [b for b in behind if b != "tensorforge.hardware.target.Target"] == []
