"""One set of conventions across the command line, as a newcomer meets it: every option says
what it does, every command that lists or reports has --json (byte-stable whatever the
terminal), tables fit the terminal and --wide gives them whole, colour marks the labels and
verdicts only where a person sees it, `tensorforge` alone prints help, the shell completes
target and preset names, `calibrate` chooses its backend as `run` does, and what `run
--mlflow` leaves in the working folder is said and ignored by git."""

import json
import re
from pathlib import Path

import click
import pytest
from cli_in_process import run_cli
from golden import H200_RERUN, H200_RUN

from tensorforge.cli.main import make_cli

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
H200 = H200_RUN
RERUN = H200_RERUN
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Commands that write files or send captures and print no listing: no --json to give.
WRITERS = {"run", "export"}


def _commands(group: click.Group, ctx: click.Context, prefix=()):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield prefix + (name,), command
        if isinstance(command, click.Group):
            yield from _commands(command, ctx, prefix + (name,))


@pytest.fixture(scope="module")
def commands(host):
    cli = make_cli(lambda: host)
    with click.Context(cli) as ctx:
        found = dict(_commands(cli, ctx))
    assert {("predict",), ("run",), ("targets", "list"), ("report",), ("gate",)} <= set(found)
    return cli, found


def tf(*args, env=None):
    """`tensorforge ARGS` as a pipe sees it (no terminal; no COLUMNS, NO_COLOR or FORCE_COLOR
    unless `env` sets them), in this process (tests/cli_in_process.py: the console script's
    entry point, without a second of imports per command)."""
    return run_cli(*args, env=env, cwd=ROOT)


# -- every option explains itself ----------------------------------------------------------------


