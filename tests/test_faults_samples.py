"""Fault catalogue: sealed captures whose numbers are not measurements — a sample of -1, inf or
NaN, a negative sample in another regime, an energy sample of inf — handed to every command that reads captures;
version-1 captures whose shapes the upgrade rule cannot read; a hand-edited capture handed to
`evaluate`; target files whose figures overflow; paths with a NUL byte. Each is refused in one
line (or NOT VERIFIED, exit 1, from `verify`), never a ValueError or AttributeError traceback, and
never `gate`'s exit 1, which means REGRESSION."""

import gzip
import json

import pytest
from fault_catalogue import Case, check, ids
from golden import H200_ENERGY_RUN, H200_RUN, HOST_CPU_ESTIMATE_EVAL, RTX_ON_H200

from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture.document import seal_document

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]


def _load(source):
    data = source.read_bytes()
    return json.loads(gzip.decompress(data) if source.suffix == ".gz" else data)


def _sealed(source, edit):
    """A capture file: `source` edited by `edit(doc)` and sealed again (a valid digest, as a
    forger or a broken tool would write it; no signature)."""

    def make(path):
        doc = _load(source)
        edit(doc)
        path.write_text(canonical_json(seal_document({k: v for k, v in doc.items() if k != "digest"})), "utf-8")

    return make


def _first_row(doc):
    return next(iter(doc["measured"]["workloads"].values()))


def _sample(value):
    def edit(doc):
        _first_row(doc)["samples_s"][0] = value

    return edit


def _mode_sample(doc):
    _first_row(doc)["modes"][0]["samples_s"][1] = -0.5


def _energy_sample(doc):
    _first_row(doc)["energy"]["samples_j"][0] = "inf"


SAMPLE_FAULTS = {
    "a sample of -1": (H200_RUN, _sample(-1.0), r"samples_s\[0\] is -1\.0: every sample is a finite number >= 0"),
    "a sample of inf": (H200_RUN, _sample("inf"), r"samples_s\[0\] is inf"),
    "a sample of NaN": (H200_RUN, _sample("nan"), r"samples_s\[0\] is nan"),
    "a negative sample in another regime": (H200_ENERGY_RUN, _mode_sample, r"samples_s\[1\] is -0\.5"),
    "an energy sample of inf": (H200_ENERGY_RUN, _energy_sample, r"samples_j\[0\] is inf"),
}

READERS = {
    "verify": (("verify", "c.json"), 1),
    "gate": (("gate", "c.json", "c.json"), 2),
    "report": (("report", "c.json", "-o", "-"), 2),
    "export": (("export", "c.json", "--to", "mlflow"), 2),
    "rightsize": (("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--capture", "c.json"), 2),
    "evaluate": (("evaluate", "c.json"), 2),
}


def _sample_case(fault, command):
    source, edit, why = SAMPLE_FAULTS[fault]
    argv, code = READERS[command]
    return Case(
        f"{command} of a sealed capture with {fault}",
        argv,
        files={"c.json": _sealed(source, edit)},
        code=code,
        error=why if code == 2 else None,
        out=rf"FAIL .*{why}.*NOT VERIFIED" if code == 1 else None,
    )


# the small capture through every reader; the 1 MB one (regimes, energy) through two
SAMPLE_CASES = [
    _sample_case(fault, command)
    for fault, (source, _, _) in SAMPLE_FAULTS.items()
    for command in (READERS if source == H200_RUN else ("verify", "gate"))
]


@pytest.mark.parametrize("case", SAMPLE_CASES, ids=ids(SAMPLE_CASES))
def test_bad_samples(case, tmp_path):
    check(case, tmp_path)


def _operator(doc):
    return doc["predicted"]["analytical"]["workloads"][0]["operators"][0]


def _set_mapping(value):
    def edit(doc):
        _operator(doc)["mapping"] = value

    return edit


def _set_search(doc):
    _operator(doc)["mapping"]["search"] = ["exhaustive"]


def _workloads_list(doc):
    doc["measured"]["workloads"] = list(doc["measured"]["workloads"].values())


def _fractions(doc):
    doc["diagnostic"]["windows"] = {"gemm_tiny": {"available": True, "summary": {"reason_fractions": [3]}}}


V1_FAULTS = {
    "an operator mapping that is a string": (_set_mapping("x"), r"operator #1: 'mapping' must be an object or null"),
    "an operator mapping that is a list": (_set_mapping([1]), r"'mapping' must be an object or null, got list"),
    "a mapping search that is a list": (_set_search, r"mapping 'search' must be a string, got list"),
    "measured workloads that are a list": (_workloads_list, r"'measured\.workloads' must be an object"),
    "telemetry reason fractions that are not pairs": (_fractions, r"reason_fractions' must be a list of"),
}
V1_CASES = [
    Case(
        f"{command} of a version-1 capture with {fault}",
        READERS[command][0],
        files={"c.json": _sealed(RTX_ON_H200, edit)},
        code=READERS[command][1],
        error=rf"cannot be upgraded to 2: .*{why}" if READERS[command][1] == 2 else None,
        out=rf"FAIL .*{why}" if READERS[command][1] == 1 else None,
    )
    for fault, (edit, why) in V1_FAULTS.items()
    for command in ("verify", "gate", "report")
]


