"""The README's tour, run exactly as printed: each line of the code block under "## A tour" goes
to bash, in order, from a folder holding a copy of the repository's examples/ (which holds the
captures the tour reads, in examples/captures/), so nothing the tour writes lands in the clone,
with TensorForge's state in a fresh home. The whole tour runs twice in the same folder and home,
as a user trying it again would: every line must give the same exit status and the same key
output the second time (a line that writes a file uses --force or a shell redirection). Each
line's exit status and key output are checked against EXPECTED below, and every tour line must
have an entry there, so a line added to the README without a check fails here. Lines that need
a CUDA device are skipped without one, with the reason."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@attrs.frozen
class Expect:
    status: int = 0
    stdout: tuple[str, ...] = ()  # regular expressions that must match standard output
    stderr: tuple[str, ...] = ()  # ... and standard error
    files: tuple[str, ...] = ()  # files the line leaves in the folder
    gpu: bool = False  # needs a CUDA device


EXPECTED: dict[str, Expect] = {
    "tensorforge": Expect(
        stdout=(r"^Usage: tensorforge", r"\n  predict +Predict the lower-bound latency", r"\n  run +")
    ),
    "tensorforge list-plugins": Expect(
        stdout=(r"^plugin +side +distribution", r"\nh200 +core +tf-h200", r"\ntorch-cpu +\w+ +tf-cpu")
    ),
    "tensorforge workloads": Expect(stdout=(r"gemm: dense matrix multiply", r"\* gemm_tiny: gemm:m=64,n=64,k=64")),
    "tensorforge targets list": Expect(stdout=(r"\nh200 +132 SM", r"\nrtx3050-laptop +16 SM", r"\nhost-cpu ")),
    "tensorforge targets show h200 > my-npu.toml": Expect(files=("my-npu.toml",)),
    "tensorforge predict --target ./my-npu.toml": Expect(stdout=(r"^PREDICTED  analytical lower bound on h200",)),
    "tensorforge --disable-plugins rtx3050 --trace-hooks targets list": Expect(
        stdout=(r"\nh200 ",), stderr=(r"tensorforge_register_targets",)
    ),
    "tensorforge predict --target rtx3050-laptop": Expect(
        stdout=(r"^PREDICTED  analytical lower bound on rtx3050-laptop", r"\ngemm_large_square ")
    ),
    "tensorforge predict -t h200 -w gemm:m=8192,n=8192,k=8192,dtype=bf16 --detail": Expect(
        stdout=(r"memory \(level\)", r"1\.028 ms \(shared_memory\)", r"\nmatmul +1 ")
    ),
    "tensorforge predict -t h200 --max-candidates 50": Expect(stdout=(r"relaxation",)),
    "tensorforge predict -t h200 -w gemm_tiny:dtype=fp16 -w transformer:config=examples/configs/llama-3-8b,"
    "batch=1,seq=512": Expect(stdout=(r"\ngemm_tiny:dtype=fp16 ", r"\ntransformer:config=examples/configs/llama-3-8b")),
    "tensorforge predict -t examples/targets/a100-sxm4-80gb.toml": Expect(
        stdout=(r"^PREDICTED  analytical lower bound on a100-sxm4-80gb",)
    ),
    "tensorforge predict -t rtx3050-laptop --suite examples/suites/first-hour.toml --json -o prediction.json --force": (
        Expect(stderr=(r"wrote \S*prediction\.json",), files=("prediction.json",))
    ),
    "tensorforge predict -t h200 --ceilings examples/calibration/h200-2026-11-30.json": Expect(
        stdout=(
            r"^PREDICTED  calibrated lower bound on h200",
            r"ceilings \(calibrated\): DRAM 4\.26 TB/s; fp32 51\.4 TFLOP/s",
        )
    ),
    "tensorforge predict -t h200 --ceilings examples/captures/h200-default-run.json": Expect(
        stdout=(r"^PREDICTED  calibrated lower bound on h200",)
    ),
    "tensorforge run --target host-cpu -w gemm_tiny:dtype=fp32 -o first.json --force": Expect(
        stdout=(
            r"MEASURED    on .* with torch-cpu",
            r"\ngemm_tiny:dtype=fp32 ",
            r"bound violations: none|BOUND VIOLATIONS",
        ),
        stderr=(r"measuring gemm_tiny:dtype=fp32 \(1/1\)", r"^wrote (.*/)?first\.json and (.*/)?first\.summary\.txt$"),
        files=("first.json", "first.summary.txt"),
    ),
    "tensorforge predict -t host-cpu --ceilings first.json -w gemm:m=1024,n=1024,k=1024,dtype=fp32": Expect(
        stdout=(r"^PREDICTED  calibrated lower bound on host-cpu",)
    ),
    "tensorforge verify first.json": Expect(stdout=(r"first\.json: VERIFIED$", r"^integrity: holds$")),
    "tensorforge verify first.json --require-trusted": Expect(
        stdout=(r"first\.json: VERIFIED$", r"^origin: .*trusted")
    ),
    "tensorforge report first.json --force": Expect(
        stderr=(r"^wrote (.*/)?first\.report\.html$",), files=("first.report.html",)
    ),
    "tensorforge run --target h200 -o h200.json --force": Expect(
        stdout=(r"TensorForge capture  target h200", r"\nMEASURED    (on NVIDIA H200|unavailable: )"),
        files=("h200.json",),
    ),
    "tensorforge calibrate": Expect(gpu=True, stdout=(r"CALIBRATED on NVIDIA",)),
    "tensorforge verify examples/captures/h200-signed-run.json.gz --require-trusted --trusted-keys "
    "examples/keys/showcase.pub": Expect(
        stdout=(r"h200-signed-run\.json\.gz: VERIFIED$", r"^origin: signed by trusted key")
    ),
    "tensorforge gate examples/captures/h200-signed-run.json.gz examples/captures/h200-signed-rerun.json.gz": Expect(
        stdout=(r"POLICY  regression gate", r"\ngemm_large_square +PASS", r"10 PASS; exit 0")
    ),
    "tensorforge rightsize -w gemm_large_square --latency-ms 2 --capture examples/captures/h200-default-run.json "
    "--prices examples/prices.toml": Expect(
        stdout=(r"\nh200 +MEETS +1\.543 +- +every workload", r"cheapest target shown to meet it: h200 \(USD 1\.543 ")
    ),
    "tensorforge report examples/captures/host-cpu-2core.json -o host-cpu.report.html --force": Expect(
        stderr=(r"wrote \S*host-cpu\.report\.html",), files=("host-cpu.report.html",)
    ),
    "tensorforge evaluate examples/captures/h200-estimate-eval-graphfit.json.gz --rows": Expect(
        stdout=(r"^EVALUATION  examples/captures/h200-estimate-eval-graphfit\.json", r"\ngemm-large ")
    ),
    "tensorforge predict -t h200x8 -w all_reduce_1g -w transformer:config=examples/configs/llama-3-8b,seq=4096,tp=8": Expect(
        stdout=(r"\nall_reduce_1g .* \(nvlink\)", r"tp=8 ")
    ),
    "tensorforge export first.json --to mlflow --option tracking_uri=sqlite:///mlflow.db": Expect(
        stderr=(r"exported to mlflow: run \w+ in experiment",), files=("mlflow.db",)
    ),
}


def tour_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## A tour\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```\n(.*?)\n```", section, flags=re.S)
    # a line holding only a comment continues the comment of the line above
    return [line for line in block.splitlines() if command_of(line)]


def command_of(line: str) -> str:
    """The command without its comment (no tour command contains '#')."""
    return line.split("#", 1)[0].strip()


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


PASSES = (1, 2)  # the tour runs twice in one folder: a rerun must behave as the first run


@pytest.fixture(scope="module")
def tour(tmp_path_factory):
    """Every line run in order, twice, as bash runs it: {pass: {command: (line, CompletedProcess or
    skip reason)}}, both passes in the same folder and home."""
    folder = tmp_path_factory.mktemp("tour")
    shutil.copytree(ROOT / "examples", folder / "examples")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TENSORFORGE_", "MLFLOW_")) and k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR")
    }
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", TENSORFORGE_HOME=str(folder / "home"), HOME=str(folder / "home")
    )
    gpu = cuda_available()
    passes = {}
    for number in PASSES:
        results = {}
        for line in tour_lines():
            command = command_of(line)
            expect = EXPECTED.get(command)
            if expect is not None and expect.gpu and not gpu:
                results[command] = (line, "needs a CUDA device, and this machine has none")
                continue
            results[command] = (
                line,
                subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=600),
            )
        passes[number] = results
    return folder, passes


def test_every_tour_line_has_expectations_and_every_expectation_a_line():
    commands = [command_of(line) for line in tour_lines()]
    assert len(commands) == len(set(commands))
    assert sorted(set(commands) - set(EXPECTED)) == []
    assert sorted(set(EXPECTED) - set(commands)) == []


@pytest.mark.parametrize("number", PASSES, ids=lambda n: f"pass{n}")
@pytest.mark.parametrize("command", list(EXPECTED), ids=lambda c: c[12:60])
def test_tour_line(tour, command, number):
    folder, passes = tour
    line, proc = passes[number][command]
    if isinstance(proc, str):
        pytest.skip(proc)
    expect = EXPECTED[command]
    assert proc.returncode == expect.status, f"pass {number}: {line}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    for pattern in expect.stdout:
        assert re.search(pattern, proc.stdout, flags=re.M), (number, pattern, proc.stdout[-3000:])
    for pattern in expect.stderr:
        assert re.search(pattern, proc.stderr, flags=re.M), (number, pattern, proc.stderr[-3000:])
    for name in expect.files:
        assert (folder / name).exists(), name


def test_the_second_pass_gives_every_line_the_same_exit_status(tour):
    _, passes = tour
    first, second = ({c: p.returncode for c, (_, p) in passes[n].items() if not isinstance(p, str)} for n in PASSES)
    assert first == second


def test_the_tour_writes_nothing_into_the_examples(tour):
    folder, _ = tour
    copied = sorted(p.relative_to(folder / "examples") for p in (folder / "examples").rglob("*"))
    original = sorted(p.relative_to(ROOT / "examples") for p in (ROOT / "examples").rglob("*"))
    assert copied == original


def test_the_example_calibration_is_the_committed_h200_captures():
    """examples/calibration holds the CALIBRATED section of the H200 capture the README reports,
    without the capture's bookkeeping: a real device's probes, as `calibrate --json` prints them."""
    import json

    from tensorforge.files.serialize import canonical_json

    section = json.loads((ROOT / "examples" / "captures" / "h200-default-run.json").read_text(encoding="utf-8"))[
        "calibrated"
    ]
    text = (ROOT / "examples" / "calibration" / "h200-2026-11-30.json").read_text(encoding="utf-8")
    document = json.loads(text)
    assert text == canonical_json(document)
    assert document == {k: v for k, v in section.items() if k not in ("available", "reason", "reused", "stored_at")}
    assert document["label"] == "CALIBRATED" and document["device"] == "NVIDIA H200"
