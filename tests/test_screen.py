"""Output for people, unit by unit: the plain layout stays byte-identical where a table fits or
the screen has no width; a fitted table keeps numbers and row names whole, says constant columns
once and names the columns it leaves out; colour wraps exactly the labels and verdicts; the
screen is detected from the stream and the environment; the progress bar shows steps with
elapsed and remaining time on a terminal, and lines elsewhere."""

import io
import re

import pytest

from tensorforge.cli.screen import PLAIN, Screen, detect, fit_table, paint, table
from tensorforge_measure.progress import BarProgress, LineProgress, advance, for_terminal, plan

HEADERS = ["workload", "compute", "memory (level)", "bottleneck", "search", "mapping"]
ROWS = [
    [
        "gemm_large_square",
        "1.028 ms",
        "1.028 ms (shared_memory)",
        "compute",
        "exhaustive",
        "m64xn64xk32 split4, 65536 tiles, 497 waves",
    ],
    ["conv_resnet50_1x1", "3.103 us", "13.39 us (DRAM)", "memory", "exhaustive", "m256xn64xk32, 392 tiles, 3 waves"],
]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_width_or_enough_width_gives_the_plain_layout():
    plain = table(HEADERS, ROWS)
    assert fit_table(HEADERS, ROWS, None) == plain == PLAIN.table(HEADERS, ROWS)
    assert fit_table(HEADERS, ROWS, max(len(line) for line in plain.splitlines())) == plain


def test_a_fitted_table_keeps_names_and_numbers_whole():
    fitted = fit_table(HEADERS, ROWS, 72).splitlines()
    assert max(len(line) for line in fitted) <= 72
    assert fitted[0] == "every row: search: exhaustive"  # a constant column, said once
    body = "\n".join(fitted[1:])
    for whole in ("gemm_large_square", "conv_resnet50_1x1", "1.028 ms", "3.103 us", "(shared_memory)", "compute"):
        assert whole in body
    assert "exhaustive" not in body  # not repeated in every row
    # the long mapping text wraps inside its column: its words all survive, in order
    mapping_words = " ".join(ROWS[0][5].split())
    assert all(word in body for word in mapping_words.split())


def test_columns_left_out_are_named_and_only_when_wrapping_is_not_enough():
    narrow = fit_table(HEADERS, ROWS, 50, optional=("mapping", "bottleneck")).splitlines()
    assert "not shown to fit (--wide shows them): mapping, bottleneck" in " ".join(line.strip() for line in narrow[:3])
    assert max(len(line) for line in narrow) <= 50
    assert "1.028 ms" in "\n".join(narrow) and "65536" not in "\n".join(narrow)
    roomy = fit_table(HEADERS, ROWS, 80, optional=("mapping", "bottleneck"))
    assert "not shown" not in roomy and "65536" in roomy


def test_one_line_rows_leave_optional_columns_out_before_a_row_wraps():
    # at 80 columns the mapping wraps and the table fits: a listing asks for one line a row instead
    wrapped = fit_table(HEADERS, ROWS, 80, optional=("mapping",))
    assert "not shown" not in wrapped
    listing = fit_table(HEADERS, ROWS, 80, optional=("mapping",), one_line=True).splitlines()
    assert "not shown to fit (--wide shows them): mapping" in listing[:2]
    rule = next(i for i, line in enumerate(listing) if line.startswith("---"))
    assert [line.split()[0] for line in listing[rule + 1 :]] == [r[0] for r in ROWS]
    # rows that fit keep every column
    assert fit_table(HEADERS, ROWS, 200, optional=("mapping",), one_line=True) == table(HEADERS, ROWS)


def test_wrapping_breaks_at_spaces_commas_and_joining_plus_signs_only():
    spec = "transformer:hidden=2048,layers=4,heads=16,kv_heads=4,head_dim=128,dtype=bf16"
    lines = Screen(30).wrap(f"  * transformer_decode: {spec}", "      ").splitlines()
    assert max(len(line) for line in lines) <= 30
    assert "".join(line.strip() for line in lines[1:]) == spec  # cut only after its commas
    assert all(line.strip().endswith(",") for line in lines[1:-1])
    cell = fit_table(["workload", "memory (level)", "x"], [["a", "3.15 ms (DRAM+shared_memory)", "1"]] * 2, 24)
    assert "(DRAM+" in cell and "shared_memory)" in cell  # never '(DRAM+sha' / 'red_memory)'
    assert Screen(8).wrap("1.028 ms unbreakable_token_here") == "1.028 ms\n  unbreakable_token_here"


