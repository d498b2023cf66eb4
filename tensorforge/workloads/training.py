"""Training steps: what `phase=train` adds to a workload kind's forward operators, in one place
so every kind that offers it (GEMM, Conv2D, transformer) describes it alike.

A training step is `grad_accum` micro-steps of forward + backward, then one optimizer update:

- mixed_precision=true: the parameters (master weights), their gradients and the optimizer's
  state are fp32; each micro-step casts the masters to the compute dtype (`cast_weights`) and
  casts the weight gradients back to fp32 (`cast_grads`), as autocast does per use;
- micro-steps after the first add their weight gradients into the first's (`grad_accumulate`,
  grad_accum - 1 times): the first micro-step's gradient becomes the accumulator, as PyTorch's
  AccumulateGrad does after `zero_grad(set_to_none=True)`;
- the optimizer (`optimizer`): sgd (momentum) reads param, grad, momentum and writes param,
  momentum; adamw reads param, grad, m, v and writes param, m, v. Elements are in the master
  precision (fp32 with mixed precision, the workload's dtype otherwise, as PyTorch keeps state in
  the parameter's dtype).

All of it is elementwise work over the parameters: StreamProblems, memory-bound on every target
that exists. The gradient operators of the forward's matrix work are the kind's own (they reuse
MatmulProblem and AttentionProblem shapes); this module only names the parameter-side tensors so
producers and consumers tie up: for a weight `W` the compute-dtype copy is `W`, its master `W_master`
(mixed precision), a micro-step's weight gradient `dW` (compute dtype), `dW_master` (its fp32
cast), the accumulated gradient `W_grad`, the optimizer state `W_momentum` / `W_exp_avg`,
`W_exp_avg_sq`.
"""

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from tensorforge.workloads.precision import DTYPE_BYTES
from tensorforge.workloads.problems import Operator, StreamProblem, Tensor

if TYPE_CHECKING:
    from tensorforge.estimate.implementation import Implementation

TRAIN = "train"
OPTIMIZERS = ("none", "sgd", "adamw")
MIXED_DTYPES = ("bf16", "fp16")  # compute dtypes that mixed precision (fp32 masters) applies to
# Vector FLOPs per parameter of one update (why: counted from PyTorch's fused kernels).
# sgd: buf = momentum*buf + g; p -= lr*buf. adamw: p *= 1 - lr*wd; m lerp g (2); v = b2*v + (1-b2)*g*g
# (4); sqrt(v)/sqrt(bc2) + eps (3, one sqrt); p -= lr/bc1 * m / denom (2).
UPDATE_FLOPS = {"sgd": 4, "adamw": 12}
UPDATE_SPECIAL = {"sgd": 0, "adamw": 1}
STATES = {"none": (), "sgd": ("momentum",), "adamw": ("exp_avg", "exp_avg_sq")}
# PyTorch's multi-tensor apply (the fused optimizers) cuts tensors into chunks of this many
# elements and launches one kernel per this many chunks (ATen/native/cuda/MultiTensorApply.cuh).
CHUNK = 65536
CHUNKS_PER_LAUNCH = 320


