"""Library log lines written straight to the process's standard error (file descriptor 2) by
native code, kept out of a successful run's output.

Why: with the CUDA build of PyTorch on a machine without a GPU, every host-CPU `run` printed the
profiler's (Kineto's) own log lines, among them `ERROR: ... gpuGetDeviceCount failed`, and the
CPU build of PyTorch 2.13 prints `USDT: ... profiler_start` and `profiler_stop`, once per trace
window: Kineto probes for a GPU when a profiling session starts, whatever activities were
asked for, and logs through C++ streams that no Python setting reaches. Nothing went wrong (the
trace window asks for CPU activity only), so a user saw an error that was none. The trace window
now runs with descriptor 2 routed to a temporary file; afterwards every line is written back
except the profiler's own log lines (PROFILER_LINE), so a Python warning or any other library's
line still reaches the user, in order.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

# Kineto's logger ('ERROR:2026-12-02 07:00:01 1234:1234 DeviceUtil.cpp:40] ...', also INFO,
# WARNING, STAGE, VERBOSE, and USDT: the CPU build of PyTorch 2.13 writes 'USDT:... profiler_start'
# and '... profiler_stop' around every session) and c10's warnings raised from the profiler's
# shims ('[W1202 07:00:01.123 1234 kineto_shim.cpp:436] Warning: ...', older '[W kineto_shim.cpp:337] ...').
PROFILER_LINE = re.compile(
    rb"^(?:[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.(?:cpp|cc|h):\d+\]"
    rb"|\[[WIE][^\]]*?\b\S*(?:kineto|[Pp]rofiler|[Cc]upti|CUPTI)\S*:\d+\])"
)


@contextlib.contextmanager
def without_profiler_lines(pattern: re.Pattern[bytes] = PROFILER_LINE) -> Iterator[None]:
    """Run the block with descriptor 2 captured; write back every line but the profiler's.
    Where descriptor 2 cannot be duplicated (closed), the block runs as it is."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()  # what Python wrote meanwhile belongs before what follows
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [line for line in sink.read().splitlines(keepends=True) if not pattern.match(line)]
            if kept:
                os.write(2, b"".join(kept))
