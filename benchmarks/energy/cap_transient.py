"""What the power cap regulates, seen from NVML (docs/energy.md, "Which power the counter counts").

From idle, a bf16 8192 GEMM runs back to back (queued) for SECONDS; every ~5 ms one
nvmlDeviceGetFieldValues call reads the energy counter (NVML_FI_DEV_ENERGY), instantaneous power
(NVML_FI_DEV_POWER_INSTANT) and the averaged power (NVML_FI_DEV_POWER_AVERAGE), with the SM clock.
Printed per counter update: time since the load began, the counter's power over the update
interval, the mean instantaneous power over the same interval, the averaged reading and the SM
clock. If the counter and the instantaneous power agree with each other but stay above the
enforced limit while the averaged reading is at or below it, the cap regulates a moving average
and the board draws above the limit for the first part of a load.

  python benchmarks/energy/cap_transient.py [SECONDS]
"""

import sys
import threading
import time


def main(seconds: float = 3.0) -> int:
    try:
        import pynvml as nvml
        import torch
    except ImportError as exc:
        print(f"cap_transient: {exc}")
        return 2
    if not torch.cuda.is_available():
        print("cap_transient: no CUDA device")
        return 2
    nvml.nvmlInit()
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    limit = nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    torch.cuda.synchronize()
    time.sleep(1.0)  # idle first
    rows: list[tuple[float, float, float, float, int]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            f = nvml.nvmlDeviceGetFieldValues(h, [191, 186, 185])
            clk = nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)
            rows.append(
                (time.perf_counter(), f[0].value.ullVal / 1000, f[1].value.uiVal / 1000, f[2].value.uiVal / 1000, clk)
            )
            time.sleep(0.005)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    time.sleep(0.2)
    began = time.perf_counter()
    events: list = []
    while time.perf_counter() - began < seconds:
        for _ in range(2):
            torch.matmul(a, b, out=out)
        e = torch.cuda.Event()
        e.record()
        events.append(e)
        if len(events) > 10:
            events.pop(0).synchronize()
    torch.cuda.synchronize()
    stop.set()
    thread.join()
    nvml.nvmlShutdown()
    print(f"enforced limit {limit:g} W; t = seconds since the load began")
    print(f"{'t s':>6s} {'counter W':>9s} {'instant W':>9s} {'average W':>9s} {'SM MHz':>6s}")
    last = None
    for i, (t, j, _inst, avg, clk) in enumerate(rows):
        if last is not None and j != last[1]:
            inside = [r[2] for r in rows[last[0] : i + 1]]
            dt = t - rows[last[0]][0]
            print(f"{t - began:6.2f} {(j - last[1]) / dt:9.1f} {sum(inside) / len(inside):9.1f} {avg:9.1f} {clk:6d}")
        if last is None or j != last[1]:
            last = (i, j)
    return 0


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0))