def launches(numels: Sequence[int]) -> int:
    """Kernels one multi-tensor-apply call launches over tensors of these sizes."""
    chunks = sum(-(-int(n) // CHUNK) for n in numels)
    return max(1, -(-chunks // CHUNKS_PER_LAUNCH))


def _stream(name, flops, reads, writes, count, dtype, special=0.0) -> Operator:
    return Operator(
        name,
        StreamProblem(
            flops=float(flops),
            read_tensors=tuple(Tensor(n, b) for n, b in reads),
            write_tensors=tuple(Tensor(n, b) for n, b in writes),
            math_mode=dtype,
            special_ops=float(special),
        ),
        count,
    )


@attrs.frozen
class Training:
    """A training step's options, as a workload's params give them (`Training.of(params)`), and
    the parameter-side operators they add. `weights` arguments map each weight's name to its
    elements."""

    optimizer: str = "none"
    grad_accum: int = 1
    mixed_precision: bool = False
    dtype: str = "bf16"  # the compute dtype

    @classmethod
    def of(cls, params) -> "Training | None":
        """The training options of params with phase=train; None for a pass without training."""
        if getattr(params, "phase", None) != TRAIN:
            return None
        return cls(params.optimizer, params.grad_accum, params.mixed_precision, params.dtype)

    @staticmethod
    def check(params, forward: str) -> None:
        """ValueError (one line, naming the field) when params' training fields do not fit
        together; `forward` is what the kind calls its pass without training ('forward', 'prefill')."""
        if getattr(params, "phase", None) != TRAIN:
            given = [
                text
                for text, on in (
                    (f"optimizer={params.optimizer}", params.optimizer != "none"),
                    (f"grad_accum={params.grad_accum}", params.grad_accum != 1),
                    ("mixed_precision=true", params.mixed_precision),
                )
                if on
            ]
            if given:
                raise ValueError(f"{given[0]} applies to phase=train, not phase={params.phase or forward}")
            return
        if params.mixed_precision and params.dtype not in MIXED_DTYPES:
            raise ValueError(
                f"mixed_precision=true (fp32 master weights) needs a compute dtype of "
                f"{' or '.join(MIXED_DTYPES)}, not {params.dtype}"
            )

    @property
    def compute_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def master_dtype(self) -> str:
        """Precision of the parameters, their gradients and the optimizer state."""
        return "fp32" if self.mixed_precision else self.dtype

    @property
    def master_bytes(self) -> int:
        return DTYPE_BYTES[self.master_dtype]

    @property
    def states(self) -> tuple[str, ...]:
        return STATES[self.optimizer]

    def weight_name(self, name: str) -> str:
        """The tensor the optimizer updates: the master under mixed precision, else the weight."""
        return f"{name}_master" if self.mixed_precision else name

    def grad_name(self, name: str) -> str:
        """The gradient the optimizer reads: the accumulator with grad_accum > 1, else the
        micro-step's own gradient in the master precision."""
        if self.grad_accum > 1:
            return f"{name}_grad"
        return f"d{name}_master" if self.mixed_precision else f"d{name}"

    def cast_weights(self, weights: Mapping[str, int]) -> tuple[Operator, ...]:
        """Mixed precision: the masters cast to the compute dtype, once per micro-step."""
        if not self.mixed_precision:
            return ()
        m, e = self.master_bytes, self.compute_bytes
        reads = [(f"{n}_master", k * m) for n, k in weights.items()]
        writes = [(n, k * e) for n, k in weights.items()]
        return (_stream("cast_weights", 0, reads, writes, self.grad_accum, self.master_dtype),)

    def update_operators(self, weights: Mapping[str, int]) -> tuple[Operator, ...]:
        """What follows the backward: the weight gradients cast to fp32 (each micro-step), their
        accumulation (grad_accum - 1 times) and the optimizer (once), in execution order. The
        kind's weight-gradient operators write `d<name>` in the compute dtype."""
        m, e = self.master_bytes, self.compute_bytes
        total = sum(weights.values())
        ops = []
        if self.mixed_precision:
            reads = [(f"d{n}", k * e) for n, k in weights.items()]
            writes = [(f"d{n}_master", k * m) for n, k in weights.items()]
            ops.append(_stream("cast_grads", 0, reads, writes, self.grad_accum, self.master_dtype))
        if self.grad_accum > 1:
            step = "d{}_master" if self.mixed_precision else "d{}"
            acc = [(f"{n}_grad", k * m) for n, k in weights.items()]
            new = [(step.format(n), k * m) for n, k in weights.items()]
            ops.append(_stream("grad_accumulate", total, acc + new, acc, self.grad_accum - 1, self.master_dtype))
        if self.optimizer != "none":
            params = [(self.weight_name(n), k * m) for n, k in weights.items()]
            states = [(f"{n}_{s}", k * m) for n, k in weights.items() for s in self.states]
            grads = [(self.grad_name(n), k * m) for n, k in weights.items()]
            ops.append(
                _stream(
                    "optimizer",
                    UPDATE_FLOPS[self.optimizer] * total,
                    params + grads + states,
                    params + states,
                    1,
                    self.master_dtype,
                    UPDATE_SPECIAL[self.optimizer] * total,
                )
            )
        return tuple(ops)

    def update_kernels(self, numels: Sequence[int]) -> dict[str, int]:
        """Kernels of each parameter-side operator as the shipped PyTorch builders run them: one
        conversion per tensor each way, one in-place add per tensor, and the fused optimizer's
        multi-tensor launches (adamw first adds 1 to its step counters: one more kernel)."""
        n = len(numels)
        return {
            "cast_weights": n,
            "cast_grads": n,
            "grad_accumulate": n,
            "optimizer": launches(numels) + (1 if self.optimizer == "adamw" else 0),
        }

    def update_implementations(self, numels: Sequence[int]) -> "dict[str, Implementation]":
        """update_kernels as the estimate's Implementations, each with what issues its kernels on
        the host: the masters' casts from Python in the forward; the gradients' casts by autograd
        (the cast Function's backward runs inside the engine); the accumulation's adds from
        Python; the optimizer's launches from its step, which walks every parameter tensor."""
        # imported here: the estimate stays out of `--help` and a refusal (tests/test_startup_imports.py)
        from tensorforge.estimate.implementation import Implementation

        issued_by = {"cast_grads": "autograd", "optimizer": "optimizer"}
        return {
            name: Implementation(
                kernels=kernels,
                pattern="elementwise",
                issued_by=issued_by.get(name, "python"),
                tensors=len(numels) if name == "optimizer" else 0,
            )
            for name, kernels in self.update_kernels(numels).items()
        }

    def state_bytes(self, params: int) -> int:
        """Optimizer state (m and v, or the momentum) of `params` elements."""
        return len(self.states) * params * self.master_bytes

    def persistent_bytes(self, params: int) -> int:
        """What lives across steps: the parameters (masters), the gradient handed to the
        optimizer and the optimizer state."""
        return 2 * params * self.master_bytes + self.state_bytes(params)