@pytest.mark.parametrize("case", V1_CASES, ids=ids(V1_CASES))
def test_version_1_upgrade_checks_what_it_reads(case, tmp_path):
    check(case, tmp_path)


def _hand_edited(path):
    """A capture whose p50 was edited by hand and not re-sealed: NOT VERIFIED."""
    doc = _load(HOST_CPU_ESTIMATE_EVAL)
    _first_row(doc)["stats"]["p50"] *= 0.5
    path.write_text(canonical_json(doc), "utf-8")


EVALUATE_CASES = [
    Case(
        "evaluate refuses a hand-edited capture",
        ("evaluate", "c.json"),
        files={"c.json": _hand_edited},
        error=r"capture c\.json does not verify: .*; pass --allow-unverified to score it anyway",
    ),
    Case(
        "evaluate --allow-unverified scores it and says so",
        ("evaluate", "c.json", "--allow-unverified"),
        files={"c.json": _hand_edited},
        code=0,
        out=r"c\.json: NOT VERIFIED \(.*\), scored anyway \(--allow-unverified\)",
    ),
    Case(
        "evaluate --allow-unverified --json says verified false",
        ("evaluate", "c.json", "--allow-unverified", "--json"),
        files={"c.json": _hand_edited},
        code=0,
        out=r'"verified": false',
    ),
    Case(
        "evaluate of a verified capture says verified true",
        ("evaluate", "c.json", "--json"),
        files={"c.json": HOST_CPU_ESTIMATE_EVAL.read_bytes()},
        code=0,
        out=r'"verified": true',
    ),
]


@pytest.mark.parametrize("case", EVALUATE_CASES, ids=ids(EVALUATE_CASES))
def test_evaluate_verifies_first(case, tmp_path):
    check(case, tmp_path)


def _target(replace):
    """The shipped h200 target as a file (`targets show`), one line replaced."""

    def make(path):
        from click.testing import CliRunner

        from tensorforge.cli.main import make_cli
        from tensorforge.host.plugin_host import PluginHost

        text = CliRunner().invoke(make_cli(PluginHost), ["targets", "show", "h200"]).stdout
        old, new = replace
        assert old in text, old
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return make


TARGET_FAULTS = {
    "flops_per_clock bf16 of 1e308": (("bf16 = 4096", "bf16 = 1e308"), r"flops_per_clock\[bf16\] .* not a finite rate"),
    "units of 10^400": (("units = 132", "units = 1" + "0" * 400), r"past float range"),
    "a clock of 1e308 MHz": (("clock_mhz = 1980", "clock_mhz = 1e308"), r"not a finite rate"),
    "flops_per_clock of 1e999": (("bf16 = 4096", "bf16 = 1e999"), r"the number 1e999 is not finite"),
    "flops_per_clock of inf": (("bf16 = 4096", "bf16 = inf"), r"the number inf is not finite"),
}
TARGET_CASES = [
    Case(
        f"a target file with {fault}",
        ("predict", "-t", "./t.toml", "-w", "gemm_tiny"),
        files={"t.toml": _target(replace)},
        error=rf"target file t\.toml: .*{why}",
    )
    for fault, (replace, why) in TARGET_FAULTS.items()
]

NUL = "\0"
PATH_CASES = [
    Case(
        "a suite whose config path holds a NUL byte",
        ("predict", "-t", "h200", "--suite", "s.toml"),
        files={"s.toml": '[[workload]]\nname = "t"\nkind = "transformer"\nconfig = "a\\u0000b.json"\nseq = 16\n'},
        error=r"transformer config 'a\\x00b\.json': the path contains a NUL byte",
    ),
    Case(
        "a suite path holding a NUL byte",
        ("predict", "-t", "h200", "--suite", f"s{NUL}.toml"),
        error=r"the path contains a NUL byte",
    ),
    Case(
        "an output path holding a NUL byte",
        ("predict", "-t", "h200", "-w", "gemm_tiny", "-o", f"p{NUL}.txt"),
        error=r"'p\\x00\.txt': the path contains a NUL byte",
    ),
    Case(
        "a capture path holding a NUL byte",
        ("verify", f"c{NUL}.json"),
        error=r"the path contains a NUL byte",
    ),
    Case(
        "a target file path holding a NUL byte",
        ("predict", "-t", f"./t{NUL}.toml", "-w", "gemm_tiny"),
        error=r"the path contains a NUL byte",
    ),
]


@pytest.mark.parametrize("case", TARGET_CASES + PATH_CASES, ids=ids(TARGET_CASES + PATH_CASES))
def test_figures_and_paths(case, tmp_path):
    check(case, tmp_path)
