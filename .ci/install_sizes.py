#!/usr/bin/env python3
"""What each install route of the README downloads, resolved the way a fresh machine resolves
it: public indexes only (pip --isolated ignores this machine's pip configuration, mirrors and
local wheels), in a throwaway virtual environment, without installing anything.

    python .ci/install_sizes.py                 # a table: route, packages, download, CUDA share
    python .ci/install_sizes.py --check README.md   # exit 1 when the README's figures are off

pip resolves each route with --dry-run --report (wheel metadata over HTTP range requests, so
nothing large is downloaded); each wheel's size is its Content-Length. A route whose index
cannot be reached is reported as skipped, never guessed. Installed sizes (the environment on
disk) are not computed here: they need a real install, and the README dates the one it quotes.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import urllib.request
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPI = "https://pypi.org/simple"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# route -> (pip arguments, indexes it needs). The CPU route is the README's two commands in one
# resolution: torch from PyTorch's CPU index, everything else from PyPI.
ROUTES = {
    "main": (["-r", "requirements.txt"], [PYPI]),
    "cpu": (
        ["--index-url", CPU_INDEX, "--extra-index-url", PYPI, "torch", "-r", "requirements.txt"],
        [CPU_INDEX, PYPI],
    ),
    "test": (["-r", "requirements-test.txt"], [PYPI, CPU_INDEX]),
}
CUDA_PREFIXES = ("nvidia-", "cuda-", "triton")
NOT_CUDA = {"nvidia-ml-py"}  # the NVML binding: a few hundred kB of Python, no CUDA libraries
TOLERANCE = 0.25  # package releases move sizes; the README rounds


def reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=15):
            return True
    except Exception:  # noqa: BLE001 - any failure means: cannot check this route here
        return False


def content_length(url: str) -> int:
    if not url.startswith("http"):
        return 0  # the repository's own packages, installed from the clone
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as response:
        return int(response.headers.get("Content-Length") or 0)


def resolve(python: str, args: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        subprocess.run(
            [
                python,
                "-m",
                "pip",
                "--isolated",
                "install",
                "--dry-run",
                "--ignore-installed",
                "--quiet",
                "--use-feature=fast-deps",
                "--report",
                str(report),
                *args,
            ],
            cwd=ROOT,
            check=True,
            stderr=subprocess.DEVNULL,
        )
        return json.loads(report.read_text(encoding="utf-8"))["install"]


def is_cuda(name: str) -> bool:
    return name.lower().startswith(CUDA_PREFIXES) and name.lower() not in NOT_CUDA


def measure(python: str, route: str) -> dict:
    args, indexes = ROUTES[route]
    missing = [i for i in indexes if not reachable(i + "/")]
    if missing:
        return {"route": route, "skipped": f"cannot reach {', '.join(missing)}"}
    installs = resolve(python, args)
    urls = [i["download_info"]["url"] for i in installs]
    with ThreadPoolExecutor(8) as pool:
        sizes = list(pool.map(content_length, urls))
    names = [i["metadata"]["name"] for i in installs]
    torch = next((i["metadata"]["version"] for i in installs if i["metadata"]["name"] == "torch"), None)
    return {
        "route": route,
        "packages": len(installs),
        "torch": torch,
        "download_bytes": sum(sizes),
        "cuda_bytes": sum(s for n, s in zip(names, sizes) if is_cuda(n)),
        "cuda_packages": sorted(n for n in names if is_cuda(n)),
    }


def readme_figures(readme: Path) -> dict[str, float]:
    """route -> download in bytes, from the README's table rows `| **route** | ... | N GB | ...`."""
    figures = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\|\s*\*\*(\w+)\*\*\s*\|[^|]*\|\s*([\d.]+)\s*(MB|GB)\s*\|", line)
        if match:
            figures[match[1]] = float(match[2]) * (1e9 if match[3] == "GB" else 1e6)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, help="README whose table of download sizes to check")
    parser.add_argument("--route", action="append", choices=sorted(ROUTES), help="only these routes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        venv.create(folder, with_pip=True)
        python = str(Path(folder) / "bin" / "python")
        results = [measure(python, route) for route in (args.route or ROUTES)]
    for r in results:
        if "skipped" in r:
            print(f"{r['route']:5}  skipped: {r['skipped']}")
        else:
            print(
                f"{r['route']:5}  {r['packages']:3} packages  torch {r['torch']}  download "
                f"{r['download_bytes'] / 1e9:.2f} GB, of which CUDA libraries {r['cuda_bytes'] / 1e9:.2f} GB "
                f"({len(r['cuda_packages'])} packages)"
            )
    if not args.check:
        return 0
    stated, failures = readme_figures(args.check), []
    for r in results:
        if "skipped" in r:
            continue
        if r["route"] not in stated:
            failures.append(f"{args.check} states no download size for route {r['route']!r}")
            continue
        ratio = r["download_bytes"] / stated[r["route"]]
        if abs(ratio - 1) > TOLERANCE:
            failures.append(
                f"route {r['route']}: {args.check} says {stated[r['route']] / 1e9:.2f} GB, "
                f"pip resolves {r['download_bytes'] / 1e9:.2f} GB"
            )
        if r["route"] in ("cpu", "test") and r["cuda_packages"]:
            failures.append(f"route {r['route']} pulls CUDA packages: {', '.join(r['cuda_packages'])}")
    for line in failures:
        print(f"FAIL  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
