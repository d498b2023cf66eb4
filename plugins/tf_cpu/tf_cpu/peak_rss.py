"""Peak memory of one workload on the CPU: the process's resident-set high-water mark.

Why not tracemalloc: it sees Python's allocator, not PyTorch's. Why not ru_maxrss: it is the
peak over the whole process lifetime, so a workload smaller than an earlier one shows nothing.
Linux lets a process reset its own high-water mark (write 5 to /proc/self/clear_refs, Linux
>= 4.0), so `peak = VmHWM after build + one run - VmRSS before the build` is this workload's
peak, page-granular, including whatever library scratch it touched. Where the reset is not
allowed, there is no honest number: None, with the reason.

Resident pages are not allocated bytes: memory an earlier workload freed can stay resident in
the C allocator's heap and be reused without a single new page, so a 3 MiB GEMM measured right
after calibration showed a peak of 0. glibc's malloc_trim(0) first hands such pages back to the
kernel, so the workload's own allocations fault in fresh pages that the high-water mark sees.
"""

import ctypes
import ctypes.util
from pathlib import Path

import attrs

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
METHOD = (
    "resident set: VmHWM after build + one run minus VmRSS before the build, with freed "
    "heap returned first (glibc malloc_trim(0)) and the high-water mark reset "
    "(/proc/self/clear_refs = 5); page-granular, includes library scratch"
)
NO_TRIM = "; malloc_trim unavailable (not glibc): memory freed earlier but still resident can hide part of the peak"


def _trim() -> bool:
    """Return freed heap pages to the kernel; False where the C library has no malloc_trim."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(ctypes.c_size_t(0))
        return True
    except (OSError, AttributeError):
        return False


def _status_kib(field: str, status: Path = STATUS) -> int | None:
    try:
        for line in status.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


@attrs.frozen
class Baseline:
    rss_bytes: int  # resident right after the reset, before the workload is built
    trimmed: bool  # whether freed heap could be returned first


def start(clear_refs: Path = CLEAR_REFS, status: Path = STATUS) -> tuple[Baseline | None, str | None]:
    """Trim the heap and reset the high-water mark: (baseline, None), or (None, why the peak
    cannot be measured here)."""
    trimmed = _trim()
    try:
        clear_refs.write_text("5", encoding="ascii")
    except OSError as exc:
        return None, f"unavailable: cannot reset the resident high-water mark ({clear_refs}: {exc.strerror or exc})"
    rss = _status_kib("VmRSS", status)
    if rss is None:
        return None, f"unavailable: no VmRSS in {status}"
    return Baseline(rss * 1024, trimmed), None


def peak_since(base: Baseline | None, status: Path = STATUS) -> tuple[int | None, str]:
    """(peak bytes above `base`, method) or (None, why)."""
    if base is None:
        return None, "unavailable"
    hwm = _status_kib("VmHWM", status)
    if hwm is None:
        return None, f"unavailable: no VmHWM in {status}"
    return max(0, hwm * 1024 - base.rss_bytes), METHOD + ("" if base.trimmed else NO_TRIM)
