"""Timing logic that needs no GPU (stopping rule, flags, versions, math modes), plus one
GPU test that only runs where CUDA really exists."""

import json
import math

import attrs
import pytest

torch = pytest.importorskip("torch")

from tf_cuda.probes import probe_launch_floor  # noqa: E402
from tf_cuda.timing import _batch_size, flush_step, time_cuda, versions  # noqa: E402

from tensorforge_measure.measure.precision import MODE_DTYPES, framework_flags, math_mode  # noqa: E402
from tensorforge_measure.measure.stats import summarize  # noqa: E402
from tensorforge_measure.measure.timing import TimedSamples, TimingPolicy, should_stop  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

POLICY = TimingPolicy(warmup_iters=2, min_iters=5, max_iters=20, target_rel_iqr=0.02, budget_s=1.0)


# --- should_stop -------------------------------------------------------------------


def test_no_samples_never_stops():
    assert should_stop([], POLICY, elapsed_s=100.0) is None


def test_stable_needs_min_iters():
    assert should_stop([1e-3] * 4, POLICY, 0.1) is None  # spread 0 but n < min_iters
    assert should_stop([1e-3] * 5, POLICY, 0.1) == "stable"


def test_noisy_keeps_going_until_max_iters():
    noisy = [1e-3, 2e-3] * 5  # rel_iqr = 1e-3 / 1.5e-3, far above 0.02
    assert should_stop(noisy, POLICY, 0.1) is None
    assert should_stop([1e-3, 2e-3] * 10, POLICY, 0.1) == "max_iters"


def test_budget_is_a_hard_cap_even_below_min_iters():
    assert should_stop([1e-3, 2e-3], POLICY, 1.5) == "budget"
    assert should_stop([1e-3, 2e-3], POLICY, 1.0) is None  # strictly "exceeds"


def test_stable_wins_over_limits():
    assert should_stop([1e-3] * 20, POLICY, 5.0) == "stable"


def test_threshold_is_inclusive():
    samples = [1.0, 2.0, 3.0, 4.0, 5.0]  # rel_iqr = (4 - 2) / 3
    assert should_stop(samples, attrs.evolve(POLICY, target_rel_iqr=2 / 3), 0.0) == "stable"
    assert should_stop(samples, attrs.evolve(POLICY, target_rel_iqr=0.66), 0.0) is None


def test_batch_size_adapts_to_slow_iterations():
    assert _batch_size([], POLICY) == 1  # unknown cost: look after the first one
    assert _batch_size([1e-4] * 3, POLICY) == 10  # fast: full batch
    assert _batch_size([0.5] * 3, POLICY) == 1  # slow: sync every iteration


def test_policy_validation():
    with pytest.raises(ValueError, match=r"max_iters \(5\) must be >= min_iters \(10\)"):
        TimingPolicy(min_iters=10, max_iters=5)
    with pytest.raises(ValueError, match="flush_bytes must be >= 0, got -1"):
        TimingPolicy(flush_bytes=-1)
    with pytest.raises(ValueError, match="budget_s must be > 0, got 0"):
        TimingPolicy(budget_s=0)


def test_timed_samples_rejects_unknown_stop_reason():
    with pytest.raises(ValueError, match="stop_reason"):
        TimedSamples(samples_s=(1.0,), stats=summarize([1.0]), stop_reason="bored", warmup_iters=0, flush_bytes=0)


# --- flags and versions ------------------------------------------------------------


def test_framework_flags_is_json_dict():
    flags = framework_flags()
    for key in (
        "matmul_allow_tf32",
        "cudnn_allow_tf32",
        "cudnn_benchmark",
        "cudnn_deterministic",
        "float32_matmul_precision",
    ):
        assert key in flags
    assert flags["float32_matmul_precision"] in ("highest", "high", "medium")
    json.dumps(flags)


def test_versions_is_json_dict():
    info = versions()
    assert info["torch"] == torch.__version__
    assert info["cuda_available"] == torch.cuda.is_available()
    if not torch.cuda.is_available():
        assert info["device_name"] is None and info["l2_cache_bytes"] is None and info["device_uuid"] is None
    json.dumps(info)