def test_columns_empty_in_every_row_are_named_once_on_a_screen():
    headers, rows = ["workload", "measured", "predicted", ""], [["a", "-", "1 ms", ""], ["b", "-", "2 ms", ""]]
    shown = fit_table(headers, rows, 80).splitlines()
    assert shown[0] == "no data in any row: measured" and "measured" not in shown[1]
    assert fit_table(headers, rows, None) == table(headers, rows)  # a file keeps every column


def test_a_single_row_keeps_its_constant_columns():
    fitted = fit_table(HEADERS, ROWS[:1], 60)
    assert "every row" not in fitted and "exhaustive" in fitted


def test_paint_wraps_labels_and_verdicts_and_nothing_else():
    text = "PREDICTED  bound; within bound; BOUND VIOLATION; NOT VERIFIED; UNPREDICTED; PASSED; RULED OUT"
    painted = paint(text)
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == text
    assert "\x1b[1;34mPREDICTED\x1b[0m" in painted and "\x1b[32mwithin bound\x1b[0m" in painted
    assert "\x1b[1;31mBOUND VIOLATION\x1b[0m" in painted
    assert "\x1b[1;31mNOT VERIFIED\x1b[0m" in painted  # one verdict, not 'NOT ' + VERIFIED
    assert "UNPREDICTED" in painted and "PASSED" in painted  # parts of other words stay plain
    assert "\x1b[33mRULED OUT\x1b[0m" in painted


@pytest.mark.parametrize(
    ("tty", "env", "colour"),
    [
        (True, {}, True),
        (False, {}, False),
        (True, {"NO_COLOR": "1"}, False),
        (False, {"FORCE_COLOR": "1"}, True),
        (False, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (True, {"TERM": "dumb"}, False),
        (True, {"NO_COLOR": ""}, True),
    ],
)
def test_colour_follows_the_terminal_and_the_environment(monkeypatch, tty, env, colour):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert detect(stream=Terminal() if tty else io.StringIO()).colour is colour


def test_width_from_columns_the_terminal_or_none(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert detect(stream=io.StringIO()).width is None  # a pipe or a file: no limit
    monkeypatch.setenv("COLUMNS", "93")
    assert detect(stream=io.StringIO()).width == 93
    assert detect(wide=True, stream=Terminal()).width is None  # --wide: no limit anywhere
    monkeypatch.setenv("COLUMNS", "not-a-number")
    assert detect(stream=io.StringIO()).width is None


def test_wrap_breaks_prose_with_a_hanging_indent():
    line = "note: " + " ".join(["lower-bound"] * 12)
    wrapped = Screen(width=40).wrap(line).splitlines()
    assert len(wrapped) > 1 and all(len(w) <= 40 for w in wrapped)
    assert all(w.startswith("  ") for w in wrapped[1:])
    assert PLAIN.wrap(line) == line


# -- progress ------------------------------------------------------------------------------------


def test_steps_reach_a_progress_and_are_ignored_by_a_plain_callable():
    lines: list[str] = []
    plan(lines.append, 3, "probes")  # a callable without steps: fine
    advance(lines.append)
    assert lines == []

    class Recorder(list):
        planned = 0
        done = 0

        def plan(self, steps, what):
            self.planned += steps

        def advance(self):
            self.done += 1

    recorder = Recorder()
    plan(recorder, 3, "probes")
    plan(recorder, 0, "nothing")  # no steps: not planned
    for _ in range(3):
        advance(recorder)
    assert (recorder.planned, recorder.done) == (3, 3)


def test_the_bar_shows_steps_elapsed_and_remaining_and_prints_lines_above_it():
    terminal = Terminal()
    progress = BarProgress(terminal, colour=False)
    progress("[   0.0s] calibrating: matmul-ceiling")
    progress.plan(2, "calibration probes")
    progress.advance()
    progress.plan(3, "workloads")
    progress.advance()
    shown = terminal.getvalue()
    progress.close()
    assert "[   0.0s] calibrating: matmul-ceiling" in shown
    assert re.search(r"workloads .*2/5 elapsed \d+:\d\d:\d\d remaining", shown)


def test_the_bar_runs_no_refresh_thread_while_samples_are_timed():
    """A refresh thread would take the interpreter lock during timed host-bound samples."""
    import threading

    progress = BarProgress(Terminal(), colour=False)
    progress.plan(2, "workloads")
    try:
        assert not any("refresh" in repr(t).lower() for t in threading.enumerate())
        assert progress.bar.live.auto_refresh is False
    finally:
        progress.close()


def test_a_terminal_gets_a_bar_and_anything_else_lines(monkeypatch):
    assert isinstance(for_terminal(io.StringIO()), LineProgress)
    bar = for_terminal(Terminal())
    assert isinstance(bar, BarProgress)
    bar.close()
