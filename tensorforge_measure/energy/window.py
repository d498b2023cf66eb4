"""MEASURED energy: one workload's energy window, of its own (never inside latency samples).

The workload runs back to back, kept queued on the device (a step tops the queue up and says how
many executions have completed so far), while an energy counter is read between steps. A counter that updates every few tens of ms (NVML's: 20-100
ms by the published accounts, measured here per window) makes a naive "read before, read after"
wrong by up to one update interval at each end, so the window is aligned on the counter's own
updates instead:

1. run chunks until the counter changes: that change is the window's start edge (the device is
   already loaded, so the energy counted from here is the workload's);
2. count executions while running on, until at least `min_s` have passed AND the counter changes
   again: the end edge;
3. joules = end value - start value; executions = those completed between the two edges; the
   window's time = time between the edges.

The edges are seen when the counter is read, up to one step after the counter's update; a thread
polling every few ms times them to within a poll (refine_edges), and, where the counter's idle
update period is known, they are put on its regular update grid (grid_edges): under load each
update's polled instant jitters by ~10 ms, while the updates keep the idle grid. A sampler
integrates power over the same edges as a cross-check (nvml_power.py).

Why queued, not "run a chunk, synchronize, read": on an H200 a read of NVML's energy counter took
milliseconds, and a loop that synchronised before each read left the GPU idle most of the time (a
1.7 ms GEMM came out at one execution per 5.9 ms, 330 W instead of the 690 W it draws under
continuous load; the capture is kept at the lab-archive-2026-12 tag). With executions queued ahead (QueuedSteps
in measure.py) the device never waits for the host's reads.

Pure logic over injected callables (the counter, the clock, the chunk), so it is tested without
a device.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import attrs


@attrs.frozen
class CounterTick:
    t_s: float  # clock time at which the new value was first seen
    joules: float
    executions: float = 0  # executions completed since the start edge when it was seen (interpolated when refined)


@attrs.frozen
class CounterWindow:
    """What the counter saw between the two edges."""

    ok: bool
    reason: str | None
    joules: float | None
    executions: int
    start_s: float | None  # clock time of the start edge
    end_s: float | None
    ticks: tuple[CounterTick, ...]
    chunks: int
    # (clock s, executions completed since the start edge) after every step inside the window:
    # executions at a refined edge time are interpolated on it
    progress: tuple[tuple[float, int], ...] = ()
    # executions between the edges, interpolated at refined edge times (fractional); None: the
    # integer count seen between steps stands
    executions_exact: float | None = None
    edge_resolution_s: float | None = None  # how precisely each edge's time is known
    edges_from: str = "counter reads between steps"
    grid_period_s: float | None = None  # the counter's idle update period where the edges sit on its grid
    # which updates placed the grid and which were left out, and why; or why the grid was not used
    grid_fit: str | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.start_s is None or self.end_s is None else self.end_s - self.start_s

    def update_interval_s(self) -> float | None:
        """Median time between the counter's updates seen in the window (each seen up to one
        chunk late, so this is the update interval to within a chunk)."""
        gaps = [b.t_s - a.t_s for a, b in zip(self.ticks, self.ticks[1:])]
        return statistics.median(gaps) if gaps else None

    def per_execution_samples(self) -> tuple[float, ...]:
        """Joules per execution between consecutive counter updates: one sample per update
        interval (what the energy gate compares, as the latency gate compares timing samples)."""
        return tuple(
            (b.joules - a.joules) / (b.executions - a.executions)
            for a, b in zip(self.ticks, self.ticks[1:])
            if b.executions > a.executions
        )

    def update_spread(self) -> float | None:
        return update_spread(self.ticks)

    def smallest_step_j(self) -> float | None:
        steps = [b.joules - a.joules for a, b in zip(self.ticks, self.ticks[1:]) if b.joules > a.joules]
        return min(steps) if steps else None


def update_spread(ticks: Sequence[CounterTick]) -> float | None:
    """The standard deviation of the joules the counter added per update, over the window's
    joules: the window's relative error from its two edges, by the counter alone.

    Why: at steady load one update's joules differ from the energy of its interval by the
    counter's boundary error at each end, e_k - e_(k-1), alternating in sign (on the H200 ~10% of
    an update at the power cap, docs/energy.md), so a window's joules carry e_end - e_start only,
    whose variance is the variance of one update's joules. An interval that spans two updates (a
    counter that skipped one) counts as that many updates. None: fewer than three updates."""
    steps = [(b.joules - a.joules, b.t_s - a.t_s) for a, b in zip(ticks, ticks[1:])]
    if len(steps) < 3:
        return None
    typical = statistics.median(dt for _, dt in steps)
    per = [j / max(1, round(dt / typical)) if typical > 0 else j for j, dt in steps]
    total = ticks[-1].joules - ticks[0].joules
    return statistics.stdev(per) / total if total > 0 else None


def cumulative(run_chunk: Callable[[], int]) -> Callable[[], int]:
    """A step from a synchronous chunk (runs some executions, waits for them, returns how many):
    the executions completed so far."""
    done = 0

    def step() -> int:
        nonlocal done
        done += run_chunk()
        return done

    return step


def counter_window(
    step: Callable[[], int],
    read_joules: Callable[[], float | None],
    *,
    min_s: float = 0.3,
    max_s: float = 2.0,
    clock: Callable[[], float] = time.perf_counter,
    on_edge: Callable[[str], None] | None = None,
    settle_s: float = 0.0,
    spread_target: float | None = None,
    long_s: float | None = None,
    min_updates: int | None = None,
    updates_max_s: float | None = None,
) -> CounterWindow:
    """Run `step` (tops up the work, returns the executions completed so far) under the counter
    read by `read_joules`, edge to edge (module docstring). `settle_s`: the start edge is the
    first update after at least this much load, so the interval the counter's start value
    closes was loaded (the device ramped up) and not partly idle. `spread_target`, `long_s`:
    past `min_s`, the window runs on, update by update up to `long_s`, while the counter's own
    per-update spread (update_spread) is above the target: a window sized by what the counter
    shows, long only where its updates are lumpy (at the power cap). `min_updates`: past
    `min_s`, the window runs on until it spans at least this many of the counter's updates (each
    one sample of joules per execution for the energy gate): a 100 ms counter makes 10 updates
    ~1.0 s, a fast counter (RAPL's ~1 ms) ends at `min_s` as before; `updates_max_s`: the window
    ends at the first update after this long even with fewer updates (a slow counter gives a
    window with fewer samples, which the gate calls NO VERDICT, never a hang)."""

    def failed(reason: str, ticks=(), chunks=0) -> CounterWindow:
        return CounterWindow(
            ok=False,
            reason=reason,
            joules=None,
            executions=0,
            start_s=None,
            end_s=None,
            ticks=tuple(ticks),
            chunks=chunks,
        )

    first = read_joules()
    if first is None:
        return failed("the energy counter could not be read")
    began = clock()
    last, chunks = first, 0
    before: tuple[float, int] | None = None  # the step before the start edge's, for refine_edges
    while True:  # find the start edge, the workload already running
        done = step()
        stepped = clock()
        chunks += 1
        value = read_joules()
        now = clock()
        if value is None:
            return failed("the energy counter stopped answering", chunks=chunks)
        if value < last:
            return failed("the energy counter went backwards (wrapped or reset)", chunks=chunks)
        if value != last and now - began >= settle_s:
            break
        last, before = value, (stepped, done)
        if now - began > max_s + settle_s:
            return failed(f"the energy counter did not change in {max_s:g} s of load", chunks=chunks)
    ticks = [CounterTick(t_s=now, joules=value)]
    start, last, first_done, executions = now, value, done, 0
    progress = ([(before[0], before[1] - done)] if before else []) + [(stepped, 0)]
    if on_edge is not None:
        on_edge("start")
    while True:
        executions = step() - first_done
        progress.append((clock(), executions))
        chunks += 1
        value = read_joules()
        now = clock()
        if value is None:
            return failed("the energy counter stopped answering", ticks, chunks)
        if value < last:
            return failed("the energy counter went backwards (wrapped or reset)", ticks, chunks)
        if value != last:
            ticks.append(CounterTick(t_s=now, joules=value, executions=executions))
            last = value
            spread = update_spread(ticks) if spread_target is not None else None
            lumpy = spread is None or spread > spread_target  # type: ignore[operator]
            long_enough = spread_target is None or long_s is None or now - start >= long_s or not lumpy
            enough_updates = (
                min_updates is None
                or len(ticks) - 1 >= min_updates
                or (updates_max_s is not None and now - start >= updates_max_s)
            )
            if now - start >= min_s and long_enough and enough_updates:
                if on_edge is not None:
                    on_edge("end")
                break
        if now - start > max_s:
            return failed(f"no counter update ended the window within {max_s:g} s", ticks, chunks)
    return CounterWindow(
        ok=True,
        reason=None,
        joules=ticks[-1].joules - ticks[0].joules,
        executions=executions,
        start_s=start,
        end_s=now,
        ticks=tuple(ticks),
        chunks=chunks,
        progress=tuple(progress),
    )


def _change_time(
    polls: Sequence[tuple[float, float]], value: float, near_s: float, slack_s: float
) -> tuple[float, float] | None:
    """When the counter changed to `value`, as polled on the sampler thread: the midpoint of the
    interval it is known to lie in (and that interval's half-width). The change lies between the
    last poll that still read less (t0) and the first that read `value` (t1); the step loop saw the
    new value at near_s, one step at most after the update, so it also lies in
    [near_s - slack_s, near_s]. A poll pass can be longer than a step (5-9 ms on the H200's host
    against ~2 ms steps of a queued large GEMM): t1 may come after near_s, and then near_s, not
    t1, closes the interval (requiring t1 <= near_s + 1 ms lost such edges)."""
    for (t0, v0), (t1, v1) in zip(polls, polls[1:]):
        if not (v0 < value == v1):
            continue
        lo, hi = max(t0, near_s - slack_s), min(t1, near_s + 1e-3)
        if lo <= hi:
            return (lo + hi) / 2, (hi - lo) / 2
    return None


def _done_at(progress: Sequence[tuple[float, int]], t: float) -> float:
    """Executions completed at time t, interpolated linearly on the step loop's log (the rate is
    steady inside a loaded window); clamped to the log's ends."""
    pts = sorted(progress)
    if t <= pts[0][0]:
        return float(pts[0][1])
    for (t0, d0), (t1, d1) in zip(pts, pts[1:]):
        if t0 <= t <= t1:
            return d0 + (d1 - d0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return float(pts[-1][1])


def _done_at_steady(progress: Sequence[tuple[float, int]], t: float) -> float:
    """_done_at, carried past the log's ends at the log's mean rate: a grid edge can fall a few ms
    after the step that saw the end update (the fitted phase sits at the updates' mean
    publication delay, that update's own may be shorter), and the load is steady there."""
    pts = sorted(progress)
    (t0, d0), (t1, d1) = pts[0], pts[-1]
    rate = (d1 - d0) / (t1 - t0) if t1 > t0 else 0.0
    if t < t0:
        return d0 - rate * (t0 - t)
    if t > t1:
        return d1 + rate * (t - t1)
    return _done_at(pts, t)


def refine_edges(
    window: CounterWindow, polls: Sequence[tuple[float, float]], slack_s: float | None = None
) -> CounterWindow:
    """The window with its edges timed by a thread that polled the counter every few ms
    (`polls`: (clock s, joules)) instead of between steps: a step that launches tens of ms of
    host-bound work sees an update up to that late, and an edge seen late at one end and early
    at the other stretches or shrinks the window (and the executions counted in it) by up to a
    step. Executions at the refined times come from the step loop's log, interpolated. Where
    the polls do not show both changes, the window stands as the steps saw it."""
    if not window.ok or len(window.ticks) < 2 or not window.progress:
        return window
    first, last = window.ticks[0], window.ticks[-1]
    if slack_s is None:  # the longest step the loop took, and a little: an update falls inside it
        times = [t for t, _ in window.progress]
        slack_s = max((b - a for a, b in zip(times, times[1:])), default=0.0) + 0.005
    start = _change_time(polls, first.joules, first.t_s, slack_s)
    end = _change_time(polls, last.joules, last.t_s, slack_s)
    if start is None or end is None or not end[0] > start[0]:
        return window
    # the log counts from the step that saw the start edge; before it, the start edge's own
    # step: interpolate on the log extended by the executions the first tick's step saw (0)
    done = _done_at(window.progress, end[0]) - _done_at(window.progress, start[0])
    at_start = _done_at(window.progress, start[0])

    def refined(tick: CounterTick) -> CounterTick:
        seen = _change_time(polls, tick.joules, tick.t_s, slack_s)
        if seen is None:
            return tick
        return attrs.evolve(tick, t_s=seen[0], executions=_done_at(window.progress, seen[0]) - at_start)

    ticks = tuple(refined(t) for t in window.ticks)
    return attrs.evolve(
        window,
        start_s=start[0],
        end_s=end[0],
        ticks=ticks,
        executions_exact=done if done > 0 else None,
        edge_resolution_s=max(start[1], end[1]),
        edges_from="counter polled every few ms on the power sampler's thread",
    )


def calls_per_chunk(per_call_s: float | None, chunk_s: float = 0.002) -> int:
    """Executions per chunk: about chunk_s of work between counter reads (at least one)."""
    if per_call_s is None or not per_call_s > 0:
        return 1
    return max(1, min(10_000, round(chunk_s / per_call_s)))


def integrate(samples: Sequence[tuple[float, float]], start_s: float, end_s: float) -> float | None:
    """Trapezoidal integral (J) of (time s, power W) samples over [start_s, end_s], the ends
    interpolated linearly; None when the samples do not cover both ends."""
    pts = sorted(samples)
    if len(pts) < 2 or pts[0][0] > start_s or pts[-1][0] < end_s or not end_s > start_s:
        return None

    def at(t: float) -> float:
        for (t0, p0), (t1, p1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                return p0 if t1 == t0 else p0 + (p1 - p0) * (t - t0) / (t1 - t0)
        raise AssertionError("covered above")

    inner = [(t, p) for t, p in pts if start_s < t < end_s]
    path = [(start_s, at(start_s)), *inner, (end_s, at(end_s))]
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(path, path[1:]))


# --- edges on the counter's update grid (issue 15; docs/energy.md, "Edges on the counter's grid") ---
# the idle intervals between updates must agree this well for their mean to be taken as the grid's
# period (the H200's: 99.9-100.1 ms, SD <= 0.2 ms at idle; under load the polled instants jitter
# by 6-13 ms, which is why the period is measured at idle and only the phase in the window)
GRID_MAX_SD_S = 0.001
# an update whose polled instant lies further from the fitted grid than GRID_OUTLIER_SDS x the
# jitter of the window's updates (robust: 1.4826 x their median absolute deviation, at least the
# idle intervals' SD and GRID_MIN_JITTER_S) plus half the gap of the two polls that bracket it is
# an outlier: it keeps its grid instant (its joules are the counter's) but does not place the
# phase. Why: at the power cap the sampler's polls come 5-25 ms apart and an update is now and
# then published far late; an H200 session's 1.5 s GPU-test window (2026-12-01) lost its grid to one
# such update under the former rule (any update > a quarter period off: the window refused)
GRID_OUTLIER_SDS = 4.0
GRID_MIN_JITTER_S = 0.0005
# updates that scatter about their best grid by more than this fraction of the period (robust SD;
# the H200 under load: 3-9 ms of 100 ms) do not keep it: no grid, the polled edges stand
GRID_MAX_JITTER = 0.125
# the grid is not used where fewer than this share of the window's updates place the phase (the
# updates do not keep one grid), or where two updates fall on one grid instant
GRID_MIN_INLIERS = 0.5


def update_instants(polls: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """(time, new value) of every update of the counter seen in the polls: each timed at the
    midpoint of the two polls that bracket it."""
    return [(t, v) for t, v, _ in _bracketed_updates(polls)]


def _bracketed_updates(polls: Sequence[tuple[float, float]]) -> list[tuple[float, float, float]]:
    """(midpoint, new value, half the gap of the two polls that bracket it) of every update."""
    pts = sorted(polls)
    return [((t0 + t1) / 2, v1, (t1 - t0) / 2) for (t0, v0), (t1, v1) in zip(pts, pts[1:]) if v1 > v0]


@attrs.frozen
class GridPeriod:
    """The counter's update period, measured where nothing runs (its updates regular there)."""

    period_s: float | None
    sd_s: float | None  # SD of the intervals between the updates it came from
    intervals: int
    reason: str | None = None  # why no period, where none


def measure_period(polls: Sequence[tuple[float, float]], max_sd_s: float = GRID_MAX_SD_S) -> GridPeriod:
    """The period of the counter's updates from polls taken at idle: the Theil-Sen slope of the
    update instants over their indices, trusted where at least three intervals were seen and more
    than half of them lie within `max_sd_s` of their median (one update published late, as right after a load on the
    H200: 100.5, 113.4, 86.2 ms, moves two intervals and not the median). Regularity is the
    premise of the grid edges: a counter whose idle updates are irregular gets no period, and its
    windows keep the polled edges. `sd_s`: the SD of the intervals that agree."""
    times = [t for t, _ in update_instants(polls)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    if len(gaps) < 3:
        return GridPeriod(None, None, len(gaps), f"{len(gaps)} intervals between updates seen at idle (< 3)")
    median = statistics.median(gaps)
    agree = [g for g in gaps if abs(g - median) <= max_sd_s]
    sd = statistics.stdev(agree) if len(agree) > 1 else None
    if 2 * len(agree) <= len(gaps) or len(agree) < 2:
        return GridPeriod(
            None,
            sd,
            len(gaps),
            f"the idle updates are not regular ({len(agree)} of {len(gaps)} intervals within "
            f"{max_sd_s * 1e3:g} ms of their median {median * 1e3:.2f} ms)",
        )
    # the period itself: the median of the slopes between every pair of updates (Theil-Sen), each
    # pair's index difference counted in median intervals: a late update moves only the slopes it
    # is part of, and pairs far apart weigh its lateness by 1 / their distance (the median interval
    # alone was 0.4 ms off, 99.57 ms, in an H200 session's GPU-test process, right after a load)
    ks = [0]
    for g in gaps:
        ks.append(ks[-1] + max(1, round(g / median)))
    slopes = [(times[j] - times[i]) / (ks[j] - ks[i]) for i in range(len(times)) for j in range(i + 1, len(times))]
    slope = statistics.median(slopes)
    if abs(slope - median) > max_sd_s:  # e.g. intervals alternating long and short: no one period
        return GridPeriod(
            None,
            sd,
            len(gaps),
            f"the idle updates' slope ({slope * 1e3:.2f} ms) and median interval ({median * 1e3:.2f} ms) "
            f"differ by more than {max_sd_s * 1e3:g} ms",
        )
    return GridPeriod(slope, sd, len(gaps))


@attrs.frozen
class GridFit:
    """The phase of the counter's grid fitted to a window's updates (fit_grid)."""

    phase_s: float | None  # the grid instant of the window's first update; None: no grid
    ks: tuple[int, ...]  # each update's grid index, counted from the first
    inliers: tuple[bool, ...]  # which updates placed the phase
    phase_se_s: float | None  # the phase's standard error
    jitter_s: float | None  # the updates' jitter about the grid (robust SD) the tolerance came from
    note: str  # what placed the phase and what was left out, or why there is no grid


def _no_grid(note: str) -> GridFit:
    return GridFit(None, (), (), None, None, note)


def fit_grid(updates: Sequence[tuple[float, float]], period_s: float, idle_sd_s: float | None = None) -> GridFit:
    """Fit the phase of a grid of known period to a window's updates (`updates`: (polled
    midpoint, half the gap of the polls that bracket it)), robust to the few updates published
    far late or polled coarsely at the power cap:

    1. each update's grid index, counted in periods from the update that leaves the others least
       scattered (so no single late update shifts the others' indices); two on one index: no grid;
    2. a first phase at the median of t_k - k x period, and the updates' jitter about it as
       1.4826 x their median absolute deviation (above GRID_MAX_JITTER of the period: no grid),
       at least the idle intervals' SD (`idle_sd_s`) and GRID_MIN_JITTER_S;
    3. an update further from that phase than GRID_OUTLIER_SDS x the jitter plus its own half
       poll gap is an outlier (it keeps its grid instant; it does not place the phase);
    4. the phase is the mean over the rest, each weighted by 1 / (jitter^2 + half gap^2 / 3) (a
       midpoint between polls 2h apart is off by up to h, variance h^2 / 3): an update polled
       coarsely counts less. Its standard error: the larger of the weighted residuals' (sandwich
       form) and the weights' own (1 / sqrt(sum of weights)).

    No grid where fewer than GRID_MIN_INLIERS of the updates (or fewer than two) place the
    phase, or an update lies half a period or more off it (its index is ambiguous)."""
    times = [t for t, _ in updates]
    halves = [h for _, h in updates]
    n = len(times)
    if n < 2:
        return _no_grid(f"{n} update(s) polled in the window (< 2)")

    def indexed(ref: float) -> tuple[list[int], list[float], float, float]:
        # each update's grid index counted from `ref`, its offset t - k x period, their median and
        # robust SD (1.4826 x median absolute deviation)
        ks = [round((t - ref) / period_s) for t in times]
        offsets = [t - k * period_s for t, k in zip(times, ks)]
        mid = statistics.median(offsets)
        return ks, offsets, mid, 1.4826 * statistics.median(abs(o - mid) for o in offsets)

    # the indices from the update that leaves the others least scattered (and no two on one
    # index, where one such exists): a far-late first update would shift every index counted from it
    ks, offsets, first, spread = min((indexed(t) for t in times), key=lambda c: (len(set(c[0])) < n, c[3]))
    ks = [k - ks[0] for k in ks]
    if len(set(ks)) != n:
        a, b = next((x, y) for x, y, i, j in zip(times, times[1:], ks, ks[1:]) if i == j)
        return _no_grid(
            f"two updates {abs(b - a) * 1e3:.1f} ms apart fall on one grid instant of the {period_s * 1e3:.2f} ms period",
        )
    offsets = [t - k * period_s for t, k in zip(times, ks)]
    first = statistics.median(offsets)
    jitter = max(spread, idle_sd_s or 0.0, GRID_MIN_JITTER_S)
    if spread > GRID_MAX_JITTER * period_s:
        return _no_grid(
            f"the updates jitter by {spread * 1e3:.1f} ms (robust SD) about the best grid, more than "
            f"{GRID_MAX_JITTER:g} of the period: the updates do not keep the idle grid",
        )
    inliers = [abs(o - first) <= GRID_OUTLIER_SDS * jitter + h for o, h in zip(offsets, halves)]
    used = [(o, h) for (o, h), ok in zip(zip(offsets, halves), inliers) if ok]
    if len(used) < 2 or len(used) < GRID_MIN_INLIERS * n:
        return _no_grid(
            f"only {len(used)} of {n} updates lie within {GRID_OUTLIER_SDS:g} x {jitter * 1e3:.1f} ms (their "
            "jitter) plus their half poll gap of one grid: the updates do not keep the idle grid",
        )
    weights = [1.0 / (jitter**2 + h**2 / 3) for _, h in used]
    total = sum(weights)
    phase = sum(w * o for w, (o, _) in zip(weights, used)) / total
    worst = max(abs(o - phase) for o in offsets)
    if worst >= period_s / 2:
        return _no_grid(
            f"an update lies {worst * 1e3:.1f} ms off the fitted grid (half a period or more: its grid instant is ambiguous)",
        )
    # the larger of the residuals' (sandwich) and the model's (the jitter and poll gaps assumed)
    # standard errors: with 3-5 updates the residuals alone can come out implausibly small
    sandwich = sum((w * (o - phase)) ** 2 for w, (o, _) in zip(weights, used)) ** 0.5 / total
    se = max(sandwich, (1.0 / total) ** 0.5)
    left_out = [
        f"{(o - phase) * 1e3:+.1f} ms (half poll gap {h * 1e3:.1f} ms)"
        for o, h, ok in zip(offsets, halves, inliers)
        if not ok
    ]
    note = (
        f"phase from {len(used)} of {n} updates polled in the window, weighted by their poll gaps; jitter "
        f"{jitter * 1e3:.2f} ms (robust SD"
        + (f", idle SD {idle_sd_s * 1e3:.2f} ms" if idle_sd_s else "")
        + f"), tolerance {GRID_OUTLIER_SDS:g} x jitter + half poll gap"
        + (
            f"; left out as outliers (kept on their grid instants): {', '.join(left_out)}"
            if left_out
            else "; none left out"
        )
    )
    return GridFit(phase, tuple(ks), tuple(inliers), se, jitter, note)


def grid_edges(
    window: CounterWindow,
    polls: Sequence[tuple[float, float]],
    period_s: float | None,
    idle_sd_s: float | None = None,
) -> CounterWindow:
    """The window with its edges on the counter's regular update grid: the period measured at
    idle (measure_period), the phase fitted to the updates polled inside the window (fit_grid:
    robust to updates published far late or polled coarsely at the cap), the edges the grid's
    instants of the start and end updates, so the window is exactly a whole number of periods.
    Why: under load the polled instant of each update jitters by ~10 ms (an edge at its poll is
    off by ~2% of a 0.5 s window at each end), while the updates themselves keep the idle grid;
    the phase from ~5-10 updates is known to a few ms and the length to the period's precision.
    The joules are unchanged (the same two counter values); executions are interpolated on the
    step loop's log at the grid instants. Where the polls do not show both edges, the updates do
    not keep one grid (fit_grid), or no period is known, the window keeps its polled edges and
    `grid_fit` says why."""
    if period_s is None or not period_s > 0 or not window.ok or len(window.ticks) < 2 or not window.progress:
        return window
    j0, j1 = window.ticks[0].joules, window.ticks[-1].joules
    ups = _bracketed_updates(polls)
    at = {v: t for t, v, _ in ups}
    if j0 not in at or j1 not in at or not at[j1] > at[j0]:
        return attrs.evolve(window, grid_fit="not used: the polls do not show both edges' updates")
    inside_ups = [(t, v, h) for t, v, h in ups if j0 <= v <= j1]
    fit = fit_grid([(t, h) for t, _, h in inside_ups], period_s, idle_sd_s)
    if fit.phase_s is None:
        return attrs.evolve(window, grid_fit=f"not used: {fit.note}")
    phase = fit.phase_s
    n = fit.ks[-1]
    start, end = phase, phase + n * period_s
    at_start = _done_at_steady(window.progress, start)
    done = _done_at_steady(window.progress, end) - at_start
    on_grid = {v: phase + k * period_s for (_, v, _), k in zip(inside_ups, fit.ks)}

    def placed(tick: CounterTick) -> CounterTick:
        t = on_grid.get(tick.joules)
        if t is None:
            return tick
        return attrs.evolve(tick, t_s=t, executions=_done_at_steady(window.progress, t) - at_start)

    return attrs.evolve(
        window,
        start_s=start,
        end_s=end,
        ticks=tuple(placed(t) for t in window.ticks),
        executions_exact=done if done > 0 else None,
        # the phase's standard error: how well each edge's time is known (the length: n x period)
        edge_resolution_s=fit.phase_se_s,
        grid_period_s=period_s,
        grid_fit=fit.note,
        edges_from=(
            f"the counter's update grid: period {period_s * 1e3:.2f} ms measured at idle, phase fitted to "
            f"{sum(fit.inliers)} of the {len(inside_ups)} updates polled in the window, edges {n} periods apart"
        ),
    )


def poll_period(
    read: Callable[[], tuple[float, float] | None],
    *,
    updates: int = 6,
    max_s: float = 0.7,
    every_s: float = 0.002,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> GridPeriod:
    """Poll the counter (`read`: (clock s, J) or None) where nothing runs until `updates` updates
    were seen (or `max_s` passed), and measure its period from them (measure_period). ~0.45 s on
    a 100 ms counter, once per process (NvmlPower.grid_period)."""
    polls: list[tuple[float, float]] = []
    began = clock()
    while clock() - began < max_s:
        got = read()
        if got is not None:
            polls.append(got)
            if len(update_instants(polls)) >= updates:
                break
        sleep(every_s)
    return measure_period(polls)
