"""Every command's text for people at 80 and 120 columns: no line wider than the screen, and no
token (a number, a spec, a name) cut in two by wrapping. A token here is what lies between
spaces, or between the commas and '+' signs of a spec, the only places a line may break.

Each output is compared with the same command on a screen too wide to wrap anything: what the
narrow screen shows may be fewer columns (named once above the table) and more lines, but every
token on it must be a whole token of the wide one. `run`'s text is its summary of a capture,
rendered here from the golden captures and from a capture made without a device, in-process."""

import contextlib
import importlib
import io
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


# The costly commands (the capture's verification, the gate's bootstrap intervals) run once:
# their renderer, the function given the screen, is recorded there and called again at each
# width with the same inputs, which is what the command would print at that width.
RENDERERS = {
    "gate": ("tensorforge_measure.commands.gate", "_print_gate"),
    "evaluate": ("tensorforge_measure.commands.evaluate", "evaluation_text"),
}


def rendered(cli, name: str) -> dict[int, str]:
    """{width: text} of command `name` at each width and unlimited, from one run of it."""
    module_name, attribute = RENDERERS[name]
    module = importlib.import_module(module_name)
    renderer = getattr(module, attribute)
    calls = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return renderer(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, attribute, record)
        wide = at(cli, COMMANDS[name], UNLIMITED)
    ((args, kwargs),) = calls

    def render(width: int) -> str:
        screen = Screen(width)
        again = [screen if isinstance(a, Screen) else a for a in args]
        given = {k: screen if isinstance(v, Screen) else v for k, v in kwargs.items()}
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            text = renderer(*again, **given)
        return text if isinstance(text, str) else printed.getvalue()

    assert render(UNLIMITED) == wide, "the recorded renderer no longer makes all the command prints"
    return {UNLIMITED: wide, **{width: render(width) for width in WIDTHS}}


@pytest.fixture(scope="module")
def outputs() -> dict[str, dict[int, str]]:
    """Each command's text by width, made once for both widths and the unlimited reference."""
    return {}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("width", WIDTHS)
def test_commands_break_no_token(cli, outputs, name, width):
    if name not in outputs:
        outputs[name] = rendered(cli, name) if name in RENDERERS else {UNLIMITED: at(cli, COMMANDS[name], UNLIMITED)}
    texts = outputs[name]
    if width not in texts:
        texts[width] = at(cli, COMMANDS[name], width)
    check(texts[width], texts[UNLIMITED], width)


def test_predict_on_h200_fits_one_screen_at_80_columns(cli):
    text = at(cli, ["predict", "--target", "h200"], 80)
    assert len(text.splitlines()) <= 25, text
    detail = at(cli, ["predict", "--target", "h200", "--detail"], 80)
    # --detail keeps what the short form leaves out: every note and the whole basis
    assert "note: the bottleneck is an analytical classification" in detail.replace("\n  ", " ")
    assert "mapping candidates evaluated" in detail


@pytest.mark.parametrize("width", WIDTHS)
def test_targets_list_gives_each_target_one_line(cli, host, width):
    """A row that wraps under its name reads as two rows: the listing keeps one line a target."""
    lines = at(cli, ["targets", "list"], width).splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    body = lines[rule + 1 :]
    assert [line.split()[0] for line in body] == host.names("targets"), "\n".join(lines)
    assert all(len(line) <= width for line in lines)


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
