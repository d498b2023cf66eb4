"""DIAGNOSTIC telemetry of the host CPU, sampled in its own window after latency timing: what
Linux offers cheaply and without root.

  clock        /sys/.../cpufreq/scaling_cur_freq per usable CPU, else /proc/cpuinfo 'cpu MHz'
               (on most virtual machines a constant nominal figure; the summary says which)
  load         /proc/loadavg (1-minute load, runnable tasks)
  utilisation  /proc/stat deltas over the usable CPUs: busy and steal (time the hypervisor gave
               to someone else), and the share of busy time that was not this process
               (getrusage): other work on the machine competing with the measurement
  energy       /sys/class/powercap/intel-rapl:0/energy_uj where readable (often root-only)

A source that cannot be read is "unavailable" with the reason, never zero. None of this
decides anything; it is context for a reader (why was this p50 noisy? was the machine busy?).
"""

import os
import re
import resource
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

CAVEAT = (
    "Host CPU telemetry (clock, load, utilisation, energy where readable) is diagnostic "
    "context from a separate execution window; it does not prove a bottleneck and never "
    "decides a verdict."
)
SAMPLE_PERIOD_S = 0.1  # /proc/cpuinfo can take milliseconds to read on large machines
RAPL = "sys/class/powercap/intel-rapl:0"


def _read(root: Path, rel: str) -> str | None:
    try:
        return (root / rel).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _why(root: Path, rel: str) -> str:
    try:
        (root / rel).read_bytes()
        return "unreadable"
    except PermissionError:
        return f"/{rel}: permission denied (root only on this kernel)"
    except FileNotFoundError:
        return f"/{rel}: absent"
    except OSError as exc:
        return f"/{rel}: {exc.strerror or exc}"


