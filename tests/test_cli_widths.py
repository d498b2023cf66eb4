"""Every command's text for people at 80 and 120 columns: no line wider than the screen, and no
token (a number, a spec, a name) cut in two by wrapping. A token here is what lies between
spaces, or between the commas and '+' signs of a spec, the only places a line may break.

Each output is compared with the same command on a screen too wide to wrap anything: what the
narrow screen shows may be fewer columns (named once above the table) and more lines, but every
token on it must be a whole token of the wide one. `run`'s text is its summary of a capture,
rendered here from the golden captures and from a capture made without a device, in-process."""

import re

import pytest
from click.testing import CliRunner
from golden import H200_ESTIMATE_EVAL, H200_RERUN, H200_RUN, HOST_CPU_RUN, RTX_ON_H200

from tensorforge.cli.screen import Screen
from tensorforge_measure.api import MeasurementBackend, Unavailable
from tensorforge_measure.capture.document import read_capture
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.report.summary import summary_text
from tensorforge_measure.run.runner import Run, RunOptions

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

WIDTHS = (80, 120)
UNLIMITED = 10_000
# what only a narrow screen says: the columns lifted out of a table, and those left out
NARROW_WORDS = {"every", "row", "not", "shown", "to", "fit", "--wide", "shows", "them"}

COMMANDS = {
    "workloads": ["workloads"],
    "targets list": ["targets", "list"],
    "list-plugins": ["list-plugins"],
    "predict": ["predict", "-t", "h200"],
    "predict --detail": ["predict", "-t", "h200", "-w", "transformer_decode", "--detail"],
    "gate": ["gate", str(H200_RUN), str(H200_RERUN)],
    "evaluate": ["evaluate", str(H200_ESTIMATE_EVAL), "--rows"],
    "rightsize": ["rightsize", "-w", "gemm_large_square", "--latency-ms", "2", "--capture", str(H200_RUN)],
}


def tokens(text: str) -> set[str]:
    """The whole tokens of `text`, without the punctuation a sentence puts around them."""
    pieces = (p for word in text.split() for p in re.split(r"(?<=,)|(?<=\+)(?=[A-Za-z_(])", word))
    return {t for t in (p.strip(",;:()'`*.") for p in pieces) if t.strip("-")}  # a table's rule is no token


def check(narrow: str, wide: str, width: int) -> None:
    too_wide = [line for line in narrow.splitlines() if len(line) > width]
    assert too_wide == [], f"{len(too_wide)} lines wider than {width}"
    broken = tokens(narrow) - tokens(wide) - NARROW_WORDS
    assert broken == set(), f"tokens cut in two at {width} columns: {sorted(broken)[:10]}"


def at(cli, args: list[str], width: int) -> str:
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(cli, args)
    assert result.exit_code in (0, 3), result.output
    return result.stdout


@pytest.fixture(scope="module")
def unlimited() -> dict[str, str]:
    """Each command's wide output, made once for both widths (the gate's takes a second)."""
    return {}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("width", WIDTHS)
def test_commands_break_no_token(cli, unlimited, name, width):
    args = COMMANDS[name]
    if name not in unlimited:
        unlimited[name] = at(cli, args, UNLIMITED)
    check(at(cli, args, width), unlimited[name], width)


def test_predict_on_h200_fits_one_screen_at_80_columns(cli):
    text = at(cli, ["predict", "--target", "h200"], 80)
    assert len(text.splitlines()) <= 25, text
    detail = at(cli, ["predict", "--target", "h200", "--detail"], 80)
    # --detail keeps what the short form leaves out: every note and the whole basis
    assert "note: the bottleneck is an analytical classification" in detail.replace("\n  ", " ")
    assert "mapping candidates evaluated" in detail


class _NoDevice(MeasurementBackend):
    name = "no-device"
    description = "a backend with nothing to open, as torch-cuda on a machine without a GPU"

    def open(self, device_index=0):
        raise Unavailable("no CUDA device: none in this test")


class _Plugin:
    @hookimpl
    def tensorforge_measure_register_backends(self, register):
        register(_NoDevice())


@pytest.fixture(scope="module")
def no_device(host):
    ops = OpsHost(load_entry_points=False, extra_plugins=(("no-device", _Plugin()),))
    options = RunOptions(target="rtx3050-laptop", specs=("gemm_tiny", "conv_resnet50_1x1"), backend="no-device")
    return Run(host, ops, options, progress=lambda line: None).execute()


@pytest.mark.parametrize("path", [H200_RUN, HOST_CPU_RUN, RTX_ON_H200], ids=lambda p: p.name)
@pytest.mark.parametrize("width", WIDTHS)
def test_run_summaries_break_no_token(path, width):
    capture = read_capture(path)
    check(summary_text(capture, Screen(width)), summary_text(capture, Screen(UNLIMITED)), width)


@pytest.mark.parametrize("width", WIDTHS)
def test_without_a_device_one_reason_and_one_next_step(no_device, width):
    step = "next: `tensorforge run --target host-cpu` measures this machine's CPU"
    text = summary_text(no_device, Screen(width), step)
    check(text, summary_text(no_device, Screen(UNLIMITED), step), width)
    flat = text.replace("\n  ", " ")
    assert flat.count("no CUDA device: none in this test") == 1
    assert flat.count("next: ") == 1 and step in flat
    # the file beside the capture keeps the full record, section by section
    assert summary_text(no_device).count("no CUDA device: none in this test") >= 3
