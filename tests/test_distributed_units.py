"""The pieces of the distributed backend that need no processes: how the per-operator window
summarises every rank, how per-rank probe results combine into a system's ceilings, how the
calibration store carries collective curves to the Core, the per-operator bound check, the
backend's claim and suites, and the CPU slices the ranks are pinned to."""

import pytest
from tf_distributed.backend import TorchDistributedBackend, device_kind
from tf_distributed.local import cpu_slice
from tf_distributed.lockstep import batch_size
from tf_distributed.operator_window import summarize
from tf_distributed.session import combine_probe_results

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.collectives import CollectiveCeiling
from tensorforge_measure.api import ProbeResult
from tensorforge_measure.calibrate import store
from tensorforge_measure.capture.sections.measured import (
    Measurement,
    OperatorTime,
    OperatorTimes,
    OperatorWindow,
    RankMeasurement,
    ResultCheck,
)
from tensorforge_measure.compare.operators import operator_rows
from tensorforge_measure.measure.stats import summarize as summarize_samples
from tensorforge_measure.measure.timing import TimingPolicy

pytestmark = pytest.mark.usefixtures("clean_plugin_env")


def test_operator_window_takes_the_slowest_and_the_fastest_rank_per_iteration():
    ranks = [
        {
            "operators": [{"mm": 1.0, "ar": 5.0}, {"mm": 1.2, "ar": 4.0}, {"mm": 1.1, "ar": 6.0}],
            "totals": [6.1, 5.3, 7.2],
        },
        {
            "operators": [{"mm": 2.0, "ar": 3.0}, {"mm": 2.2, "ar": 2.0}, {"mm": 2.1, "ar": 4.0}],
            "totals": [5.2, 4.3, 6.2],
        },
    ]
    out = summarize(ranks, {"mm": 1, "ar": 1}, 3)
    rows = {r["operator"]: r for r in out["eager"]["operators"]}
    assert rows["mm"]["time_p50_s"] == 2.1 and rows["mm"]["fastest_rank_p50_s"] == 1.1
    assert rows["ar"]["time_p50_s"] == 5.0 and rows["ar"]["fastest_rank_p50_s"] == 3.0
    assert rows["mm"]["per_rank_p50_s"] == [1.1, 2.1]
    assert out["eager"]["iteration_p50_s"] == 6.1
    assert out["eager"]["coverage"] == pytest.approx((2.1 + 5.0) / 6.1)
    assert out["source"] == "eager" and out["graph"] is None


def test_system_ceilings_are_the_fastest_ranks():
    per_rank = [
        {
            "results": [
                {
                    "compute": {"bf16": 7e14, "fp32": 5e13},
                    "dram_bytes_per_s": 4.2e12,
                    "launch_floor_s": 2.5e-5,
                    "floors": {"kernel_gap_s": 1.5e-6},
                }
            ],
            "failures": {},
        },
        {
            "results": [
                {
                    "compute": {"bf16": 8e14},
                    "dram_bytes_per_s": 4.3e12,
                    "launch_floor_s": 2.2e-5,
                    "floors": {"kernel_gap_s": 1.4e-6},
                }
            ],
            "failures": {},
        },
    ]
    assert combine_probe_results(per_rank) == {
        "compute": {"bf16": 8e14, "fp32": 5e13},
        "dram_bytes_per_s": 4.3e12,
        "launch_floor_s": 2.2e-5,
        "floors": {"kernel_gap_s": 1.4e-6},
    }


class _Session:
    class info:
        fingerprint, name, details = "dist-test", "2 x Test", {}


class _Probe:
    name, backend = "sweep", "torch-distributed"

    def run(self, session):
        curve = {
            "op": "all_reduce",
            "ranks": 2,
            "bus_bytes_per_s": 3.5e11,
            "latency_s": 2e-5,
            "floor_s": 3e-5,
            "min_bytes": 4096,
            "max_bytes": 1 << 32,
            "source": "test",
        }
        return ProbeResult(
            name=self.name,
            method="test",
            compute={"bf16": 8e14},
            dram_bytes_per_s=4.3e12,
            collectives={"all_reduce/2": curve},
        )


