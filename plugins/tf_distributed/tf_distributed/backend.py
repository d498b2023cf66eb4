"""The `torch-distributed` measurement backend: a system target measured with one process per
device, launched through torchrun by `tensorforge run` itself.

Which device: a system whose innermost tier links processes through host memory (topology
'host-memory', e.g. `host-cpu-x2`) runs on the host CPU with gloo; every other system runs one
process per GPU with NCCL. Any number of devices: the target's `devices`, on one host.
"""

from tensorforge_measure import MeasurementBackend, Session, Unavailable

# Llama-3-8B's decoder layer (hidden 4096, 32 heads, 8 KV heads, intermediate 14336).
LLAMA3_8B_LAYER = "hidden=4096,layers=1,heads=32,kv_heads=8,intermediate=14336,dtype=bf16"
GPU_COLLECTIVES = (
    "all_reduce_4k",
    "all_reduce_1m",
    "all_reduce_64m",
    "all_reduce_256m",
    "all_reduce_1g",
    "all_gather_64m",
    "all_gather_1g",
    "reduce_scatter_64m",
    "reduce_scatter_1g",
    "all_to_all_256m",
    "broadcast_256m",
)
CPU_COLLECTIVES = (
    "collective:op=all_reduce,bytes=4096,dtype=fp32",
    "collective:op=all_reduce,bytes=1048576,dtype=fp32",
    "collective:op=all_gather,bytes=1048576,dtype=fp32",
)


def device_kind(target) -> str:
    tiers = target.interconnect.tiers if target.interconnect else ()
    return "cpu" if tiers and tiers[0].topology == "host-memory" else "cuda"


class TorchDistributedBackend(MeasurementBackend):
    name = "torch-distributed"
    description = (
        "PyTorch on several devices, one process each through torchrun (NCCL on GPUs, "
        "gloo on CPUs): CUDA events per rank, slowest rank per iteration"
    )
    framework = "torch"

    def claims(self, target) -> bool:
        """Every system target (devices > 1) is measured here unless --backend says otherwise."""
        return getattr(target, "devices", 1) > 1

    def default_suite_for(self, target) -> tuple[str, ...]:
        n = target.devices
        if device_kind(target) == "cpu":
            tiny = f"transformer:hidden=64,layers=2,heads=4,kv_heads=2,intermediate=128,seq=16,dtype=fp32,tp={n}"
            return CPU_COLLECTIVES + ((tiny,) if 4 % n == 0 else ())
        suite = GPU_COLLECTIVES
        if 8 % n == 0:  # Llama-3-8B's 8 KV heads split evenly (or are replicated) up to tp=8
            suite += (
                f"transformer:{LLAMA3_8B_LAYER},batch=1,seq=4096,tp={n}",
                f"transformer:{LLAMA3_8B_LAYER},batch=32,seq=1,phase=decode,context=4096,tp={n}",
            )
        return suite

    def open(self, device_index: int = 0) -> Session:
        raise Unavailable(
            "torch-distributed measures a system target (devices > 1): "
            "tensorforge run --target h200x2 (or another system)"
        )

    def open_for(self, target, device_index: int = 0) -> Session:
        from tf_distributed.launcher import Launch
        from tf_distributed.session import DistributedSession

        if target.devices < 2:
            return self.open(device_index)
        kind = device_kind(target)
        try:
            import torch
        except ImportError as exc:
            raise Unavailable(f"PyTorch is not installed ({exc}); install tensorforge[measure]") from None
        if not torch.distributed.is_available():
            raise Unavailable("this PyTorch build has no torch.distributed")
        if kind == "cuda":
            visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if visible < target.devices:
                raise Unavailable(
                    f"target {target.name} has {target.devices} GPUs; this machine shows {visible} CUDA device(s)"
                )
            if not torch.distributed.is_nccl_available():
                raise Unavailable("this PyTorch build has no NCCL")
        launch = Launch(target.devices, kind)
        try:
            return DistributedSession(launch, target.name)
        except BaseException:
            launch.close(force=True)
            raise
