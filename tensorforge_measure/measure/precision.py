"""Which arithmetic PyTorch runs: set it for a math mode (`math_mode`) and record it
(`framework_flags`).

Why here and not beside the CUDA loop: the float32 matmul precision and the TF32 switches are
PyTorch-wide, and the CPU backend needs the same switch (precision 'highest' keeps oneDNN from
quietly running fp32 matmuls in bf16). Imports torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

MODE_DTYPES = {
    "fp32": torch.float32,  # fp32 tensors, TF32 forbidden: CUDA-core FMA rate
    "tf32": torch.float32,  # fp32 tensors, TF32 allowed: tensor cores with 10-bit mantissa
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}


def read_or_none(getter: Callable[[], Any]) -> Any:
    # A flag or version that cannot be read is reported as None rather than failing the
    # whole report: e.g. PyTorch >= 2.9 raises on reading the legacy TF32 flags after a
    # program mixed them with the newer fp32_precision API.
    try:
        return getter()
    except Exception:
        return None


def framework_flags() -> dict:
    """The PyTorch flags that change which arithmetic and kernels run. Never raises."""
    b = torch.backends
    flags = {
        "matmul_allow_tf32": read_or_none(lambda: bool(b.cuda.matmul.allow_tf32)),
        "cudnn_allow_tf32": read_or_none(lambda: bool(b.cudnn.allow_tf32)),
        "cudnn_benchmark": read_or_none(lambda: bool(b.cudnn.benchmark)),
        "cudnn_deterministic": read_or_none(lambda: bool(b.cudnn.deterministic)),
        "float32_matmul_precision": read_or_none(lambda: str(torch.get_float32_matmul_precision())),
        # Whether cuBLAS may reduce fp16/bf16 GEMMs in reduced precision (split-K).
        "matmul_allow_fp16_reduced_precision_reduction": read_or_none(
            lambda: bool(b.cuda.matmul.allow_fp16_reduced_precision_reduction)
        ),
        "matmul_allow_bf16_reduced_precision_reduction": read_or_none(
            lambda: bool(b.cuda.matmul.allow_bf16_reduced_precision_reduction)
        ),
        # Newer (>= 2.9) API; None on versions without it.
        "matmul_fp32_precision": read_or_none(lambda: str(b.cuda.matmul.fp32_precision)),
        "cudnn_conv_fp32_precision": read_or_none(lambda: str(b.cudnn.conv.fp32_precision)),  # type: ignore[attr-defined]
    }
    return flags


# Attributes of the newer (PyTorch >= 2.9) precision API, parents before children so a
# restore sets a parent before the children that may inherit from it.
_NEW_API = (
    "",
    "cuda.matmul",
    "cudnn",
    "cudnn.conv",
    "cudnn.rnn",
    "mkldnn",
    "mkldnn.matmul",
    "mkldnn.conv",
    "mkldnn.rnn",
)


def _backend(path: str):
    obj = torch.backends
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    return obj


def _set_matmul_tf32(value: bool) -> None:
    # Legacy allow_tf32 mirrors the precision string (!= 'highest'), so it usually already
    # holds the wanted value. Writing it anyway is not harmless on PyTorch >= 2.9: after
    # precision 'medium' (cuBLAS tf32, oneDNN bf16) it makes the two disagree and PyTorch
    # then refuses get_float32_matmul_precision() as a "mix of legacy and new APIs".
    if torch.backends.cuda.matmul.allow_tf32 != value:
        torch.backends.cuda.matmul.allow_tf32 = value


def _snapshot() -> tuple[tuple | None, dict]:
    try:
        legacy = (
            torch.get_float32_matmul_precision(),
            torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cudnn.allow_tf32,
        )
    except RuntimeError:
        # The program mixed legacy and new TF32 APIs; PyTorch then refuses legacy reads.
        legacy = None
    new = {}
    for path in _NEW_API:
        try:
            new[path] = _backend(path).fp32_precision
        except (AttributeError, RuntimeError):
            pass
    return legacy, new


def _restore(legacy: tuple | None, new: dict) -> None:
    if legacy is not None:
        # Restoring through the legacy setters keeps the legacy API readable afterwards.
        precision, matmul_tf32, cudnn_tf32 = legacy
        torch.set_float32_matmul_precision(precision)
        _set_matmul_tf32(matmul_tf32)
        torch.backends.cudnn.allow_tf32 = cudnn_tf32
    else:
        for path, value in new.items():
            _backend(path).fp32_precision = value


# (float32 matmul precision, cuBLAS TF32, cuDNN TF32) per math mode; fp16/bf16 get the defaults.
_MODE_FLAGS = {
    "fp32": ("highest", False, False),
    "tf32": ("high", True, True),
    "fp16": ("highest", False, True),
    "bf16": ("highest", False, True),
}


@contextlib.contextmanager
def math_mode(mode: str) -> Iterator[torch.dtype]:
    """Set the torch flags for `mode`, yield its tensor dtype, restore the flags on exit.

    Every mode sets all three flags explicitly (fp16/bf16 to PyTorch's defaults, which only
    affect fp32 tensors anyway). Why: the recorded flags must not depend on what ran before;
    after a restore PyTorch >= 2.9 reports the matmul precision as 'ieee' where a fresh process
    reports 'none', and the regression gate rightly refuses to compare differing flags.
    """
    if mode not in MODE_DTYPES:
        raise ValueError(f"unknown math mode {mode!r}; known: {', '.join(MODE_DTYPES)}")
    precision, matmul_tf32, cudnn_tf32 = _MODE_FLAGS[mode]
    legacy, new = _snapshot()
    try:
        torch.set_float32_matmul_precision(precision)
        _set_matmul_tf32(matmul_tf32)
        torch.backends.cudnn.allow_tf32 = cudnn_tf32
        yield MODE_DTYPES[mode]
    finally:
        _restore(legacy, new)
