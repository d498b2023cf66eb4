"""What the README says the two commands install, checked where it can be checked offline: the
package asks for a range of PyTorch versions and pins nothing; only the test install pins the
CPU build and names the index it comes from; the README shows both commands, the CPU-only route
and a figure for each route (the figures themselves are recomputed online by
.ci/install_sizes.py); and the environment running these tests, when the test install made it,
holds a CPU build of PyTorch and none of NVIDIA's CUDA packages."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
MAIN = "python -m pip install -r requirements.txt && tensorforge run --target rtx3050-laptop"
TEST = "python -m pip install -r requirements-test.txt && python -m pytest"
CPU_ROUTE = (
    f"python -m pip install torch --index-url {CPU_INDEX}\n"
    "python -m pip install -r requirements.txt && tensorforge run --target host-cpu"
)


def _lines(name: str) -> list[str]:
    text = (ROOT / name).read_text(encoding="utf-8")
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def _pinned_cpu_version() -> str:
    pins = [line for line in _lines("requirements-test.txt") if line.startswith("torch==")]
    linux = next(p for p in pins if 'sys_platform != "darwin"' in p)
    return linux.split(";")[0].removeprefix("torch==").strip()


def test_the_package_asks_for_a_range_of_torch_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    torch = [r for r in project["optional-dependencies"]["measure"] if r.startswith("torch")]
    assert torch == ["torch>=2.1"]  # a range: a user's own CUDA build satisfies it


def test_requirements_pin_nothing_and_name_no_index():
    lines = _lines("requirements.txt")
    assert not [line for line in lines if line.startswith(("torch", "--index-url", "--extra-index-url", "-i "))]
    assert "-e .[measure,report]" in lines


def test_only_the_test_install_pins_the_cpu_build_and_names_its_index():
    lines = _lines("requirements-test.txt")
    assert f"--extra-index-url {CPU_INDEX}" in lines
    assert _pinned_cpu_version().endswith("+cpu")  # the CPU build by name: no silent CUDA fallback
    assert 'torch==2.13.0 ; sys_platform == "darwin"' in lines  # PyPI's macOS wheels are CPU builds
    assert "-r requirements.txt" in lines


def test_the_readme_shows_both_commands_and_the_cpu_only_route():
    blocks = re.findall(r"```\n(.*?)\n```", README, flags=re.S)
    assert MAIN in blocks and TEST in blocks and CPU_ROUTE in blocks


def test_the_readme_states_a_download_and_an_environment_size_per_route():
    install_sizes = load_script(".ci/install_sizes.py")
    figures = install_sizes.readme_figures(ROOT / "README.md")
    assert set(figures) == set(install_sizes.ROUTES) == {"main", "cpu", "test"}
    assert figures["main"] > 10 * figures["cpu"]  # the CUDA build is the bulk of it
    rows = {m[1]: m[0] for m in re.finditer(r"^\| \*\*(\w+)\*\* \|.*$", README, flags=re.M)}
    assert "none" in rows["cpu"] and "none" in rows["test"] and "nvidia-" in rows["main"]
    assert "Without a GPU" in README and "3 GB" in README


def test_this_test_install_holds_no_cuda_packages():
    torch = pytest.importorskip("torch")
    pinned = _pinned_cpu_version()
    if torch.__version__ != pinned:
        pytest.skip(f"torch {torch.__version__} here, not the test install's {pinned} (a GPU environment?)")
    assert torch.version.cuda is None
    installed = sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions())
    cuda = [n for n in installed if n.startswith(("nvidia-", "cuda-", "triton")) and n != "nvidia-ml-py"]
    assert cuda == []
