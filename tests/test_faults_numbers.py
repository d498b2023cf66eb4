"""Fault catalogue: NaN, infinities and out-of-range numbers, in options and in files.

A NaN compares false with everything, so it slipped through range checks and then decided
quietly (an endless telemetry loop, a +98% slowdown reported as PASS, every target ruled out).
Every float option and every number read from a file is finite and in range, or refused in one
line, exit 2, before any work."""

from pathlib import Path

import pytest
from fault_catalogue import Case, check, ids

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
A100 = (ROOT / "examples" / "targets" / "a100-sxm4-80gb.toml").read_text(encoding="utf-8")
BAD = ("nan", "NaN", "inf", "-inf", "1e400")

RUN = ("run", "-t", "h200", "-w", "gemm_tiny", "-o", "cap.json")
GATE = ("gate", "a.json", "b.json")  # the options are refused before the files are read
RIGHTSIZE = ("rightsize", "-w", "gemm_tiny")

OPTION_CASES = (
    [
        Case(
            f"run {option} {value} is refused",
            RUN + (option, value),
            error=rf"'{option}': '{value}' is not a finite number",
        )
        for option in ("--telemetry-seconds", "--budget", "--cooldown", "--rest")
        for value in BAD
    ]
    + [
        Case(
            f"gate {option} {value} is refused",
            GATE + (option, value),
            error=rf"'{option}': '{value}' is not a finite number",
        )
        for option in ("--threshold", "--alpha", "--max-spread")
        for value in BAD
    ]
    + [
        Case(
            f"rightsize {option} {value} is refused",
            RIGHTSIZE + (option, value),
            error=rf"'{option}': '{value}' is not a finite number",
        )
        for option in ("--latency-ms", "--throughput")
        for value in ("nan", "inf", "1e400")
    ]
    + [
        Case(
            "run --budget 0 is out of range", RUN + ("--budget", "0"), error=r"'--budget': 0(\.0)? is not in the range"
        ),
        Case("run --rest -1 is out of range", RUN + ("--rest", "-1"), error=r"'--rest': -1(\.0)? is not in the range"),
        Case(
            "gate --alpha 1 is out of range", GATE + ("--alpha", "1"), error=r"'--alpha': 1(\.0)? is not in the range"
        ),
        Case(
            "gate --threshold 0 is out of range",
            GATE + ("--threshold", "0"),
            error=r"'--threshold': 0(\.0)? is not in the range",
        ),
        Case(
            "rightsize --latency-ms 0 is out of range",
            RIGHTSIZE + ("--latency-ms", "0"),
            error=r"'--latency-ms': 0(\.0)? is not in the range",
        ),
        Case(
            "rightsize --throughput -5 is out of range",
            RIGHTSIZE + ("--throughput", "-5"),
            error=r"'--throughput': -5(\.0)? is not in the range",
        ),
    ]
)


@pytest.mark.parametrize("case", OPTION_CASES, ids=ids(OPTION_CASES))
def test_float_options(case, tmp_path):
    check(case, tmp_path)


def _target(replace_from: str, replace_to: str) -> str:
    assert replace_from in A100
    return A100.replace(replace_from, replace_to, 1)


PREDICT_A100 = ("predict", "-t", "./a100.toml", "-w", "gemm_tiny")
TARGET_FILE_CASES = [
    Case(
        f"target file {field} = {value} is refused",
        PREDICT_A100,
        files={"a100.toml": _target(original, f"{field} = {value}")},
        error=rf"a100.toml.*{field.split('.')[-1]}",
    )
    for field, original in (
        ("clock_mhz", "clock_mhz = 1410"),
        ("dram_bandwidth_bytes_per_s", "dram_bandwidth_bytes_per_s = 2039000000000.0"),
        ("fp32", "fp32 = 128  # 19.5 TFLOP/s"),
        ("bytes_per_clock", "bytes_per_clock = 128"),
        ("capacity_bytes", "capacity_bytes = 167936"),
    )
    for value in ("nan", "inf", "-inf", "-1")
]


@pytest.mark.parametrize("case", TARGET_FILE_CASES, ids=ids(TARGET_FILE_CASES))
def test_numbers_in_target_files(case, tmp_path):
    check(case, tmp_path)


def _ceilings(compute: str, dram: str) -> str:
    return f'{{"compute": {{"fp32": {compute}, "bf16": 1e15}}, "dram_bytes_per_s": {dram}}}'


CEILINGS_CASES = [
    Case(
        f"ceilings file {where} {value} is refused",
        ("predict", "-t", "h200", "-w", "gemm_tiny", "--ceilings", "c.json", "--force-ceilings"),
        files={"c.json": _ceilings(value, "4e12") if where == "compute" else _ceilings("5e13", value)},
        error=r"c\.json",
    )
    for where in ("compute", "dram")
    for value in ("NaN", "Infinity", "-Infinity", "0", "-1", '"fast"')
]


@pytest.mark.parametrize("case", CEILINGS_CASES, ids=ids(CEILINGS_CASES))
def test_numbers_in_ceilings_files(case, tmp_path):
    check(case, tmp_path)


PRICES_CASES = [
    Case(
        f"prices file price {value} is refused",
        ("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--targets", "h200", "--prices", "p.toml"),
        files={"p.toml": f"[prices]\nh200 = {value}\n"},
        # a number that is no number is refused by the reader, which names its key
        error=rf"p\.toml: the number {value} is not finite \(at prices\.h200\)$"
        if value in ("nan", "inf", "-inf")
        else r"p\.toml: price of 'h200'",
    )
    for value in ("nan", "inf", "-inf", "-1.0", '"cheap"', "true")
]


@pytest.mark.parametrize("case", PRICES_CASES, ids=ids(PRICES_CASES))
def test_numbers_in_prices_files(case, tmp_path):
    check(case, tmp_path)


SUITE_CASES = [
    Case(
        f"suite file {key} = {value} is refused",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={
            "s.toml": f'[[workload]]\nname = "w"\nkind = "gemm"\nm = 64\nn = 64\nk = 64\n{key} = {value}\n'.replace(
                f"{key} = 64\n", "", 1
            )
        },
        error=rf"s\.toml: the number {value} is not finite \(at workload\[0\]\.{key}\)$"
        if value in ("nan", "inf", "1e400")
        else rf"s\.toml, workload #1: .*\b{key}\b",
    )
    for key in ("m", "k")
    for value in ("nan", "inf", "1e400", "-3", "2.5", '"big"', "[1]")
] + [
    Case(
        f"transformer config {key} = {value} is refused",
        ("predict", "-t", "h200", "-w", "transformer:config=c.json,seq=16"),
        files={
            "c.json": '{"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2, '
            f'"num_attention_heads": 8, "{key}": {value}}}'
        },
        error=rf"{key}",
    )
    for key in ("intermediate_size", "num_key_value_heads")
    for value in ("NaN", "Infinity", "1e400", '"x"', "[2]")
]


@pytest.mark.parametrize("case", SUITE_CASES, ids=ids(SUITE_CASES))
def test_numbers_in_suites_and_configs(case, tmp_path):
    check(case, tmp_path)
