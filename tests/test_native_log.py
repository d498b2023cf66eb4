"""No stray library log lines in a successful run: the profiler's own lines, written by native code
straight to descriptor 2 (Kineto's `ERROR: ... gpuGetDeviceCount failed` with the CUDA build of
PyTorch on a machine without a GPU), are kept out of a CPU trace window's output; every other
line still reaches the user, in order (measure/native_log.py).

The CUDA build is not installed here, so a stand-in profiler writes such lines; the CPU build's
own `USDT: ... profiler_start` lines are among the formats matched."""

import os

import pytest

from tensorforge_measure.measure import trace_window
from tensorforge_measure.measure.native_log import PROFILER_LINE, without_profiler_lines

KINETO_ERROR = b"ERROR:2026-12-02 07:00:01 4242:4242 DeviceUtil.cpp:40] gpuGetDeviceCount failed with code 35\n"
KINETO_STAGE = b"STAGE:2026-12-02 07:00:01 4242:4242 ActivityProfilerController.cpp:312] Completed Stage: Warm Up\n"
C10_WARNING = b"[W1202 07:00:01.123456 4242 kineto_shim.cpp:436] Warning: no CUPTI (function operator())\n"
OTHER = b"some other library: a line the user must still see\n"


@pytest.mark.parametrize(
    "line",
    [
        KINETO_ERROR,
        KINETO_STAGE,
        C10_WARNING,
        b"[W kineto_shim.cpp:337] Adding metadata\n",
        b"USDT:2026-12-02 08:06:29 5067:5067 SyncActivityProfilerHandler.cpp:52] profiler_start\n",
    ],
)
def test_the_profilers_lines_are_recognised(line):
    assert PROFILER_LINE.match(line)


@pytest.mark.parametrize(
    "line", [OTHER, b"ERROR: something else failed\n", b"[W something.cpp:1] unrelated\n", b"UserWarning: x\n"]
)
def test_other_lines_are_not(line):
    assert not PROFILER_LINE.match(line)


def test_only_the_profilers_lines_are_dropped_and_the_rest_keep_their_order(capfd):
    with without_profiler_lines():
        os.write(2, KINETO_ERROR + OTHER + KINETO_STAGE + b"second\n" + C10_WARNING)
    assert capfd.readouterr().err == (OTHER + b"second\n").decode()
    os.write(2, b"after\n")  # descriptor 2 is restored
    assert capfd.readouterr().err == "after\n"


def test_a_failure_inside_still_restores_descriptor_2(capfd):
    with pytest.raises(RuntimeError, match="boom"), without_profiler_lines():
        os.write(2, OTHER)
        raise RuntimeError("boom")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == OTHER.decode() + "after\n"


def test_a_cpu_trace_window_writes_no_profiler_line(capfd, monkeypatch):
    """The trace window's profiler session, made to log as the CUDA build without a GPU does
    (a stand-in torch.profiler: importing torch and starting the real profiler costs seconds;
    its own USDT lines are matched above)."""
    import json
    import sys
    import types

    class Noisy:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            os.write(2, KINETO_ERROR)  # what Kineto logs probing for a GPU when a session starts
            return self

        def __exit__(self, *exc):
            os.write(2, KINETO_STAGE + OTHER)
            return False

        def export_chrome_trace(self, path):
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"traceEvents": []}, f)

    profiler = types.ModuleType("torch.profiler")
    profiler.profile = Noisy
    profiler.ProfilerActivity = types.SimpleNamespace(CPU="cpu", CUDA="cuda")
    fake_torch = types.ModuleType("torch")
    fake_torch.profiler = profiler
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "torch.profiler", profiler)
    doc = trace_window.export(lambda: None, cuda=False)
    assert doc == {"traceEvents": []}
    assert capfd.readouterr().err == OTHER.decode()  # the profiler's lines only are gone