def test_calibration_store_carries_collective_curves_to_the_core(tmp_path, monkeypatch):
    curve = CollectiveCeiling(
        op="all_reduce",
        ranks=2,
        bus_bytes_per_s=3.5e11,
        latency_s=2e-5,
        floor_s=3e-5,
        min_bytes=4096,
        max_bytes=1 << 32,
        source="test",
    )
    cal = store.run_probes(_Session(), [_Probe()])
    assert cal.ceilings.collectives == {"all_reduce/2": curve}
    assert cal.probes["sweep"].collectives == {"all_reduce/2": curve}
    assert store.to_ceilings(cal).collectives["all_reduce/2"] == curve
    # stored and read back as the typed calibration
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path))
    store.save(cal)
    assert store.load("dist-test").ceilings.collectives == {"all_reduce/2": curve}


class _Op:
    def __init__(self, name, latency, problem_type="MatmulProblem"):
        self.name, self.count, self.latency_s, self.problem_type = name, 1, latency, problem_type
        self.bottleneck = "interconnect" if problem_type == "CollectiveProblem" else "compute"


class _Pred:
    def __init__(self, *ops):
        self.operators = ops


def _measured(window):
    samples = [1e-5] * 5
    stats = summarize_samples(samples)
    return Measurement(
        math_mode="fp32",
        samples_s=tuple(samples),
        stats=stats,
        stop_reason="stable",
        warmup_iters=1,
        flush_bytes=0,
        peak_memory_bytes=None,
        framework_flags={},
        throughput_flops_per_s=None,
        throughput_bytes_per_s=None,
        ranks=RankMeasurement(
            ranks=2,
            aggregation="slowest",
            per_rank_samples_s=(tuple(samples),) * 2,
            per_rank_p50_s=(1e-5, 1e-5),
            result_check=ResultCheck(ok=True, per_rank=("ok", "ok")),
            peak_memory_per_rank_bytes=(None, None),
            peak_memory_per_rank_method="-",
            operators=window,
        ),
    )


def _time(name, slowest, fastest):
    return OperatorTime(
        operator=name, activities=1, time_p50_s=slowest, fastest_rank_p50_s=fastest, per_rank_p50_s=(fastest, slowest)
    )


def test_operator_bound_check_fastest_rank_for_local_work_slowest_for_collectives():
    window = OperatorWindow(
        source="eager",
        iterations=5,
        method="-",
        notes=(),
        eager=OperatorTimes(
            operators=(_time("mm", 10e-6, 5e-6), _time("ar", 10e-6, 5e-6)), iteration_p50_s=20e-6, coverage=0.97
        ),
    )
    ops = (("mm", "MatmulProblem"), ("ar", "CollectiveProblem"), ("norm", "StreamProblem"))
    rows = operator_rows(
        _Pred(*(_Op(n, 1e-6, t) for n, t in ops)), _Pred(*(_Op(n, 6e-6, t) for n, t in ops)), _measured(window), True
    )
    checks = {r.operator: r.bound_check.verdict for r in rows.operators}
    # mm: its fastest rank (5 us) computed under its 6 us bound; ar: the operation took 10 us
    assert checks == {
        "mm": "BOUND VIOLATION",
        "ar": "within bound",
        "norm": "no verdict: the operator window did not see this operator",
    }
    assert rows.violations == ("mm",) and rows.coverage == 0.97
    missing = operator_rows(_Pred(), None, _measured(None), True)
    assert missing.available is False and missing.reason == "no operator window ran"
    assert operator_rows(_Pred(), None, None, True) is None


def test_batches_stay_short_and_bounded():
    policy = TimingPolicy(budget_s=1.0, max_duty=0.5, burst_s=0.005, sync_batch=10, max_iters=100, min_iters=10)
    assert batch_size([], policy) == 1
    assert batch_size([1e-3] * 5, policy) == 5  # 5 ms burst / 1 ms
    assert batch_size([1e-6] * 5, policy) == 10  # at most sync_batch
    assert batch_size([1.0] * 5, policy) == 1


