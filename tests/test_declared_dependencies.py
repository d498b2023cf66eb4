"""With only the declared dependencies, `tensorforge run --target host-cpu` writes a capture that
`tensorforge verify` accepts.

A fresh virtual environment would prove it, but needs every wheel (PyTorch's among them) from an
index. This test proves the same offline, in seconds of set-up: it computes the closure of what a
user installs (`pip install tf-cpu 'tf-gemm[measure]'`, which brings `tensorforge[measure]`)
from the installed distributions' declared requirements, and runs the commands in processes
where nothing else exists:

- importing a top-level module that no distribution of the closure provides (nor the standard
  library) raises ModuleNotFoundError, as in a fresh environment: a `sitecustomize` on
  PYTHONPATH installs the refusal in every process, `run`'s children included;
- importlib.metadata shows only the closure's distributions, so the other shipped plugins'
  entry points (tf-cuda, tf-mlflow, ...) are not there to load.

Every refused import is logged with the file that attempted it; the Core, the measuring side and
the plugins must attempt none (a guarded `try: import x` of an undeclared package counts).
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import Requirement


REPO = Path(__file__).resolve().parents[1]
INSTALLED = ("tf-cpu", "tf-gemm[measure]")  # what the user asks pip for

GUARD = textwrap.dedent(
    r'''
    """Only the declared dependencies: see tests/test_declared_dependencies.py."""
    import importlib.abc
    import importlib.metadata as _md
    import json
    import os
    import re
    import sys

    with open(os.environ["TF_DECLARED_ONLY"], encoding="utf-8") as _f:
        _CONF = json.load(_f)
    _ALLOWED = set(_CONF["modules"]) | set(sys.stdlib_module_names) | {m.partition(".")[0] for m in sys.modules}
    _DISTS = set(_CONF["distributions"])


    def _normal(name):
        return re.sub(r"[-_.]+", "-", name or "").lower()


    def _importer():
        frame = sys._getframe(2)
        while frame is not None and (
            frame.f_code.co_filename.startswith("<frozen")
            or frame.f_code.co_filename.endswith(os.path.join("importlib", "__init__.py"))
        ):
            frame = frame.f_back
        return frame.f_code.co_filename if frame is not None else "?"


    class _DeclaredOnly(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top in _ALLOWED or top.startswith("__editable__"):
                return None
            with open(_CONF["log"], "a", encoding="utf-8") as log:
                log.write(json.dumps([top, _importer()]) + "\n")
            raise ModuleNotFoundError(f"No module named {name!r} (not a declared dependency)", name=name)


    sys.meta_path.insert(0, _DeclaredOnly())

    _distributions = _md.distributions
    _from_name = _md.Distribution.from_name.__func__


    def _only_declared(**kwargs):
        return (d for d in _distributions(**kwargs) if _normal(d.metadata["Name"]) in _DISTS)


    def _from_declared(cls, name):
        if _normal(name) not in _DISTS:
            raise _md.PackageNotFoundError(name)
        return _from_name(cls, name)


    _md.distributions = _only_declared
    _md.Distribution.from_name = classmethod(_from_declared)
    '''
)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requested: tuple[str, ...]) -> set[str]:
    """The distributions pip would install for `requested`, read from the declared requirements
    of those installed here (with their extras, under this platform's markers)."""
    seen: set[tuple[str, str]] = set()
    found: set[str] = set()
    todo = [Requirement(r) for r in requested]
    while todo:
        req = todo.pop()
        name = _normal(req.name)
        extras = sorted(req.extras) or [""]
        if all((name, e) in seen for e in extras):
            continue
        seen.update((name, e) for e in extras)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here (another platform's, or an optional one): not importable either
        found.add(name)
        for text in requires:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                todo.append(sub)
    return found


def top_level_modules(distributions: set[str]) -> set[str]:
    return {
        module
        for module, dists in metadata.packages_distributions().items()
        if any(_normal(d) in distributions for d in dists)
    }


def test_the_closure_follows_the_declared_requirements():
    dists = closure(INSTALLED)
    assert {"tensorforge", "tf-cpu", "tf-gemm", "torch", "cryptography", "numpy", "pluggy"} <= dists
    # not declared by any of them: the other shipped plugins, and what arrives only with them
    assert not {"tf-cuda", "tf-mlflow", "tf-conv2d", "tf-transformer", "mlflow-skinny"} & dists


@pytest.fixture
def declared_only(tmp_path):
    """An environment for subprocesses in which only the closure's distributions exist."""
    dists = closure(INSTALLED)
    site = tmp_path / "guard"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    log = tmp_path / "refused.jsonl"
    log.touch()
    conf = tmp_path / "declared.json"
    conf.write_text(
        json.dumps({"modules": sorted(top_level_modules(dists)), "distributions": sorted(dists), "log": str(log)}),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TENSORFORGE_", "PYTHON"))}
    env.update(
        PYTHONPATH=str(site),
        TF_DECLARED_ONLY=str(conf),
        TENSORFORGE_HOME=str(tmp_path / "home"),
        PYTHONDONTWRITEBYTECODE="1",
    )

    def tensorforge(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", "from tensorforge.cli.main import main; main()", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=timeout,
        )

    def refused() -> list[tuple[str, str]]:
        return [tuple(json.loads(line)) for line in log.read_text(encoding="utf-8").splitlines()]

    return SimpleNamespace(tensorforge=tensorforge, refused=refused, env=env)


def test_the_guard_refuses_what_is_not_declared(declared_only):
    proc = declared_only.tensorforge("list-plugins")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    loaded = {line.split()[0] for line in proc.stdout.splitlines()[2:] if line.strip()}
    assert {"gemm", "gemm-torch", "host-cpu", "torch-cpu", "builtin-mappings", "policies"} <= loaded
    assert not {"torch-cuda", "mlflow", "conv2d", "transformer", "h200"} & loaded
    check = subprocess.run(
        [sys.executable, "-c", "import mlflow"], env=declared_only.env, capture_output=True, text=True
    )
    assert "not a declared dependency" in check.stderr
    assert ("mlflow", "<string>") in declared_only.refused()


def test_run_on_host_cpu_with_only_the_declared_dependencies(declared_only, tmp_path):
    capture = tmp_path / "capture.json"
    run = declared_only.tensorforge(
        "run",
        "--target",
        "host-cpu",
        "-w",
        "gemm_tiny:dtype=fp32",
        "--no-trace",
        "--no-telemetry",
        "--no-energy",
        "--no-sustained",
        "--budget",
        "0.05",
        "--cooldown",
        "0",
        "--rest",
        "0",
        "-o",
        str(capture),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert json.loads(capture.read_text(encoding="utf-8"))["measured"]
    verify = declared_only.tensorforge("verify", str(capture))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    ours = sorted(
        {
            f"{module} (from {Path(path).relative_to(REPO)})"
            for module, path in declared_only.refused()
            if Path(path).is_absolute() and Path(path).is_relative_to(REPO)
        }
    )
    assert ours == [], "the Core, the measuring side or a plugin tried an undeclared package"