def test_versions_records_the_board_apart_from_the_fingerprint(monkeypatch):
    # a stand-in for one device's properties: the fields versions() reads, and the board's UUID
    from types import SimpleNamespace

    from tf_cuda import timing as cuda_timing
    from tf_cuda.backend import fingerprint

    def props(uuid):
        return SimpleNamespace(
            name="NVIDIA H200",
            major=9,
            minor=0,
            multi_processor_count=132,
            total_memory=150 << 30,
            L2_cache_size=60 << 20,
            uuid=uuid,
        )

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda_timing, "cuda_device", lambda device=None: torch.device("cuda", 0))
    boards = []
    for uuid in ("6f1c2a90-0000-4000-8000-000000000001", "6f1c2a90-0000-4000-8000-000000000002"):
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev, uuid=uuid: props(uuid))
        boards.append(cuda_timing.versions())
    assert [b["device_uuid"] for b in boards] == [
        "6f1c2a90-0000-4000-8000-000000000001",
        "6f1c2a90-0000-4000-8000-000000000002",
    ]
    assert fingerprint(boards[0]) == fingerprint(boards[1])  # one model: one calibration store
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev: props(None))
    assert cuda_timing.versions()["device_uuid"] is None  # a PyTorch without the field says nothing


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error path")
def test_time_cuda_without_cuda_raises_clearly():
    with pytest.raises(RuntimeError, match="CUDA"):
        time_cuda(lambda: None, POLICY)


def test_the_flush_passes_over_its_bytes_writing_or_reading():
    # on the CPU: the same tensor calls the CUDA flush makes, one pass over flush_bytes
    assert flush_step(torch, 0, "cpu") is None
    write = flush_step(torch, 1000, "cpu")
    buffer = write.__self__  # the int32 buffer the write flush zeroes
    assert buffer.dtype == torch.int32 and buffer.numel() == 250
    buffer.fill_(7)
    write()
    assert int(buffer.abs().sum()) == 0
    read = flush_step(torch, 1000, "cpu", "read")
    total = read()  # a sum over 125 int64 words: one read pass, nothing written back
    assert total.dtype == torch.int64 and total.dim() == 0


# --- math_mode ---------------------------------------------------------------------


def _legacy():
    return (
        torch.get_float32_matmul_precision(),
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )


@pytest.fixture
def restore_flags():
    saved = _legacy()
    yield
    torch.set_float32_matmul_precision(saved[0])  # also resets allow_tf32 to match
    torch.backends.cudnn.allow_tf32 = saved[2]
    assert _legacy() == saved


@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
@pytest.mark.parametrize("cudnn_tf32", [False, True])
def test_math_mode_sets_and_restores(restore_flags, precision, cudnn_tf32):
    # Legacy allow_tf32 follows the precision string, so only precision and cudnn are set.
    torch.set_float32_matmul_precision(precision)
    torch.backends.cudnn.allow_tf32 = cudnn_tf32
    before = _legacy()
    with math_mode("fp32") as dtype:
        assert dtype is torch.float32
        assert _legacy() == ("highest", False, False)
    assert _legacy() == before
    with math_mode("tf32") as dtype:
        assert dtype is torch.float32
        assert _legacy() == ("high", True, True)
    assert _legacy() == before
    for mode, want in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        with math_mode(mode) as dtype:
            assert dtype is want and MODE_DTYPES[mode] is want
            # half modes set PyTorch's defaults explicitly, so recorded flags never depend
            # on what ran before (the gate compares them)
            assert _legacy() == ("highest", False, True)
    assert _legacy() == before


def test_math_mode_restores_on_exception(restore_flags):
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    before = _legacy()
    with pytest.raises(KeyError, match="boom"):
        with math_mode("tf32"):
            raise KeyError("boom")
    assert _legacy() == before


def test_math_mode_rejects_unknown():
    with pytest.raises(ValueError, match="fp8"):
        with math_mode("fp8"):
            pass


