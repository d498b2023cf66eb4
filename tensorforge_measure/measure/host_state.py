"""The host's state around timed samples: what a host-bound eager call's time depends on besides
the call itself, kept the same for every timing (ours and, in the comparison, triton's).

Why: an eager call whose kernels are shorter than its Python (the default decode step: ~1.3 ms of
Python and launches against 0.37 ms of device time) is timed at the host's rate, so anything that
slows the host's CUDA calls lands in the sample. Two such things are the harness's own doing:

* **The profiler's CUPTI subscription.** PyTorch's profiler (Kineto) leaves CUPTI attached to the
  process when a profiling session ends unless ``TEARDOWN_CUPTI=1`` (Kineto reads it when a
  session stops; pytorch/pytorch#144455, #146604: training 10-20% slower after a profiler session
  had ended). A ``run`` profiles in its kernel-floors probe and in every workload's trace window,
  so every eager timing after the first of them paid CUPTI's per-call cost, and a benchmark that
  never profiled did not (H200, 2026-12-01: the decode step 3.7 ms eager after one profiler
  session, 1.2-1.9 ms before it, in both harnesses). ``cupti_teardown_default()`` would set
  ``TEARDOWN_CUPTI=1`` unless the user set it; the teardown's known crash with CUDA graphs was fixed
  in CUDA 12.6 (#151124). Not yet run on the device, so the session records the value in force
  (``profiler_teardown_cupti``) and does not call it.
* **Garbage collection** inside a timed window: a collection is host time spent in whichever call
  allocated the object that triggered it. ``gc_paused()`` switches the collector off for a timed
  section (the objects a window makes are freed by reference counting; cycles wait for the end).
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator, MutableMapping

TEARDOWN_CUPTI = "TEARDOWN_CUPTI"


def _cuda_at_least(version: str | None, major: int, minor: int) -> bool:
    try:
        parts = [int(p) for p in str(version).split(".")[:2]]
    except ValueError:
        return False
    return len(parts) == 2 and tuple(parts) >= (major, minor)


def cupti_teardown_default(cuda_runtime: str | None, environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Ask Kineto to detach CUPTI after every profiling session (module docstring): sets
    TEARDOWN_CUPTI=1 where it is unset and the CUDA runtime is 12.6 or later. Returns the value in
    force afterwards (None: unset, Kineto's default of leaving CUPTI attached)."""
    if TEARDOWN_CUPTI not in environ and _cuda_at_least(cuda_runtime, 12, 6):
        environ[TEARDOWN_CUPTI] = "1"
    return environ.get(TEARDOWN_CUPTI)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The garbage collector off for the block, as it was after (nested blocks keep it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