def test_every_option_of_every_command_has_help(commands):
    cli, found = commands
    missing = [
        f"{' '.join(path)} {param.opts[0]}"
        for path, command in [((), cli), *found.items()]
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert missing == []


def test_every_command_has_a_one_line_summary(commands):
    _, found = commands
    assert [" ".join(p) for p, c in found.items() if not (c.get_short_help_str() or "").strip()] == []


# -- --json everywhere, byte-stable ------------------------------------------------------------


def test_every_listing_and_reporting_command_has_json(commands):
    _, found = commands
    lacking = [
        " ".join(path)
        for path, command in found.items()
        if not isinstance(command, click.Group)
        and path[0] not in WRITERS
        and "--json" not in {o for p in command.params for o in getattr(p, "opts", ())}
    ]
    assert lacking == []


JSON_COMMANDS = [
    ("list-plugins", "--json"),
    ("workloads", "--json"),
    ("targets", "list", "--json"),
    ("targets", "show", "h200", "--json"),
    ("predict", "-t", "h200", "-w", "gemm_tiny", "--json"),
    ("verify", str(H200), "--json"),
    ("report", str(H200), "--json", "-o", "-"),
    ("rightsize", "-w", "gemm_large_square", "--latency-ms", "2", "--capture", str(H200), "--json"),
]


@pytest.mark.parametrize("args", JSON_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_json_is_the_same_bytes_on_any_screen(args):
    """A narrow terminal, forced colour or --wide never reach JSON."""
    outputs = [tf(*args, env=env) for env in ({}, {"COLUMNS": "40"}, {"FORCE_COLOR": "1", "COLUMNS": "60"})]
    for proc in outputs:
        assert proc.returncode == 0, proc.stderr
    assert outputs[0].stdout == outputs[1].stdout == outputs[2].stdout
    json.loads(outputs[0].stdout)
    assert "\x1b[" not in outputs[0].stdout


def test_targets_show_json_is_format_json():
    assert tf("targets", "show", "h200", "--json").stdout == tf("targets", "show", "h200", "--format", "json").stdout


def test_workloads_json_lists_kinds_parameters_and_presets():
    kinds = {k["name"]: k for k in json.loads(tf("workloads", "--json").stdout)}
    gemm = kinds["gemm"]
    assert {"m", "n", "k", "dtype"} <= set(gemm["parameters"])
    assert gemm["presets"]["gemm_tiny"] == "gemm:m=64,n=64,k=64,dtype=bf16"
    assert "gemm_tiny" in gemm["default_suite"] and "gemm_square_fp32" not in gemm["default_suite"]


def test_targets_list_json_holds_every_target_in_full():
    targets = json.loads(tf("targets", "list", "--json").stdout)
    names = [t["name"] for t in targets]
    assert names == sorted(names) and {"h200", "rtx3050-laptop", "host-cpu"} <= set(names)
    h200 = next(t for t in targets if t["name"] == "h200")
    assert h200 == json.loads(tf("targets", "show", "h200", "--json").stdout)


# -- tables fit the terminal; --wide and pipes get them whole ------------------------------------

FITTED = [
    ("predict", "-t", "h200"),
    ("predict", "-t", "h200", "-w", "transformer_decode", "--detail"),
    ("targets", "list"),
    ("list-plugins",),
    ("gate", str(H200), str(RERUN)),
    ("rightsize", "-w", "gemm_large_square", "-w", "gemm_tiny", "--latency-ms", "2", "--capture", str(H200)),
]


@pytest.mark.parametrize("args", FITTED, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("width", [80, 100])
def test_tables_fit_the_terminal_width(args, width):
    full = tf(*args)
    fitted = tf(*args, env={"COLUMNS": str(width)})
    assert fitted.returncode == full.returncode and fitted.returncode in (0, 3), fitted.stderr
    if max(len(line) for line in full.stdout.splitlines()) <= width:
        assert fitted.stdout == full.stdout  # it fits: nothing changes
        return
    too_wide = [line for line in fitted.stdout.splitlines() if len(line) > width]
    assert too_wide == []
    # nothing lost silently: cells wrap rather than being cut, and a column left out is named
    # (words up to 16 letters are never broken; longer ones may be, at the cell's width)
    words = lambda text: {w for w in (t.strip(",;:()") for t in text.split()) if 4 <= len(w) <= 16 and w.strip("-")}
    if "not shown to fit (--wide shows them): " not in fitted.stdout:
        assert words(full.stdout) <= words(fitted.stdout) | {"every", "row"}
    names = [line.split()[0] for line in full.stdout.splitlines() if line[:1].isalpha()]
    assert all(name in fitted.stdout for name in names)
    wide = tf(*args, "--wide", env={"COLUMNS": str(width)})
    assert wide.stdout == full.stdout  # --wide: the full layout


def test_a_pipe_gets_the_full_layout_and_no_colour():
    proc = tf("predict", "-t", "h200")
    assert "\x1b[" not in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.startswith("workload "))
    assert "ceilings" in header and "search" in header  # nothing lifted out


# -- colour: labels and verdicts, never with NO_COLOR ---------------------------------------------


def test_colour_marks_labels_and_verdicts_only_when_asked():
    coloured = tf("gate", str(H200), str(RERUN), env={"FORCE_COLOR": "1"})
    assert "\x1b[1;31mPOLICY\x1b[0m" in coloured.stdout
    assert "\x1b[32mPASS\x1b[0m" in coloured.stdout and "\x1b[33mNO VERDICT\x1b[0m" in coloured.stdout
    plain = tf("gate", str(H200), str(RERUN))
    assert ANSI.sub("", coloured.stdout) == plain.stdout  # colour moves nothing
    assert coloured.returncode == plain.returncode == 3
    no_colour = tf("gate", str(H200), str(RERUN), env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert no_colour.stdout == plain.stdout


def test_colour_on_the_prediction_and_the_verification():
    predict = tf("predict", "-t", "h200", "-w", "gemm_tiny", env={"FORCE_COLOR": "1"})
    assert predict.stdout.startswith("\x1b[1;34mPREDICTED\x1b[0m  analytical lower bound")
    verify = tf("verify", str(H200), env={"FORCE_COLOR": "1"})
    assert verify.stdout.rstrip().endswith("\x1b[32mVERIFIED\x1b[0m")


# -- help, completion -------------------------------------------------------------------------


def test_tensorforge_alone_prints_help_not_an_error():
    proc = tf()
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: tensorforge [OPTIONS] COMMAND [ARGS]...")
    assert "error" not in proc.stdout.lower() + proc.stderr.lower()
    assert proc.stdout == tf("--help").stdout


def _complete(line: str) -> list[str]:
    words = line.split(" ")
    proc = tf(env={"_TENSORFORGE_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)})
    assert proc.returncode == 0, proc.stderr
    return [item.split(",", 1)[1] for item in proc.stdout.splitlines()]


def test_shell_completion_offers_targets_presets_and_commands(host):
    assert _complete("tensorforge predict --target h") == sorted(n for n in host.names("targets") if n.startswith("h"))
    assert _complete("tensorforge targets show rtx") == ["rtx3050-laptop"]
    presets = _complete("tensorforge predict -t h200 -w gemm_")
    assert "gemm_large_square" in presets and "gemm_tiny" in presets
    assert "gemm:" in _complete("tensorforge rightsize -w gem")
    assert "host-cpu" in _complete("tensorforge calibrate --target ho")
    assert _complete("tensorforge ru") == ["run"]  # a plugin's command too


def test_the_readme_says_how_to_turn_completion_on():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'eval "$(_TENSORFORGE_COMPLETE=bash_source tensorforge)"' in readme


# -- calibrate chooses its backend as run does ------------------------------------------------------


def test_calibrate_without_a_gpu_says_how_to_calibrate_the_cpu(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: calibrate would calibrate it")
    proc = tf("calibrate", env={"TENSORFORGE_HOME": str(tmp_path)})
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: cannot calibrate with torch-cuda: ")
    assert line.endswith(
        "to calibrate this machine's CPU instead: tensorforge calibrate --target host-cpu (backend torch-cpu)"
    )
    assert not (tmp_path / "calibrations").exists()


def test_calibrate_target_picks_the_backend_that_measures_it(host):
    from tensorforge.cli.options import CliState
    from tensorforge.host.options import PluginOptions
    from tensorforge_measure.commands.calibrate import _calibration_backend
    from tensorforge_measure.host import ops_host

    ops = ops_host(host)
    with click.Context(click.Command("calibrate"), obj=CliState(PluginOptions(), lambda: host)):
        assert _calibration_backend(ops, "host-cpu", None) == "torch-cpu"
        assert _calibration_backend(ops, "h200", None) == "torch-cuda"
        assert _calibration_backend(ops, None, None) == "torch-cuda"
        assert _calibration_backend(ops, "host-cpu", "torch-cuda") == "torch-cuda"  # --backend wins


# -- what run --mlflow leaves behind ---------------------------------------------------------------


def test_mlflow_files_are_stated_and_ignored(commands):
    _, found = commands
    mlflow = next(p for p in found[("run",)].params if p.name == "to_mlflow")
    assert "./mlflow.db" in mlflow.help and "./mlruns/" in mlflow.help
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert "mlflow.db" in ignored and "mlruns/" in ignored
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "mlflow.db" in readme and "mlruns/" in readme


# -- words that mean one thing -----------------------------------------------------------------------


def test_the_documented_results_use_the_summary_and_report_bottleneck_words():
    """One source for the bottleneck word: the H200 table of docs/measurement.md, the run summary and the
    report all show bottleneck_cell(analytical, calibrated) for each workload."""
    from tensorforge_measure.capture.document import read_capture
    from tensorforge_measure.compare.bottleneck import bottleneck_cell
    from tensorforge_measure.report.facts import build_facts
    from tensorforge_measure.report.summary import summary_text

    capture = read_capture(H200)
    expected = {
        w.name: bottleneck_cell(w.bottleneck, capture.comparison.workloads[w.name].bottleneck)
        for w in capture.predicted.analytical.workloads
    }
    assert expected["gemm_tiny"] == "compute; calibrated: memory"  # the case that used to differ
    guide = (ROOT / "docs" / "measurement.md").read_text(encoding="utf-8")
    section = guide.split("## A worked example: the H200 default run", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    header = [c.strip() for c in rows[0]]
    column = header.index("predicted bottleneck")
    assert {r[0].strip(): r[column].strip() for r in rows[1:]} == expected
    summary = summary_text(capture)
    assert all(re.search(rf"\n{name} .*  {re.escape(cell)}  ", summary) for name, cell in expected.items())
    facts = build_facts(capture)
    assert {r["name"]: r["bottleneck"] for r in facts["workloads"]} == expected


# -- one overwrite rule for every command that writes --------------------------------------------------

# A minimal invocation of every command with --output: a new writer must be added here to pass.
WRITERS_ARGS = {
    ("predict",): ("predict", "-t", "h200", "-w", "gemm_tiny", "--json"),
    ("report",): ("report", str(H200), "--format", "md"),
    ("run",): (
        "run",
        "-t",
        "h200",
        "-w",
        "gemm_tiny",
        "--no-telemetry",
        "--cooldown",
        "0",
        "--rest",
        "0",
        "--backend",
        "torch-cuda",
    ),
}


def test_every_command_that_writes_takes_output_and_force_from_one_declaration(commands):
    _, found = commands
    writers = {
        path: command
        for path, command in found.items()
        if "--output" in {o for p in command.params for o in getattr(p, "opts", ())}
    }
    assert set(writers) == set(WRITERS_ARGS)
    for path, command in writers.items():
        params = {p.name: p for p in command.params}
        assert (
            params["force"].help.startswith("Replace an existing ")
            and "never replaced otherwise" in params["force"].help
        ), path
        assert "an existing file only with --force" in params["output"].help, path


@pytest.mark.parametrize("path", list(WRITERS_ARGS), ids=lambda p: " ".join(p))
def test_every_command_that_writes_follows_the_same_overwrite_rule(tmp_path, path):
    """An existing file is refused in one line naming it, exit 2, untouched; --force replaces it."""
    target = tmp_path / "out.file"
    target.write_text("old contents\n", encoding="utf-8")
    env = {"TENSORFORGE_HOME": str(tmp_path / "home")}
    refused = tf(*WRITERS_ARGS[path], "-o", str(target), env=env)
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert re.fullmatch(
        rf"error: \w[\w ]* {re.escape(str(target))} already exists; choose another path or pass "
        r"--force",
        line,
    ), line
    assert target.read_text(encoding="utf-8") == "old contents\n"
    forced = tf(*WRITERS_ARGS[path], "-o", str(target), "--force", env=env)
    assert forced.returncode == 0, forced.stderr
    assert target.read_text(encoding="utf-8") != "old contents\n"
