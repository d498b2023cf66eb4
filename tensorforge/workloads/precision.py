"""Data types and math modes.

A dtype says how operands are stored (and so how many bytes move); a math mode says which
arithmetic actually executes (and so which peak rate applies). They differ in practice: a
float32 GEMM that PyTorch runs with TF32 enabled stores fp32 but executes tf32.
"""

from tensorforge.errors import TensorForgeError, closest

# bytes per element
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}

DTYPE_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8",
    "fp8_e4m3": "fp8",
}

# Math modes a target can declare a rate for. fp16 means fp16 operands with fp32 accumulate
# (what PyTorch/cuBLAS use); fp16_acc16 is the faster fp16-accumulate mode of some GPUs.
MATH_MODES = ("fp32", "tf32", "fp16", "fp16_acc16", "bf16", "fp8", "int8")

# Which math modes may execute a dtype's operands.
ALLOWED_MODES = {
    "fp32": ("fp32", "tf32"),
    "fp16": ("fp16", "fp16_acc16"),
    "bf16": ("bf16",),
    "fp8": ("fp8",),
    "int8": ("int8",),
}

# Elementwise and reduction work runs on the vector (non-tensor) units. A target may declare
# a vector rate per precision (half-precision vector math runs 2-4x the fp32 rate on some GPUs);
# fp32 is always known (it is the fp32 math mode's rate unless declared separately).
VECTOR_MODE = "fp32"
VECTOR_PRECISIONS = ("fp32", "fp16", "bf16")

# The storage type of a math mode's operands (a tf32 GEMM stores fp32).
ELEMENT_TYPE = {
    "fp32": "fp32",
    "tf32": "fp32",
    "fp16": "fp16",
    "fp16_acc16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
}

# Vector precisions that hold every value of a storage type exactly, so elementwise work on
# that type may legitimately run at any of their rates; the bound takes the fastest declared.
# (fp8 and int8 values convert exactly to fp16, bf16 and fp32; bf16 to fp16 would not.)
VECTOR_EXECUTES = {
    "fp32": ("fp32",),
    "fp16": ("fp16", "fp32"),
    "bf16": ("bf16", "fp32"),
    "fp8": ("fp16", "bf16", "fp32"),
    "int8": ("fp16", "bf16", "fp32"),
}


def parse_dtype(value) -> str:
    name = str(value).strip().lower()
    name = DTYPE_ALIASES.get(name, name)
    if name not in DTYPE_BYTES:
        raise TensorForgeError(f"unknown dtype {value!r}{closest(name, DTYPE_BYTES)}; known: {', '.join(DTYPE_BYTES)}")
    return name


def default_math_mode(dtype: str) -> str:
    return ALLOWED_MODES[dtype][0]


def parse_math_mode(value, dtype: str) -> str:
    """The math mode for a matrix operation on `dtype`; None picks the dtype's default."""
    if value is None or value == "":
        return default_math_mode(dtype)
    mode = str(value).strip().lower()
    if mode not in MATH_MODES:
        raise TensorForgeError(
            f"unknown math mode {value!r}{closest(mode, MATH_MODES)}; known: {', '.join(MATH_MODES)}"
        )
    if mode not in ALLOWED_MODES[dtype]:
        raise TensorForgeError(
            f"math mode {mode!r} cannot execute {dtype} operands; allowed: {', '.join(ALLOWED_MODES[dtype])}"
        )
    return mode
