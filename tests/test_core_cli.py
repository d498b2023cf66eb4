"""The `tensorforge` command line: help, list-plugins, predict (presets, inline specs, suite
files, JSON, -o), and bad input: exit 2, exactly one 'error:' line naming the culprit, no
traceback, nothing overwritten."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import tensorforge
from tensorforge.cli.main import main, make_cli

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

SUITES = Path(__file__).resolve().parent / "fixtures" / "suites"
HF = Path(__file__).resolve().parent / "fixtures" / "hf"
TARGET = ["-t", "rtx3050-laptop"]
COLUMNS = [
    "workload",
    "FLOPs",
    "compulsory",
    "mapping",
    "compute",
    "memory (level)",
    "lower bound",
    "bottleneck",
    "ceilings",
    "search",
]


def invoke(cli, *args):
    return CliRunner().invoke(cli, list(args))


def predict_json(cli, *args) -> dict:
    result = invoke(cli, "predict", *TARGET, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- help and listing --------------------------------------------------------------------------


def _command_paths(group: click.Group, prefix=()):
    # Through list_commands: the root collects the plugins' commands when a command line starts.
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield prefix + (name,), command
        if isinstance(command, click.Group):
            yield from _command_paths(command, prefix + (name,))


def test_root_help(cli):
    result = invoke(cli, "--help")
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: ")
    for name in ("list-plugins", "predict", "targets", "workloads"):
        assert f"\n  {name} " in result.stdout
    assert invoke(cli, "-h").stdout == result.stdout


def test_version(cli):
    result = invoke(cli, "--version")
    assert result.exit_code == 0
    assert result.stdout == f"tensorforge, version {tensorforge.__version__}\n"


def test_every_subcommand_has_help(cli):
    paths = list(_command_paths(cli))
    names = {" ".join(p) for p, _ in paths}
    assert {"list-plugins", "predict", "targets", "targets list", "targets show", "workloads"} <= names
    for path, command in paths:
        result = invoke(cli, *path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert result.stdout.startswith(f"Usage: cli {' '.join(path)} "), (path, result.stdout[:80])
        # the command's own help text is shown (click rewraps it, so compare words)
        opening = " ".join((command.help or "").split()[:6])
        assert opening and opening in " ".join(result.stdout.split()), path


def test_predict_help_documents_the_options(cli):
    text = invoke(cli, "predict", "--help").stdout
    for option in (
        "--target",
        "--workload",
        "--suite",
        "--operating-point",
        "--ceilings",
        "--max-candidates",
        "--detail",
        "--json",
        "--output",
    ):
        assert option in text


def test_list_plugins_text_and_json_agree(cli):
    text = invoke(cli, "list-plugins")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["plugin", "side", "distribution", "hooks", "registered"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    rows = {line.split()[0]: line for line in lines[2:]}
    as_json = invoke(cli, "list-plugins", "--json")
    assert as_json.exit_code == 0
    data = json.loads(as_json.stdout)
    assert as_json.stdout == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert {r["name"] for r in data} == set(rows)
    for name in ("builtin-mappings", "gemm", "conv2d", "transformer", "rtx3050"):
        assert name in rows and "ERROR" not in rows[name]
    by_name = {r["name"]: r for r in data}
    assert by_name["gemm"]["distribution"] == "tf-gemm" and "tf-gemm 0.1.0" in rows["gemm"]
    assert by_name["rtx3050"]["registered"] == {"targets": ["rtx3050-laptop"]}
    assert "targets: rtx3050-laptop" in rows["rtx3050"]
    assert "register_workloads" in rows["conv2d"]


def test_targets_and_workloads_commands(cli):
    listing = invoke(cli, "targets", "list")
    assert listing.exit_code == 0
    (row,) = [l for l in listing.stdout.splitlines() if l.startswith("rtx3050-laptop")]
    assert "16 SM" in row and "4 GiB" in row and "192 GB/s" in row and "80w*, 35w" in row
    shown = json.loads(invoke(cli, "targets", "show", "rtx3050-laptop", "--format", "json").stdout)
    assert shown["pe_array"]["units"] == 16 and shown["default_operating_point"] == "80w"
    assert shown["sources"]["dram_capacity_bytes"]
    kinds = invoke(cli, "workloads").stdout
    assert "gemm: dense matrix multiply" in kinds
    assert "  * gemm_tiny: gemm:m=64,n=64,k=64,dtype=bf16" in kinds
    assert "    gemm_square_fp32: " in kinds  # a preset outside the default suite


# -- predict -----------------------------------------------------------------------------------


def test_predict_default_suite_text(cli, host):
    result = invoke(cli, "predict", *TARGET)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "PREDICTED  analytical lower bound on rtx3050-laptop @ 80w (1740 MHz)"
    # the span of the math modes; --detail lists every rate
    assert lines[1] == "ceilings (datasheet): DRAM 192 GB/s; fp32 7.13 TFLOP/s to int8 57 TFLOP/s"
    header = lines[3]
    positions = [header.index(c) for c in COLUMNS]
    assert positions == sorted(positions)
    rows = {line.split()[0]: line for line in lines[5 : 5 + len(host.default_suite())]}
    assert list(rows) == host.default_suite()
    for name in (
        "gemm_large_square",
        "gemm_tiny",
        "conv_resnet50_3x3",
        "conv_depthwise_3x3",
        "transformer_prefill",
        "transformer_decode",
    ):
        row = rows[name]
        cell = lambda col, nxt: row[header.index(col) : header.index(nxt)].strip()
        assert cell("bottleneck", "ceilings") in ("compute", "memory")
        assert cell("ceilings", "search") == "datasheet"
        assert cell("search", "ESTIMATE device") == "exhaustive"
        for col, nxt in (("ESTIMATE device", "ESTIMATE eager"),):
            value, unit = cell(col, nxt).split()  # the estimate has its own columns
            assert float(value) > 0 and unit in ("ns", "us", "ms", "s"), row
        for col, nxt in (
            ("compute", "memory (level)"),
            ("memory (level)", "lower bound"),
            ("lower bound", "bottleneck"),
        ):
            value, unit, *level = cell(col, nxt).split()
            assert float(value) > 0 and unit in ("ns", "us", "ms", "s"), row
            # the memory time names the level that set it (DRAM, shared memory, ...)
            assert level == ([] if col != "memory (level)" else [level[0]]) and (not level or level[0][0] == "(")
        assert cell("FLOPs", "compulsory").endswith("FLOP") and cell("compulsory", "mapping").endswith("B")
    assert "m256xn256xk32, 1024 tiles, 64 waves" in rows["gemm_large_square"]
    assert "ops; top: " in rows["transformer_prefill"]
    # the notes in one line; --detail prints them, with the search, in full
    assert lines[-1] == "note: the target declares no shared-cache bandwidth (--detail: all 4 notes)"
    detail = invoke(cli, "predict", *TARGET, "--detail").stdout.splitlines()
    assert "note: the bottleneck is an analytical classification; telemetry does not prove it" in detail
    assert "search: exhaustive, every mapping of every operator's space evaluated (the exact minimum)" in detail


def test_predict_default_suite_json_has_every_column(cli, host):
    data = predict_json(cli)
    assert data["label"] == "PREDICTED" and data["bound"] == "analytical"
    assert data["target"] == "rtx3050-laptop" and data["operating_point"] == "80w"
    names = [w["name"] for w in data["workloads"]]
    assert names == host.default_suite()
    assert {"gemm_large_square", "gemm_tiny"} <= set(names)
    assert any(n.startswith("conv_") for n in names) and any(n.startswith("transformer_") for n in names)
    for w in data["workloads"]:
        assert w["flops"] > 0 and w["compulsory_bytes"] > 0 and w["latency_s"] > 0
        assert w["bottleneck"] in ("compute", "memory")
        assert {o["ceiling_origin"] for o in w["operators"]} == {"datasheet"}
        for op in w["operators"]:
            assert op["latency_s"] == max(op["compute_s"], op["memory_s"])
            assert op["mapping"]["candidates"] >= 1
        assert w["latency_s"] == pytest.approx(sum(o["latency_s"] for o in w["operators"]), rel=1e-12)
        assert w["candidates"] == sum(o["mapping"]["candidates"] for o in w["operators"])


def test_predict_inline_spec(cli):
    data = predict_json(cli, "--workload", "gemm:m=8192,n=8192,k=8192,dtype=bf16", "-w", "gemm_large_square")
    inline, preset = data["workloads"]
    assert inline["name"] == "gemm:m=8192,n=8192,k=8192,dtype=bf16"
    assert inline["kind"] == "gemm"
    assert inline["flops"] == 2 * 8192**3
    assert inline["compulsory_bytes"] == 3 * 8192 * 8192 * 2
    assert inline["spec"] == preset["spec"] == "gemm:m=8192,n=8192,k=8192,dtype=bf16"
    # the same problem as the preset: the same bound
    assert {k: v for k, v in inline.items() if k != "name"} == {k: v for k, v in preset.items() if k != "name"}


def test_predict_preset_with_override(cli):
    (w,) = predict_json(cli, "-w", "gemm_tiny:dtype=fp16")["workloads"]
    assert w["name"] == "gemm_tiny:dtype=fp16"
    assert w["spec"] == "gemm:m=64,n=64,k=64,dtype=fp16"
    assert w["operators"][0]["math_mode"] == "fp16"
    assert w["compulsory_bytes"] == 3 * 64 * 64 * 2
    assert w["flops"] == 2 * 64**3


def _check_suite_result(data):
    by_name = {w["name"]: w for w in data["workloads"]}
    assert list(by_name) == ["tiny_fp16", "square_512", "conv_small", "llama_tiny_prefill"]
    assert by_name["tiny_fp16"]["spec"] == "gemm:m=64,n=64,k=64,dtype=fp16"
    assert by_name["square_512"]["flops"] == 2 * 512**3
    assert by_name["conv_small"]["kind"] == "conv2d"
    llama = by_name["llama_tiny_prefill"]
    # read from fixtures/suites/config.json, relative to the suite file, not the cwd
    assert f"config={SUITES / 'config.json'}" in llama["spec"]
    (attention,) = [o for o in llama["operators"] if o["name"] == "attention"]
    assert (attention["problem"]["heads"], attention["problem"]["kv_heads"]) == (8, 2)
    assert attention["count"] == 2  # num_hidden_layers
    assert attention["problem"]["q_len"] == 128


@pytest.mark.parametrize("suite", ["core_suite.toml", "core_suite.json"])
def test_predict_suite_files(cli, suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anywhere but the suite's folder
    _check_suite_result(predict_json(cli, "--suite", str(SUITES / suite)))


def test_toml_and_json_suites_give_identical_results(cli, monkeypatch):
    monkeypatch.chdir(SUITES.parent)  # relative suite paths work too
    toml = invoke(cli, "predict", *TARGET, "--json", "--suite", "suites/core_suite.toml")
    as_json = invoke(cli, "predict", *TARGET, "--json", "--suite", "suites/core_suite.json")
    assert toml.exit_code == as_json.exit_code == 0
    assert toml.stdout.replace(str(SUITES), "S") == as_json.stdout.replace(str(SUITES), "S")


def test_json_output_is_byte_identical_across_runs(cli):
    first = invoke(cli, "predict", *TARGET, "--json")
    second = invoke(make_cli(), "predict", *TARGET, "--json")  # a fresh host too
    assert first.exit_code == second.exit_code == 0
    assert first.stdout == second.stdout
    data = json.loads(first.stdout)
    assert first.stdout == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_json_output_is_byte_identical_across_processes(cli, tensorforge_exe):
    """Different hash seeds, different processes: still the same bytes (no set ordering leaks)."""
    args = [
        str(tensorforge_exe),
        "predict",
        *TARGET,
        "--json",
        "-w",
        "transformer_decode",
        "-w",
        "conv_resnet50_1x1",
        "-w",
        "gemm_tiny",
    ]
    procs = [
        subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONHASHSEED=seed)
        )
        for seed in ("1", "2")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    in_process = invoke(
        cli, "predict", *TARGET, "--json", "-w", "transformer_decode", "-w", "conv_resnet50_1x1", "-w", "gemm_tiny"
    ).stdout
    assert outs[0][0].decode() == outs[1][0].decode() == in_process


def test_output_file_is_written_atomically(cli, tmp_path):
    out = tmp_path / "pred.json"
    out.write_text("old contents\n")
    old_inode = out.stat().st_ino
    refused = invoke(cli, "predict", *TARGET, "-w", "gemm_tiny", "--json", "-o", str(out))
    assert refused.exit_code == 2 and out.read_text() == "old contents\n"  # not without --force
    assert refused.stderr == f"error: prediction {out} already exists; choose another path or pass --force\n"
    result = invoke(cli, "predict", *TARGET, "-w", "gemm_tiny", "--json", "-o", str(out), "--force")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == f"wrote {out}\n"
    expected = invoke(cli, "predict", *TARGET, "-w", "gemm_tiny", "--json").stdout
    assert out.read_text(encoding="utf-8") == expected
    # replaced by rename (a new inode), not rewritten in place; no temporary file left behind
    assert out.stat().st_ino != old_inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.json"]


def test_failed_write_leaves_the_existing_file_and_no_debris(cli, tmp_path, monkeypatch):
    out = tmp_path / "pred.json"
    out.write_bytes(b"precious\x00bytes")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tensorforge.files.output.os.replace", refuse)
    result = invoke(cli, "predict", *TARGET, "-w", "gemm_tiny", "--json", "-o", str(out), "--force")
    assert result.exit_code == 2
    assert result.stderr == f"error: cannot write prediction {out}: Permission denied\n"
    assert out.read_bytes() == b"precious\x00bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.json"]


def test_calibrated_ceilings_file(cli, tmp_path):
    ceilings = tmp_path / "cal.json"
    ceilings.write_text(
        json.dumps(
            {
                "label": "CALIBRATED",
                "device": "NVIDIA GeForce RTX 3050 Laptop GPU",
                "ceilings": {"compute": {"bf16": 7e12}, "dram_bytes_per_s": 150e9},
            }
        )
    )
    data = predict_json(cli, "-w", "gemm_large_square", "-w", "transformer_decode", "--ceilings", str(ceilings))
    assert data["bound"] == "calibrated"
    assert data["ceilings"]["compute"]["bf16"] == 7e12
    assert data["ceilings"]["compute"]["fp32"] == 16 * 256 * 1740e6  # datasheet fill-in
    assert data["ceilings"]["compute_origin"]["fp32"] == "datasheet"
    gemm, decode = data["workloads"]
    assert gemm["compute_s"] == pytest.approx(2 * 8192**3 / 7e12, rel=0.05)
    assert {o["ceiling_origin"] for o in decode["operators"]} == {"calibrated", "datasheet"}
    text = invoke(cli, "predict", *TARGET, "-w", "transformer_decode", "--ceilings", str(ceilings)).stdout
    assert text.startswith("PREDICTED  calibrated lower bound on rtx3050-laptop")
    assert "calibrated/datasheet" in text


# -- bad input ---------------------------------------------------------------------------------


def _files(tmp: Path) -> None:
    (tmp / "bad.toml").write_text('[[workload]\nname = "x"\n')
    (tmp / "bad.json").write_text('{"workload": [{"name": "x", "preset": "gemm_tiny"},')
    (tmp / "nowl.toml").write_text('title = "no workloads here"\n')
    (tmp / "nowl.json").write_text('{"workloads": [{"preset": "gemm_tiny"}]}')
    (tmp / "nokind.toml").write_text('[[workload]]\nname = "x"\nm = 8\n')
    (tmp / "hf").mkdir()
    (tmp / "hf" / "config.json").write_text('{"hidden_size": 512, "num_hidden_layers": 2,,}')
    (tmp / "hfsuite.toml").write_text('[[workload]]\nname = "t"\nkind = "transformer"\nconfig = "hf/config.json"\n')
    (tmp / "nohidden.json").write_text('{"num_hidden_layers": 2, "num_attention_heads": 4}')
    (tmp / "cal.json").write_text('{"compute": {"bf16": 1e12}, "dram_bytes_per_s": }')


W = ["predict", *TARGET, "-w"]

# (argv, substrings the one error line must contain); {tmp} is the test's folder
BAD_INPUT = {
    "negative dim": (W + ["gemm:m=-8,n=8,k=8"], ["gemm: m must be >= 1, got -8"]),
    "zero dim": (W + ["gemm:m=8,n=0,k=8"], ["gemm: n must be >= 1, got 0"]),
    "non-integer dim": (W + ["gemm:m=8,n=8,k=1.5"], ["gemm: k must be an integer, got '1.5'"]),
    "non-numeric dim": (W + ["gemm:m=eight,n=8,k=8"], ["gemm: m must be an integer, got 'eight'"]),
    "conv zero channels": (W + ["conv2d:n=1,c=0,h=8,w=8,k=8"], ["conv2d: c must be >= 1, got 0"]),
    "unknown dtype": (W + ["gemm:m=8,n=8,k=8,dtype=fp13"], ["unknown dtype 'fp13'", "fp32"]),
    "unknown math mode": (W + ["gemm:m=8,n=8,k=8,math_mode=tf33"], ["unknown math mode 'tf33' (did you mean 'tf32'?)"]),
    "tf32 on bf16": (
        W + ["gemm:m=8,n=8,k=8,dtype=bf16,math_mode=tf32"],
        ["math mode 'tf32' cannot execute bf16 operands; allowed: bf16"],
    ),
    "mode the target lacks": (W + ["gemm:m=8,n=8,k=8,dtype=fp8"], ["target 'rtx3050-laptop' declares no fp8 rate"]),
    "unknown target": (
        ["predict", "-t", "rtx3050", "-w", "gemm_tiny"],
        ["unknown target 'rtx3050' (did you mean 'rtx3050-laptop'?)"],
    ),
    "unknown operating point": (
        W + ["gemm_tiny", "-p", "100w"],
        ["unknown operating point for target 'rtx3050-laptop' '100w'", "80w"],
    ),
    "unknown workload": (W + ["gemm_tinyy"], ["unknown workload or preset 'gemm_tinyy' (did you mean 'gemm_tiny'?)"]),
    "unknown parameter": (W + ["gemm:m=8,n=8,k=8,kk=8"], ["gemm: unknown parameter 'kk' (did you mean 'k'?)"]),
    "unknown preset override": (
        W + ["gemm_tiny:dtyp=fp16"],
        ["gemm: unknown parameter 'dtyp' (did you mean 'dtype'?)"],
    ),
    "not key=value": (W + ["gemm:m"], ["gemm:m: expected key=value, got 'm'"]),
    "bad boolean": (
        W + ["gemm:m=8,n=8,k=8,transpose_a=maybe"],
        ["gemm: transpose_a must be true or false, got 'maybe'"],
    ),
    "workload twice": (W + ["gemm_tiny", "-w", "gemm_tiny"], ["workload 'gemm_tiny' given twice"]),
    "malformed toml": (
        ["predict", *TARGET, "--suite", "{tmp}/bad.toml"],
        ["suite file {tmp}/bad.toml: not valid TOML"],
    ),
    "malformed json suite": (
        ["predict", *TARGET, "--suite", "{tmp}/bad.json"],
        ["suite file {tmp}/bad.json: not valid JSON"],
    ),
    "toml suite without workload": (
        ["predict", *TARGET, "--suite", "{tmp}/nowl.toml"],
        ["suite file {tmp}/nowl.toml: expected a non-empty list 'workload'"],
    ),
    "json suite without workload": (
        ["predict", *TARGET, "--suite", "{tmp}/nowl.json"],
        ["suite file {tmp}/nowl.json: expected a non-empty list 'workload'"],
    ),
    "suite entry without kind": (
        ["predict", *TARGET, "--suite", "{tmp}/nokind.toml"],
        ["suite file {tmp}/nokind.toml, workload #1: needs 'preset' or 'kind'"],
    ),
    "missing suite file": (
        ["predict", *TARGET, "--suite", "{tmp}/absent.toml"],
        ["cannot read suite file {tmp}/absent.toml"],
    ),
    "malformed hf config": (
        ["predict", *TARGET, "--suite", "{tmp}/hfsuite.toml"],
        ["transformer config {tmp}/hf/config.json: not valid JSON"],
    ),
    "hf config missing hidden": (
        W + ["transformer:config={tmp}/nohidden.json"],
        ["transformer config {tmp}/nohidden.json: missing 'hidden_size'"],
    ),
    "conv filter does not fit": (
        W + ["conv2d:n=1,c=4,h=2,w=2,k=4,r=3,s=3"],
        ["conv2d: the 3x3 filter (dilation 1) does not fit the 2x2 input"],
    ),
    "conv dilated filter does not fit": (
        W + ["conv2d:n=1,c=4,h=8,w=8,k=4,r=3,s=3,dilation=4"],
        ["conv2d: the 3x3 filter (dilation 4) does not fit"],
    ),
    "groups not dividing c": (
        W + ["conv2d:n=1,c=6,h=8,w=8,k=8,groups=4"],
        ["conv2d: groups=4 must divide c=6 and k=8"],
    ),
    "kv_heads not dividing heads": (
        W + ["transformer:hidden=64,layers=1,heads=4,kv_heads=3"],
        ["transformer: kv_heads=3 must divide heads=4"],
    ),
    "decode without context": (
        W + ["transformer:hidden=64,layers=1,heads=4,phase=decode"],
        ["transformer: phase=decode needs context >= 1"],
    ),
    "malformed ceilings": (
        W + ["gemm_tiny", "--ceilings", "{tmp}/cal.json"],
        ["ceilings file {tmp}/cal.json: not valid JSON"],
    ),
    "missing target option": (["predict", "-w", "gemm_tiny"], ["Missing option '--target'"]),
    "max candidates zero": (W + ["gemm_tiny", "--max-candidates", "0"], ["--max-candidates", "0"]),
    "unknown option": (W + ["gemm_tiny", "--bogus"], ["No such option", "--bogus"]),
    "unknown command": (["frobnicate"], ["No such command 'frobnicate'"]),
    "targets show unknown": (["targets", "show", "h100-sxm"], ["unknown target 'h100-sxm'"]),
}


def _expand(items, tmp):
    return [s.replace("{tmp}", str(tmp)) for s in items]


def _check_one_error_line(err: str, needles):
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_one_error_line_exit_2_and_overwrites_nothing(case, tmp_path, capsys):
    _files(tmp_path)
    argv, needles = BAD_INPUT[case]
    argv, needles = _expand(argv, tmp_path), _expand(needles, tmp_path)
    out = tmp_path / "existing.json"
    out.write_bytes(b'{"keep": "me"}\n')
    before = sorted(p.name for p in tmp_path.rglob("*"))
    if argv[0] == "predict":
        argv = argv + ["--json", "-o", str(out), "--force"]  # replaceable, yet kept on bad input
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    _check_one_error_line(captured.err, needles)
    assert out.read_bytes() == b'{"keep": "me"}\n'
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_main_succeeds_with_exit_status_zero(capsys):
    assert main(["predict", *TARGET, "-w", "gemm_tiny", "--json"]) is None
    assert json.loads(capsys.readouterr().out)["workloads"][0]["name"] == "gemm_tiny"


# A sample in real processes (main() in-process above covers every case).
SUBPROCESS_CASES = ["negative dim", "unknown target", "malformed toml", "malformed hf config", "missing target option"]


def test_console_script_bad_input_is_one_line_without_traceback(tensorforge_exe, tmp_path):
    """The installed `tensorforge` script, in real processes (run side by side for speed)."""
    _files(tmp_path)
    out = tmp_path / "existing.json"
    out.write_bytes(b"keep\n")
    procs = {}
    for case in SUBPROCESS_CASES:
        argv = _expand(BAD_INPUT[case][0], tmp_path)
        if case == "malformed hf config":
            argv += ["-o", str(out), "--force"]
        procs[case] = subprocess.Popen(
            [str(tensorforge_exe), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path)
        )
    for case, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 2, (case, stderr)
        assert stdout == "", case
        _check_one_error_line(stderr, _expand(BAD_INPUT[case][1], tmp_path))
    assert out.read_bytes() == b"keep\n"


def test_console_script_help_and_success(tensorforge_exe):
    assert shutil.which("tensorforge", path=str(Path(sys.executable).parent)) == str(tensorforge_exe)
    proc = subprocess.run([str(tensorforge_exe), "--help"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "predict" in proc.stdout and proc.stderr == ""
