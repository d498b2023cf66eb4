"""Hardware targets in a TOML file: `targets show NAME` writes one, `--target FILE` reads it
back, predictions from the copy are byte-identical, and every mistake in a file is one line
naming the field, the value and what was expected (exit 2, nothing overwritten)."""

import json
import math
import tomllib

import pytest
from click.testing import CliRunner

from tensorforge.cli.main import main
from tensorforge.files.serialize import to_data
from tensorforge.files.tomlwrite import value as toml_value
from tensorforge.hardware.target_dump import dump_target
from tensorforge.hardware.target_file import load_target_file, looks_like_path, target_from_toml
from tensorforge.workloads.collectives import CollectiveProblem
from tensorforge.workloads.suite import resolve

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

MINIMAL = """\
name = "my-npu"
dram_capacity_bytes = 8589934592

[pe_array]
units = 256
unit_name = "PE"
flops_per_clock = { fp32 = 2, bf16 = 16 }

[[sram]]
name = "spad"
capacity_bytes = 65536
scope = "per_unit"

[[operating_points]]
name = "base"
clock_mhz = 800
dram_bandwidth_bytes_per_s = 25.6e9
"""


def run(cli, *args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def shown(cli, name) -> str:
    result = run(cli, "targets", "show", name)
    assert result.exit_code == 0, result.output
    return result.stdout


def predict_json(cli, target, *args) -> str:
    result = run(cli, "predict", "-t", target, "--json", *args)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


# -- round trip ----------------------------------------------------------------------------------


def runnable_default_suite(host, target):
    """-w options for the presets whose math modes the target declares: the default suite's, and
    where fewer than six of those run (the host CPU without native bf16: an AVX2-only EPYC runs
    fp32 alone), every one-device preset's (a collective needs a system target)."""
    chosen = _runnable(host, target, host.default_suite())
    return chosen if len(chosen) >= 2 * 6 else _runnable(host, target, host.preset_names())


def _runnable(host, target, presets):
    chosen = []
    for preset in presets:
        ((workload, kind),) = resolve(host, (preset,))
        ops = kind.operators(workload.params)
        if any(isinstance(op.problem, CollectiveProblem) for op in ops):
            continue
        if all(op.problem.math_mode in target.pe_array.flops_per_clock for op in ops):
            chosen += ["-w", preset]
    return chosen


def test_every_installed_target_round_trips_to_a_byte_identical_prediction(cli, host, tmp_path):
    assert {"h200", "rtx3050-laptop"} <= set(host.names("targets"))
    for name in host.names("targets"):
        path = tmp_path / f"{name}.toml"
        path.write_text(shown(cli, name), encoding="utf-8")
        assert load_target_file(path) == host.target(name)
        workloads = runnable_default_suite(host, host.target(name))
        # the GPU targets run the whole default suite; the host CPU's declared modes depend on the
        # machine (fp32 alone on an AVX2-only CPU: one preset)
        assert len(workloads) >= (2 if name.startswith("host-cpu") else 12), name
        for point in host.target(name).operating_points:
            args = ("-p", point.name, "--detail", *workloads)
            assert predict_json(cli, str(path), *args) == predict_json(cli, name, *args), (name, point.name)


def test_a_renamed_copy_differs_only_in_the_name(cli, tmp_path):
    text = shown(cli, "h200").replace('name = "h200"', 'name = "my-h200"', 1)
    path = tmp_path / "copy.toml"
    path.write_text(text, encoding="utf-8")
    original = predict_json(cli, "h200", "-w", "gemm_tiny", "-w", "transformer_decode")
    copy = predict_json(cli, str(path), "-w", "gemm_tiny", "-w", "transformer_decode")
    assert copy != original
    assert copy.replace('"my-h200', '"h200') == original


def test_show_accepts_a_file_and_its_output_is_a_fixed_point(cli, tmp_path):
    first = tmp_path / "a.toml"
    first.write_text(shown(cli, "rtx3050-laptop"), encoding="utf-8")
    again = shown(cli, str(first))
    assert again.splitlines()[0] == f"# TensorForge hardware target 'rtx3050-laptop', read from {first}"
    assert again.splitlines()[1:] == shown(cli, "rtx3050-laptop").splitlines()[1:]
    assert shown(cli, "rtx3050-laptop").splitlines()[0] == (
        "# TensorForge hardware target 'rtx3050-laptop', registered by plugin 'rtx3050' (tf-rtx3050 0.1.0)"
    )


def test_show_json_is_the_same_description_as_data(cli, host):
    result = run(cli, "targets", "show", "h200", "--format", "json")
    assert json.loads(result.stdout) == to_data(host.target("h200"))
    assert tomllib.loads(shown(cli, "h200"))["pe_array"]["flops_per_clock"]["bf16"] == 4096


def test_the_written_file_explains_itself(cli):
    text = shown(cli, "h200")
    assert "capacity_bytes = 233472  # 228 KiB" in text
    assert "fp32 = 256  # 66.9 TFLOP/s" in text
    assert "# bytes_per_clock: not published" in text  # None is a comment, not a value
    assert '"pe_array.units" = "132 SMs' in text


def test_a_hand_written_minimal_file(cli, tmp_path):
    path = tmp_path / "my-npu.toml"
    path.write_text(MINIMAL, encoding="utf-8")
    target = load_target_file(path)
    assert (target.description, target.default_operating_point, target.sram[0].bytes_per_clock) == ("", "base", None)
    assert target.sources == {} and target.notes == () and target.device_names == ()
    pred = json.loads(predict_json(cli, str(path), "-w", "gemm_large_square"))
    assert pred["target"] == "my-npu" and pred["ceilings"]["compute"]["bf16"] == 256 * 16 * 800e6
    # the file's order of math modes is kept, so showing it changes nothing but comments
    assert target_from_toml(shown(cli, str(path)), "again") == target


def test_sweeping_the_pe_array_in_files(cli, tmp_path):
    """What an architect does: vary one figure, compare lower bounds."""
    latencies = []
    for units in (64, 128, 256, 512):
        path = tmp_path / f"npu-{units}.toml"
        path.write_text(MINIMAL.replace("units = 256", f"units = {units}"), encoding="utf-8")
        pred = json.loads(predict_json(cli, str(path), "-w", "gemm:m=4096,n=4096,k=4096,dtype=bf16"))
        latencies.append(pred["workloads"][0]["latency_s"])
    assert latencies == sorted(latencies, reverse=True) and latencies[0] > latencies[-1]


@pytest.mark.parametrize(
    "text, is_path",
    [
        ("h200", False),
        ("rtx3050-laptop", False),
        ("./x", True),
        ("npu.toml", True),
        ("NPU.TOML", True),
        ("dir/h200", True),
    ],
)
def test_names_and_paths(text, is_path):
    assert looks_like_path(text) is is_path


def test_toml_values_read_back_as_the_same_python_values():
    for item in (
        0,
        -3,
        2**62,
        1.5,
        4.8e12,
        1e16,
        1.5e-07,
        0.1,
        5e-324,
        "plain",
        'q"uo\\te',
        "tab\tnl\n",
        "\x00\x1f\x7f",
        "ünïcødé µs",
        True,
        ["a", "b"],
        [],
    ):
        assert tomllib.loads(f"x = {toml_value(item)}")["x"] == item, item
    assert math.isinf(tomllib.loads(f"x = {toml_value(float('inf'))}")["x"])


# -- bad files -----------------------------------------------------------------------------------

# case -> (replace this, with this) in the shown rtx3050-laptop file, and the expected message
# after "target file PATH: ".
BAD = {
    "negative units": (("units = 16", "units = -4"), "field 'pe_array.units' = -4: expected an integer >= 1"),
    "fractional units": (("units = 16", "units = 4.5"), "field 'pe_array.units' = 4.5: expected an integer >= 1"),
    "units as text": (("units = 16", 'units = "16"'), "field 'pe_array.units' = \"16\": expected an integer >= 1"),
    "units as bool": (("units = 16", "units = true"), "field 'pe_array.units' = true: expected an integer >= 1"),
    "misspelt field": (
        ("units = 16", "unit = 16"),
        "unknown field 'pe_array.unit' (did you mean 'units'?); known here: units, unit_name, "
        "flops_per_clock, vector_flops_per_clock, special_per_clock",
    ),
    "missing field": (("units = 16\n", ""), "field 'pe_array.units' is missing: expected an integer >= 1"),
    "unknown math mode": (
        ("int8 = 2048", "fp4 = 2048"),
        "unknown field 'pe_array.flops_per_clock.fp4' (did you mean 'fp8'?); known here: "
        "fp32, tf32, fp16, fp16_acc16, bf16, fp8, int8",
    ),
    "zero rate": (("bf16 = 512", "bf16 = 0"), "field 'pe_array.flops_per_clock.bf16' = 0: expected a number > 0"),
    "no fp32 rate": (
        ("fp32 = 256  # 7.13 TFLOP/s\n", ""),
        "field 'pe_array.flops_per_clock' = {tf32 = 256, fp16 = 512, fp16_acc16 = 1024, bf16 = 512, i...: "
        "expected a table of math mode = FLOPs per clock per unit that includes fp32 (vector work runs there)",
    ),
    "bad scope": (
        ('scope = "shared"', 'scope = "global"'),
        "field 'sram[1].scope' = \"global\": expected one of per_unit, shared",
    ),
    "zero capacity": (
        ("capacity_bytes = 102400", "capacity_bytes = 0"),
        "field 'sram[0].capacity_bytes' = 0: expected an integer >= 1",
    ),
    "no per-unit level": (
        ('scope = "per_unit"', 'scope = "shared"'),
        'field \'sram\' = ["shared_memory", "l2"]: expected at least one level with '
        'scope = "per_unit" (where tiles are staged)',
    ),
    "duplicate level": (
        ('name = "l2"', 'name = "shared_memory"'),
        "field 'sram[1].name' = \"shared_memory\": expected a name no other sram level uses",
    ),
    "level bandwidth zero": (
        ("bytes_per_clock = 128", "bytes_per_clock = 0.0"),
        "field 'sram[0].bytes_per_clock' = 0.0: expected a number > 0 (omit it when unknown)",
    ),
    "negative bandwidth": (
        (
            'dram_bandwidth_bytes_per_s = 192000000000.0  # 192 GB/s\ndescription = "top',
            'dram_bandwidth_bytes_per_s = -1.0\ndescription = "top',
        ),
        "field 'operating_points[0].dram_bandwidth_bytes_per_s' = -1.0: expected a number > 0",
    ),
    "infinite clock": (
        ("clock_mhz = 1057", "clock_mhz = inf"),
        # refused by the reader (no document number is infinite), which names the field
        "the number inf is not finite (at operating_points[1].clock_mhz)",
    ),
    "unknown default point": (
        ('default_operating_point = "80w"', 'default_operating_point = "turbo"'),
        "field 'default_operating_point' = \"turbo\": expected one of the operating_points: 80w, 35w",
    ),
    "upper-case name": (
        ('name = "rtx3050-laptop"', 'name = "My-GPU"'),
        "field 'name' = \"My-GPU\": expected a non-empty lowercase name without surrounding spaces",
    ),
    "sram not tables": (
        ('[[sram]]\nname = "l2"', '[[srams]]\nname = "l2"'),
        "unknown field 'srams' (did you mean 'sram'?); known here: name, description, pe_array, "
        "sram, dram_capacity_bytes, operating_points, default_operating_point, sources, notes, "
        "device_names, architecture, estimate, devices, interconnect, power",
    ),
    "notes not strings": (
        ("notes = [", "notes = [1, "),
        "field 'notes' = [1, \"dense peaks only; the laptop's power limit and therm...: expected a list of strings",
    ),
    "source not text": (
        ('dram_capacity_bytes = "4 GB', 'dram_capacity_bytes = 4\nx = "4 GB'),
        "field 'sources.dram_capacity_bytes' = 4: expected a string",
    ),
    "sources not a table": (
        ("[sources]", "[[sources]]"),
        'field \'sources\' = [{"pe_array.units" = "16 SMs: 2048 CUDA cores / 128 per G...: '
        "expected a table of figure = where it comes from",
    ),
    "dram capacity a list": (
        ("dram_capacity_bytes = 4294967296", "dram_capacity_bytes = [4294967296]"),
        "field 'dram_capacity_bytes' = [4294967296]: expected an integer >= 1",
    ),
    "not toml": (("units = 16", "units = = 16"), "not valid TOML: Invalid value (at line 13, column 9)"),
}


@pytest.fixture(scope="module")
def rtx_text(host):
    return dump_target(host.target("rtx3050-laptop"))


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_mistake_is_one_line_naming_field_value_and_expectation(case, rtx_text, tmp_path, capsys):
    (old, new), message = BAD[case]
    assert rtx_text.count(old) >= 1, case
    path = tmp_path / "target.toml"
    path.write_text(rtx_text.replace(old, new, 1), encoding="utf-8")
    out = tmp_path / "prediction.json"
    out.write_text("keep\n")
    with pytest.raises(SystemExit) as info:
        main(["predict", "--target", str(path), "-w", "gemm_tiny", "--json", "-o", str(out), "--force"])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err == f"error: target file {path}: {message}\n"
    assert out.read_text() == "keep\n"
    with pytest.raises(SystemExit) as info:  # the same line from `targets show FILE`
        main(["targets", "show", str(path)])
    assert info.value.code == 2
    assert capsys.readouterr().err == f"error: target file {path}: {message}\n"


def test_missing_file_and_not_utf8(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["predict", "-t", str(tmp_path / "absent.toml"), "-w", "gemm_tiny"])
    assert info.value.code == 2
    assert (
        capsys.readouterr().err
        == f"error: cannot read target file {tmp_path / 'absent.toml'}: No such file or directory\n"
    )
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b'name = "\xff"\n')
    with pytest.raises(SystemExit) as info:
        main(["predict", "-t", str(binary), "-w", "gemm_tiny"])
    assert info.value.code == 2
    assert capsys.readouterr().err == f"error: target file {binary}: not UTF-8 text (invalid start byte at byte 8)\n"


def test_an_unknown_name_is_still_an_unknown_target(capsys):
    with pytest.raises(SystemExit) as info:
        main(["predict", "-t", "h100", "-w", "gemm_tiny"])
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith("error: unknown target 'h100' (did you mean 'h200'?)")
