"""What a distributed measurement ran under, recorded with it: the communication library and
its settings, how the GPUs are linked (`nvidia-smi topo -m`) and what NVML says of each GPU.

Why: a collective's speed depends on settings outside the workload (NCCL's algorithm and
protocol choices, NVLink multicast, P2P transports) and on the links, so a capture that does not
record them cannot be compared with another. Nothing here raises: what cannot be read is
recorded as unavailable, with the reason.
"""

import os
import subprocess
from typing import Any

# Settings a calibration depends on: a change in any of them means a new fingerprint.
FINGERPRINT_SETTINGS = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_BUFFSIZE",
    "NCCL_CUMEM_ENABLE",
)
# Settings that change how collectives run; recorded whether set or not (None: unset, NCCL's default).
SETTINGS = FINGERPRINT_SETTINGS + (
    "NCCL_DEBUG",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "CUDA_VISIBLE_DEVICES",
    "GLOO_SOCKET_IFNAME",
    "OMP_NUM_THREADS",
)


def settings() -> dict[str, Any]:
    return {name: os.environ.get(name) for name in SETTINGS}


def library_versions(torch, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"torch": str(torch.__version__), "process_group": "nccl" if kind == "cuda" else "gloo"}
    if kind == "cuda":
        try:
            v = torch.cuda.nccl.version()
            out["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception as exc:
            out["nccl"] = None
            out["nccl_unavailable"] = f"{type(exc).__name__}: {exc}"
    return out


def topology(kind: str) -> dict[str, Any]:
    """`nvidia-smi topo -m` as text (GPUs only)."""
    if kind != "cuda":
        return {"available": False, "reason": "processes on the host CPU: no GPU links to show"}
    try:
        done = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"available": False, "reason": f"nvidia-smi topo -m: {type(exc).__name__}: {exc}"}
    if done.returncode != 0:
        return {
            "available": False,
            "reason": f"nvidia-smi topo -m exited {done.returncode}: {done.stderr.strip()[:200]}",
        }
    return {"available": True, "command": "nvidia-smi topo -m", "text": done.stdout}


def nvml_gpu(index: int) -> dict[str, Any]:
    """What NVML says of one GPU: identity, limits, clocks, and its NVLink links' state."""
    try:
        import pynvml as nvml
    except ImportError:
        return {"available": False, "reason": "pynvml not installed (pip install nvidia-ml-py)"}
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return {"available": False, "reason": f"nvmlInit failed: {type(exc).__name__}: {exc}"}
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)

        def read(fn, *args):
            try:
                value = getattr(nvml, fn)(handle, *args)
                return value.decode() if isinstance(value, bytes) else value
            except Exception:
                return None

        pci = read("nvmlDeviceGetPciInfo")
        links: list[Any] = []
        for link in range(18):  # NVLink 4: up to 18 links per GPU
            state = read("nvmlDeviceGetNvLinkState", link)
            if state is None:
                break
            links.append(int(state))
        return {
            "available": True,
            "index": index,
            "name": read("nvmlDeviceGetName"),
            "uuid": read("nvmlDeviceGetUUID"),
            "pci_bus_id": (pci.busId.decode() if isinstance(pci.busId, bytes) else str(pci.busId)) if pci else None,
            "power_limit_w": (read("nvmlDeviceGetEnforcedPowerLimit") or 0) / 1000.0 or None,
            "max_sm_clock_mhz": read("nvmlDeviceGetMaxClockInfo", 1),
            "max_mem_clock_mhz": read("nvmlDeviceGetMaxClockInfo", 2),
            "nvlink_links_active": sum(links) if links else None,
            "nvlink_links_read": len(links),
        }
    except Exception as exc:
        return {"available": False, "reason": f"{type(exc).__name__}: {exc}"}
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