class Readers:
    """Reads each source under `root` (a snapshot folder in tests) for the given CPUs, and says
    once, up front, which sources exist and why the others do not."""

    def __init__(self, cpus: Sequence[int], root: str = "/"):
        self.root, self.cpus = Path(root), tuple(cpus)
        self.sources: dict[str, str] = {}
        self.unavailable: dict[str, str] = {}
        freq = [f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq" for c in self.cpus]
        if freq and all(_number(_read(self.root, f)) for f in freq):
            self._freq = lambda: [v / 1000.0 for v in (_number(_read(self.root, f)) for f in freq) if v]
            self.sources["clock_mhz"] = "/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq"
        elif self._cpuinfo_mhz():
            self._freq = self._cpuinfo_mhz
            self.sources["clock_mhz"] = (
                "/proc/cpuinfo 'cpu MHz' (no cpufreq here; on a virtual machine "
                "this is usually the constant nominal clock, not the running one)"
            )
        else:
            self._freq = None
            self.unavailable["clock_mhz"] = "no cpufreq scaling_cur_freq and no 'cpu MHz' in /proc/cpuinfo"
        for key, rel in (("load", "proc/loadavg"), ("utilisation", "proc/stat")):
            if _read(self.root, rel):
                self.sources[key] = "/" + rel
            else:
                self.unavailable[key] = _why(self.root, rel)
        rapl = _read(self.root, f"{RAPL}/energy_uj")
        if rapl and rapl.strip().isdigit():
            self.sources["energy_j"] = f"/{RAPL}/energy_uj (package 0, all of it, not only these CPUs)"
        else:
            self.unavailable["energy_j"] = _why(self.root, f"{RAPL}/energy_uj") if rapl is None else "unreadable"

    def _cpuinfo_mhz(self) -> list[float]:
        text = _read(self.root, "proc/cpuinfo") or ""
        mhz, cpu = {}, None
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "processor":
                cpu = _number(value)
            elif key.strip() == "cpu MHz" and cpu is not None and _number(value):
                mhz[int(cpu)] = _number(value)
        return [mhz[c] for c in self.cpus if c in mhz]

    def clock_mhz(self) -> float | None:
        values = self._freq() if self._freq else []
        return statistics.fmean(values) if values else None

    def load(self) -> tuple[float | None, int | None]:
        """(1-minute load average, runnable scheduling entities now)."""
        text = _read(self.root, "proc/loadavg") if "load" in self.sources else None
        match = re.match(r"\s*([\d.]+)\s+[\d.]+\s+[\d.]+\s+(\d+)/", text or "")
        return (float(match.group(1)), int(match.group(2))) if match else (None, None)

    def cpu_ticks(self) -> tuple[int, int, int] | None:
        """(total, idle + iowait, steal) clock ticks summed over the usable CPUs."""
        text = _read(self.root, "proc/stat") if "utilisation" in self.sources else None
        total = idle = steal = 0
        wanted = {f"cpu{c}" for c in self.cpus}
        for line in (text or "").splitlines():
            fields = line.split()
            if fields and fields[0] in wanted and all(v.isdigit() for v in fields[1:9]):
                ticks = [int(v) for v in fields[1:9]] + [0] * (8 - len(fields[1:9]))
                total += sum(ticks)  # user nice system idle iowait irq softirq steal
                idle += ticks[3] + ticks[4]
                steal += ticks[7]
        return (total, idle, steal) if total else None

    def energy_uj(self) -> int | None:
        if "energy_j" not in self.sources:
            return None
        text = _read(self.root, f"{RAPL}/energy_uj")
        return int(text) if text and text.strip().isdigit() else None

    def energy_range_uj(self) -> int | None:
        text = _read(self.root, f"{RAPL}/max_energy_range_uj")
        return int(text) if text and text.strip().isdigit() else None


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # all threads of this process
    return usage.ru_utime + usage.ru_stime


def _sample(readers: Readers, t_s: float) -> dict[str, Any]:
    load1, runnable = readers.load()
    return {
        "t_s": t_s,
        "clock_mhz": readers.clock_mhz(),
        "load1": load1,
        "runnable": runnable,
        "ticks": readers.cpu_ticks(),
        "own_cpu_s": _own_cpu_s(),
    }


def summarize(samples: Sequence[dict[str, Any]], tick_hz: float) -> dict[str, Any]:
    """Clock min/median/max, load, and utilisation over the window from the first and last
    sample's counters. Missing values are skipped, never zeroed."""
    clocks = [s["clock_mhz"] for s in samples if s["clock_mhz"] is not None]
    loads = [s["load1"] for s in samples if s["load1"] is not None]
    out: dict[str, Any] = {
        "n_samples": len(samples),
        "clock_mhz_min": min(clocks) if clocks else None,
        "clock_mhz_median": statistics.median(clocks) if clocks else None,
        "clock_mhz_max": max(clocks) if clocks else None,
        "load1_max": max(loads) if loads else None,
        "busy_pct": None,
        "steal_pct": None,
        "other_processes_pct": None,
    }
    ticked = [s for s in samples if s["ticks"] is not None]
    if len(ticked) >= 2:
        (t0, i0, s0), (t1, i1, s1) = ticked[0]["ticks"], ticked[-1]["ticks"]
        if t1 > t0:
            busy_ticks = (t1 - t0) - (i1 - i0)
            out["busy_pct"] = 100.0 * busy_ticks / (t1 - t0)
            out["steal_pct"] = 100.0 * (s1 - s0) / (t1 - t0)
            # This process's CPU time over the same span, in ticks: the rest of the busy time
            # belongs to other processes (or the kernel on their behalf).
            own_ticks = (ticked[-1]["own_cpu_s"] - ticked[0]["own_cpu_s"]) * tick_hz
            out["other_processes_pct"] = max(0.0, 100.0 * (busy_ticks - own_ticks) / (t1 - t0))
    return out


def headline(summary: dict[str, Any], energy_j: float | None, duration_s: float, clock_source: str) -> str:
    def pct(key):
        return "-" if summary.get(key) is None else f"{summary[key]:.0f}%"

    clock = summary.get("clock_mhz_median")
    clock_text = (
        "clock unavailable"
        if clock is None
        else f"clock {clock:.0f} MHz median{' (nominal: /proc/cpuinfo)' if 'cpuinfo' in clock_source else ''}"
    )
    power = f", {energy_j / duration_s:.1f} W package" if energy_j is not None and duration_s > 0 else ""
    return (
        f"{clock_text}, busy {pct('busy_pct')}, other processes {pct('other_processes_pct')}, "
        f"steal {pct('steal_pct')}, load {summary.get('load1_max') or '-'}{power}"
    )


def start_meter(cpus: Sequence[int], root: str = "/") -> Callable[[], dict[str, Any]] | None:
    """Two readings of the utilisation counters around a stretch of work (a calibration probe):
    a callable that, called at the end, gives the window's summary (busy, steal, other
    processes). None where /proc/stat cannot be read."""
    readers = Readers(cpus, root)
    if "utilisation" not in readers.sources:
        return None
    t0 = time.perf_counter()
    first = _sample(readers, 0.0)

    def stop() -> dict[str, Any]:
        last = _sample(readers, time.perf_counter() - t0)
        return summarize([first, last], float(os.sysconf("SC_CLK_TCK")))

    return stop


def collect_window(
    run_once: Callable[[], Any],
    cpus: Sequence[int],
    duration_s: float,
    sample_period_s: float = SAMPLE_PERIOD_S,
    root: str = "/",
) -> dict[str, Any]:
    """Run `run_once` repeatedly for ~duration_s (at least once) while a thread samples; a dict
    shaped like the NVML window (available, unavailable_reason, samples, summary, caveat)."""
    readers = Readers(cpus, root)
    base = {
        "source": "host-cpu",
        "sample_period_s": sample_period_s,
        "cpus": list(readers.cpus),
        "sources": dict(readers.sources),
        "unavailable": dict(readers.unavailable),
        "caveat": CAVEAT,
    }
    if not readers.sources:
        return {
            **base,
            "available": False,
            "duration_s": 0.0,
            "samples": [],
            "summary": None,
            "energy_j": None,
            "headline": None,
            "unavailable_reason": "; ".join(f"{k}: {v}" for k, v in sorted(readers.unavailable.items())),
        }
    samples: list[dict[str, Any]] = []
    stop = threading.Event()
    t0 = time.perf_counter()

    def sampler() -> None:
        while True:
            samples.append(_sample(readers, time.perf_counter() - t0))
            if stop.wait(sample_period_s):
                return

    energy_start = readers.energy_uj()
    thread = threading.Thread(target=sampler, name="host-cpu-telemetry", daemon=True)
    thread.start()
    try:
        while True:
            run_once()
            if time.perf_counter() - t0 >= duration_s:
                break
    finally:
        elapsed = time.perf_counter() - t0
        stop.set()
        thread.join()
    samples.append(_sample(readers, time.perf_counter() - t0))  # closes the utilisation span
    energy_end = readers.energy_uj()
    energy_j = None
    if energy_start is not None and energy_end is not None:
        delta = energy_end - energy_start
        if delta < 0:  # the counter wrapped
            delta += readers.energy_range_uj() or 0
        energy_j = delta / 1e6 if delta >= 0 else None
    tick_hz = float(os.sysconf("SC_CLK_TCK"))  # /proc/stat counts in these ticks
    summary = summarize(samples, tick_hz)
    return {
        **base,
        "available": True,
        "unavailable_reason": None,
        "duration_s": elapsed,
        "samples": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in s.items()} for s in samples],
        "summary": summary,
        "energy_j": energy_j,
        "headline": headline(summary, energy_j, elapsed, readers.sources.get("clock_mhz", "")),
    }
