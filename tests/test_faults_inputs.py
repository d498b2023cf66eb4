"""Fault catalogue: documents users hand in — suites, model configs, ceilings, prices, target
files, captures — that are not what they claim: not UTF-8, a FIFO, a folder, missing, empty,
truncated, nested past any sane depth, the wrong JSON type, or a field of the wrong type.
Each ends in one line naming the file, exit 2, no traceback and no hang (a FIFO was read forever)."""

import os

import pytest
from fault_catalogue import Case, check, ids

pytestmark = pytest.mark.timeout(120)

NOT_UTF8 = b"\xff\xfe\x00bad \xc3\x28 bytes"
DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


def fifo(path):
    os.mkfifo(path)


def folder(path):
    path.mkdir()


# Each reader: the command that reads it, the file name it reads, and the extension it expects.
READERS = {
    "suite (TOML)": (("predict", "-t", "h200", "--suite", "{f}"), "s.toml"),
    "suite (JSON)": (("predict", "-t", "h200", "--suite", "{f}"), "s.json"),
    "model config": (("predict", "-t", "h200", "-w", "transformer:config={f},seq=16"), "c.json"),
    "ceilings": (("predict", "-t", "h200", "-w", "gemm_tiny", "--ceilings", "{f}", "--force-ceilings"), "c.json"),
    "prices": (("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--prices", "{f}"), "p.toml"),
    "target file": (("predict", "-t", "./{f}", "-w", "gemm_tiny"), "t.toml"),
    "capture to verify": (("verify", "{f}"), "cap.json"),
    "baseline capture": (("gate", "{f}", "{f}"), "cap.json"),
    "capture to report": (("report", "{f}", "-o", "-"), "cap.json"),
    "capture to export": (("export", "{f}", "--to", "mlflow"), "cap.json"),
}

FAULTS = {
    "not UTF-8": NOT_UTF8,
    "a FIFO": fifo,
    "a folder": folder,
    "empty": b"",
    "nested 100000 deep": None,  # JSON or TOML by the reader's extension
    "truncated": None,
}


def _content(fault, name):
    if fault == "nested 100000 deep":
        return DEEP_JSON if name.endswith(".json") else DEEP_TOML
    if fault == "truncated":
        return '{"workload": [{"name": "x"' if name.endswith(".json") else '[[workload]]\nname = "x'
    return FAULTS[fault]


def _case(reader, fault, error=None, code=2):
    argv, name = READERS[reader]
    return Case(
        f"{reader} that is {fault}",
        tuple(a.replace("{f}", name) for a in argv),
        files={name: _content(fault, name)},
        code=code,
        error=error or rf"{name.split('.')[0]}\.{name.split('.')[1]}",
    )


FILE_CASES = [_case(reader, fault) for reader in READERS for fault in FAULTS] + [
    Case(
        f"{reader} that is missing",
        tuple(a.replace("{f}", name) for a in argv),
        error=rf"{name.replace('.', chr(92) + '.')}.*(No such file|does not exist|not found)",
    )
    for reader, (argv, name) in READERS.items()
    if reader != "target file"
]


@pytest.mark.parametrize("case", FILE_CASES, ids=ids(FILE_CASES))
def test_unreadable_documents(case, tmp_path):
    check(case, tmp_path)


SHAPE_CASES = [
    Case(
        "suite whose workload name is a list",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={"s.toml": '[[workload]]\nname = ["a", "b"]\npreset = "gemm_tiny"\n'},
        error=r"s\.toml, workload #1: 'name' must be a string, got a list",
    ),
    Case(
        "suite whose workload name is a table",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={"s.toml": '[[workload]]\nname = {a = 1}\npreset = "gemm_tiny"\n'},
        error=r"'name' must be a string, got a dict",
    ),
    Case(
        "suite whose preset is a number",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={"s.toml": '[[workload]]\nname = "a"\npreset = 3\n'},
        error=r"'preset' must be a string",
    ),
    Case(
        "suite whose kind is a list",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={"s.toml": '[[workload]]\nname = "a"\nkind = ["gemm"]\n'},
        error=r"'kind' must be a string",
    ),
    Case(
        "suite JSON that is a list",
        ("predict", "-t", "h200", "--suite", "s.json"),
        files={"s.json": "[1, 2]"},
        error=r"s\.json",
    ),
    Case(
        "suite whose workload is a string",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={"s.toml": 'workload = ["gemm_tiny"]\n'},
        error=r"s\.toml, workload #1: expected a table",
    ),
    Case(
        "model config that is a JSON list",
        ("predict", "-t", "h200", "-w", "transformer:config=c.json,seq=16"),
        files={"c.json": "[1]"},
        error=r"c\.json",
    ),
    Case(
        "model config hidden_size a string",
        ("predict", "-t", "h200", "-w", "transformer:config=c.json,seq=16"),
        files={"c.json": '{"hidden_size": "big", "num_hidden_layers": 2, "num_attention_heads": 8}'},
        error=r"'hidden_size' must be a whole number, got 'big'",
    ),
    Case(
        "model config hidden_size 1e400",
        ("predict", "-t", "h200", "-w", "transformer:config=c.json,seq=16"),
        files={"c.json": '{"hidden_size": 1e400, "num_hidden_layers": 2, "num_attention_heads": 8}'},
        error=r"c\.json: the number 1e400 is not finite",  # refused by the reader
    ),
    Case(
        "model config layers NaN",
        ("predict", "-t", "h200", "-w", "transformer:config=c.json,seq=16"),
        files={"c.json": '{"hidden_size": 64, "num_hidden_layers": NaN, "num_attention_heads": 8}'},
        error=r"c\.json: NaN is not a number JSON allows",
    ),
    Case(
        "ceilings file that is a list",
        ("predict", "-t", "h200", "-w", "gemm_tiny", "--ceilings", "c.json"),
        files={"c.json": "[]"},
        error=r"c\.json: expected a JSON object",
    ),
    Case(
        "prices that are not a table",
        ("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--prices", "p.toml"),
        files={"p.toml": 'prices = "free"\n'},
        error=r"p\.toml",
    ),
    Case("capture that is a JSON list", ("verify", "cap.json"), files={"cap.json": "[]"}, error=r"cap\.json"),
    Case(
        "capture that is a JSON string", ("gate", "cap.json", "cap.json"), files={"cap.json": '"x"'}, error=r"cap\.json"
    ),
]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=ids(SHAPE_CASES))
def test_documents_of_the_wrong_shape(case, tmp_path):
    check(case, tmp_path)
