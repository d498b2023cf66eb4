"""The energy window of `tensorforge run`: the device's energy counter (and the host CPU's beside
it) opened for the run, and per workload a window of its own after the timings (docs/energy.md)."""

import functools

from tensorforge.api import one_line
from tensorforge_measure.api import Unavailable
from tensorforge_measure.run.state import RunState


class EnergyWindows(RunState):
    """The run's energy counters and each workload's energy window."""

    def _open_power(self, session):
        """The energy counter for the energy windows, or why there is none: the session's own
        (`session.energy_counter()`: NVML's on a CUDA device, RAPL where the host CPU is the
        device measured), whatever the backend is called."""
        if not self.opts.energy:
            return None, "energy windows disabled (--no-energy)"
        own = getattr(session, "energy_counter", None)
        if own is None:
            return None, f"the {self.opts.backend} backend's sessions have no energy counter"
        try:
            return own(), None
        except Unavailable as exc:
            return None, str(exc)

    def _open_host_energy(self):
        """The host CPU's counter, read beside the device's where the backend declares
        `host_energy_beside` (the shipped one where a stranger's is offered too: host.py), or why not."""
        if not (self.opts.energy and getattr(self.backend, "host_energy_beside", False)):
            return None, None
        source = self.ops.one_for("host_energy")
        sources = [source] if source is not None else []
        if not sources:
            if self.ops.values("host_energy"):  # offered, but by strangers only, two or more
                return None, "host energy sources passed over: `tensorforge list-plugins` says why"
            return None, "no host energy counter installed (tensorforge_measure_register_host_energy)"
        try:
            return sources[0].open(), None
        except Unavailable as exc:
            return None, str(exc)
        except Exception as exc:  # a broken host-energy plugin costs the host's joules, not the run
            return None, f"host energy source {sources[0].name!r} failed: {one_line(exc)}"

    def _energy_window(self, session, prepared, fields, workload):
        """MEASURED energy: a window of its own after the timings and telemetry (docs/energy.md);
        None where no counter is open and energy windows are off; its failure costs the window."""
        from tensorforge_measure.energy.execution import energy_window
        from tensorforge_measure.energy.measure import measure_energy, unavailable

        if not self.opts.energy:
            return None
        counter = self.power
        if counter is None:
            return unavailable(str(self.power_reason), self.opts.energy_s)
        # the host CPU beside the device: its counter at the same edges, where the backend asks
        beside = bool(getattr(self.backend, "host_energy_beside", False))
        sustained = [t.stats.p50 for t in fields.get("modes") or () if t.regime == "sustained" and t.mode == "eager"]
        per_call = sustained[0] if sustained else fields["stats"].p50
        tokens = self._tokens(workload)
        queue_event = getattr(session, "queue_event", None)
        measure = functools.partial(
            measure_energy,
            synchronize=getattr(session, "synchronize", lambda: None),
            power=counter,
            min_s=self.opts.energy_s,
            min_updates=self.opts.energy_updates or None,
            tokens=tokens,
            # on a device with events the executions stay queued while the host reads the counter
            event=queue_event if callable(queue_event) else None,
            rapl=self.rapl if beside else None,
            rapl_reason=self.rapl_reason if beside else None,
        )
        # a host-bound workload's window replays a device graph of it, at the device's pace, where
        # the session captures graphs (energy/execution.py)
        replays = getattr(session, "graph_replays", None)
        replays = replays if callable(replays) else None
        try:
            m = energy_window(
                prepared.fn,
                fields,
                lambda fn, per, **kw: measure(fn, per_call_s=per, **kw),
                replays,
                per_call,
                # the host's launch time decides too where a graph is possible (graph_window.py)
                synchronize=getattr(session, "synchronize", None) if replays is not None else None,
            )
            if m.execution == "graph" or "graph failed" in (m.execution_reason or ""):
                self.say(f"  energy window: {m.execution} ({m.execution_reason})")
            return m
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            return unavailable(f"energy window failed: {one_line(exc)}", self.opts.energy_s)

    def _tokens(self, workload) -> int | None:
        """Tokens one execution of `workload` processes, as its kind answers (WorkloadKind.tokens);
        None where the kind counts none or its answer fails (the joules per token go unsaid)."""
        try:
            tokens = self.core.workload_kind(workload.kind).tokens(workload.params)
        except Exception:
            return None
        return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else None
