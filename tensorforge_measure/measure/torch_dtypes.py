"""TensorForge dtype names -> torch dtypes, for workload builders (imports torch when called)."""

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def torch_dtype(name: str, what: str = "this PyTorch builder"):
    """The torch dtype for `name`; TypeError when PyTorch cannot run it here (the runner
    records the workload as failed with this message and goes on)."""
    import torch

    if name not in TORCH_DTYPES:
        raise TypeError(f"dtype {name} is not measurable with {what}")
    return getattr(torch, TORCH_DTYPES[name])