def test_cpu_slices_split_the_usable_cpus():
    assert [cpu_slice([0, 1, 2, 3], r, 2) for r in (0, 1)] == [[0, 1], [2, 3]]
    assert [cpu_slice([4, 5], r, 2) for r in (0, 1)] == [[4], [5]]
    assert [cpu_slice([0], r, 2) for r in (0, 1)] == [[0], [0]]  # fewer CPUs than ranks: shared


def test_the_backend_claims_systems_and_sizes_its_suite_for_them():
    host, backend = PluginHost(), TorchDistributedBackend()
    assert backend.claims(host.target("h200x2")) and not backend.claims(host.target("h200"))
    assert device_kind(host.target("h200x8")) == "cuda" and device_kind(host.target("host-cpu-x2")) == "cpu"
    x2 = backend.default_suite_for(host.target("h200x2"))
    assert "all_reduce_1g" in x2 and any("tp=2" in s and "seq=4096" in s for s in x2)
    assert any("tp=8" in s for s in backend.default_suite_for(host.target("h200x8")))
    cpu = backend.default_suite_for(host.target("host-cpu-x2"))
    assert all("fp32" in s for s in cpu) and any("tp=2" in s for s in cpu)
    from tensorforge_measure.host import OpsHost

    assert OpsHost().default_backend(host.target("h200x2"), "torch-cuda") == "torch-distributed"
    assert OpsHost().default_backend(host.target("h200"), "torch-cuda") == "torch-cuda"


class _FakeCuda:
    """torch.cuda's _sleep and synchronize, with a device that spins 2e9 cycles per second."""

    def __init__(self):
        self.sleeps: list[int] = []

    def _sleep(self, cycles):
        self.sleeps.append(cycles)

    def synchronize(self, device=None):
        pass


class _FakeTorch:
    def __init__(self):
        self.cuda = _FakeCuda()


def _gpu_local():
    from tf_distributed.local import LocalDevice

    local = object.__new__(LocalDevice)  # no session: only the hold is under test
    local.torch, local.kind, local.device = _FakeTorch(), "cuda", "cuda:0"
    local._hold_cycles, local.hold_s = None, None
    local.marker = lambda: len(local.torch.cuda.sleeps)  # the trial's sleep lies between the two markers
    local.elapsed_s = lambda a, b: 1_000_000 / 2e9 if b > a else 0.0
    return local


def test_the_hold_is_calibrated_once_to_its_length_on_the_device():
    from tf_distributed.local import HOLD_S

    local = _gpu_local()
    local.hold()
    local.hold()
    cycles = int(HOLD_S * 2e9)
    assert local.torch.cuda.sleeps == [1000, 1_000_000, cycles, cycles]  # warm-up, trial, two holds
    assert local.hold_s == pytest.approx(HOLD_S, rel=1e-6)


def test_a_cpu_rank_does_not_hold():
    from tf_distributed.local import LocalDevice

    local = object.__new__(LocalDevice)
    local.kind, local.torch = "cpu", None  # touching torch would fail
    local.hold()


def test_the_eager_small_message_is_the_longer_of_host_cost_and_device_median():
    from tf_distributed.probes import eager_small_message_s

    assert eager_small_message_s({"p50_s": 10e-6, "host_call_s": 32e-6}) == 32e-6
    assert eager_small_message_s({"p50_s": 10e-6, "host_call_s": 4e-6}) == 10e-6
    assert eager_small_message_s({"p50_s": 10e-6}) == 10e-6  # a sweep without the host measurement


def test_a_build_without_the_spin_kernel_times_without_the_wait():
    local = _gpu_local()

    def missing(cycles):
        raise AttributeError("module 'torch._C' has no attribute '_cuda_sleep'")

    local.torch.cuda._sleep = missing
    local.hold()
    local.hold()
    assert local.hold_s is None and local._hold_cycles == 0