@pytest.mark.skipif(
    not hasattr(torch.backends.cuda.matmul, "fp32_precision"), reason="PyTorch without the fp32_precision API"
)
def test_math_mode_restores_new_api_state(restore_flags):
    # A program that used the newer API: PyTorch refuses legacy reads in this mixed state,
    # so math_mode must snapshot and restore the new-API values instead.
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    with math_mode("fp32"):
        assert _legacy() == ("highest", False, False)
    assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert framework_flags()["matmul_fp32_precision"] == "tf32"


# --- real GPU ----------------------------------------------------------------------


@pytest.mark.gpu
@needs_cuda
def test_gpu_launch_floor_and_small_matmul():
    policy = TimingPolicy(
        warmup_iters=3, min_iters=10, max_iters=100, target_rel_iqr=0.05, budget_s=1.0, flush_bytes=64 << 20
    )
    launch = probe_launch_floor(policy)
    assert math.isfinite(launch.seconds) and 0 < launch.seconds < 1e-3
    assert "flush_bytes=0" in launch.method  # forced off for the launch probe

    a = torch.randn(512, 512, device="cuda")
    b = torch.randn(512, 512, device="cuda")
    c = torch.empty(512, 512, device="cuda")
    timed = time_cuda(lambda: torch.matmul(a, b, out=c), policy)
    assert timed.stop_reason in ("stable", "budget", "max_iters")
    assert 1 <= len(timed.samples_s) <= policy.max_iters
    assert all(math.isfinite(t) and t > 0 for t in timed.samples_s)
    assert timed.stats == summarize(timed.samples_s)
    s = timed.stats
    assert s.n == len(timed.samples_s)
    assert s.min <= s.p10 <= s.p50 <= s.p90 <= s.max
    assert (timed.warmup_iters, timed.flush_bytes) == (3, 64 << 20)
    if timed.stop_reason == "stable":
        assert s.n >= policy.min_iters and s.rel_iqr <= policy.target_rel_iqr
    # The launch floor bounds any single-kernel iteration from below (loosely: event noise).
    assert s.p50 > 0.5 * launch.seconds
    torch.testing.assert_close(c, a @ b)


# --- the matmul ceiling's long-K shapes ------------------------------------------------


def _fake_matmul(rates, monkeypatch):
    """probe_matmul on no device: each shape's fastest time from a rate table (flop/s)."""
    from tf_cuda import probes

    def fastest(n, dtype, policy, dev, shape=None):
        m, nn, k = shape or (n, n, n)
        return 2.0 * m * nn * k / rates(shape or (n, n, n)), 0.004 if shape else 0.001

    monkeypatch.setattr(probes, "_matmul_fastest", fastest)
    monkeypatch.setattr(probes, "cuda_device", lambda device=None: device)
    return probes


def test_a_long_k_gemm_faster_than_every_square_sets_the_ceiling(monkeypatch):
    """The TF32 2048x8192x8192 GEMM that ran above the square sweep's best (H200): the ceiling
    is the fastest shape timed, and its spread is that shape's."""
    probes = _fake_matmul(lambda s: 415e12 if s == (2048, 8192, 8192) else 400e12, monkeypatch)
    probe = probes.probe_matmul("tf32", device="cpu", memory_cap_bytes=1 << 40)
    assert probe.best_flops_per_s == pytest.approx(415e12)
    assert probe.best_n == 0 and probe.fastest_spread == 0.004
    assert [shape for shape, _ in probe.long_k] == list(probes.LONG_K_SHAPES)
    assert "2048, 8192, 8192" in probe.method


def test_squares_keep_the_ceiling_when_faster_and_fp32_times_no_long_k(monkeypatch):
    probes = _fake_matmul(lambda s: 900e12 if s[0] == s[1] == s[2] else 800e12, monkeypatch)
    probe = probes.probe_matmul("bf16", device="cpu", memory_cap_bytes=1 << 40)
    assert probe.best_flops_per_s == pytest.approx(900e12) and probe.best_n > 0
    assert probe.fastest_spread == 0.001 and len(probe.long_k) == len(probes.LONG_K_SHAPES)
    assert probes.probe_matmul("fp32", device="cpu", memory_cap_bytes=1 << 40).long_k == ()
    # a caller's own sizes are a square sweep only
    assert probes.probe_matmul("bf16", sizes=(1024,), device="cpu", memory_cap_bytes=1 << 40).long_k == ()
