"""One training step through autograd, for the PyTorch builders of `phase=train` workloads
(tensorforge.Training says what the step holds; the operator names here are the Core's).

    step = TrainStep(training, masters, device)      # masters: the leaf parameters
    def micro(i, weights):                           # one micro-step's forward
        y = MyFunction.apply(x[i], *weights)          # custom Functions name their backward ranges
        return (y,), (dy[i],), (x[i],)                # outputs, their gradients, inputs to differentiate
    return lambda: step(micro)                        # the callable a backend measures

The optimizer's state (momentum, AdamW's m and v) is made at the build by one step on zero
gradients, so every measured call is a steady step and the measured peak memory holds the state.
A call runs `grad_accum` micro-steps: each casts the masters to the compute dtype (mixed
precision; range `cast_weights`, its backward `cast_grads`), runs the builder's forward and
`torch.autograd.grad` from the given output gradients (so the backward is autograd's, on the
device's autograd thread), adds its weight gradients into the first micro-step's (range
`grad_accumulate`), then hands them to PyTorch's fused optimizer (range `optimizer`).

Why autograd.grad and not .backward(): the step starts with no gradient (as
`zero_grad(set_to_none=True)`), so the first micro-step's gradients are taken as they are and only
the later ones are added: PyTorch's AccumulateGrad does the same, and the accumulation then sits
in its own range. Nothing allocates outside the caching allocator and nothing synchronises, so the
call captures as a CUDA graph (the graph's pool holds the step's temporaries; the optimizer's
state is made by the eager calls before capture; AdamW is capturable on CUDA).

Builders run inside the backends' `torch.inference_mode()`: tensors meant for autograd must be made
under `no_inference(torch)`, and the step turns inference mode off around its micro-steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensorforge_measure.measure.op_ranges import operator_range

# A learning rate this small leaves the weights where they were drawn, however long a measurement
# runs, while the optimizer's kernels do all their work (nonzero, so nothing is skipped): the
# seeded output gradients are O(1) per element, far larger than a loss's, and at 1e-4 a GPT-2-sized
# step's weights left bf16's range within a few hundred steps on an H200.
LR = 1e-12
WEIGHT_DECAY = 0.01  # adamw: decoupled weight decay, so its multiply runs as in real training
MOMENTUM = 0.9  # sgd

_CAST: dict[str, Any] = {}  # the cast Function, made on first use (no torch at import)


def no_inference(torch):
    """Context in which tensors are ordinary (autograd-able) even inside inference mode."""
    return torch.inference_mode(False)


def _cast_function(torch):
    if "fn" not in _CAST:

        class CastWeights(torch.autograd.Function):
            """Masters -> compute-dtype copies; the backward casts the gradients back (fp32)."""

            @staticmethod
            def forward(ctx, dtype, *masters):
                ctx.dtypes = [m.dtype for m in masters]
                with operator_range("cast_weights"):
                    return tuple(m.to(dtype) for m in masters)

            @staticmethod
            def backward(ctx, *grads):
                with operator_range("cast_grads"):
                    return (None, *(g.to(d) if g is not None else None for g, d in zip(grads, ctx.dtypes)))

        _CAST["fn"] = CastWeights
    return _CAST["fn"]


def make_optimizer(torch, name: str, params: Sequence[Any], device):
    """PyTorch's fused SGD (momentum) or AdamW over `params`; None for 'none'. Capturable on CUDA
    (the step counter stays on the device, so a CUDA graph can hold it)."""
    if name == "none":
        return None
    cuda = getattr(device, "type", str(device)) == "cuda"
    if name == "sgd":
        return torch.optim.SGD(params, lr=LR, momentum=MOMENTUM, fused=True)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY, fused=True, capturable=cuda)
    raise ValueError(f"unknown optimizer {name!r}")


class TrainStep:
    """A training step over `masters` (leaf tensors that require grad: fp32 under mixed
    precision, the compute dtype otherwise). Call it with a micro-step function."""

    def __init__(self, torch, training, masters: Sequence[Any], device):
        from tensorforge_measure.measure.torch_dtypes import torch_dtype

        self.torch = torch
        self.training = training
        self.masters = list(masters)
        self.dtype = torch_dtype(training.dtype, "this training step")
        self.optimizer = make_optimizer(torch, training.optimizer, self.masters, device)
        self.cast = _cast_function(torch) if training.mixed_precision else None
        if self.optimizer is not None:  # its state exists from the build on, as in any later step
            with no_inference(torch):
                for p in self.masters:
                    p.grad = torch.zeros_like(p)
                self.optimizer.step()
                for p in self.masters:
                    p.grad = None

    def weights(self) -> tuple:
        """The compute-dtype weights of one micro-step."""
        if self.cast is None:
            return tuple(self.masters)
        return self.cast.apply(self.dtype, *self.masters)

    def __call__(self, micro: Callable[[int, tuple], tuple]) -> None:
        torch, masters = self.torch, self.masters
        for p in masters:
            p.grad = None  # zero_grad(set_to_none=True): the first micro-step's gradients are kept as they are
        acc = None
        # outside inference mode throughout, so the optimizer's state is made of ordinary tensors
        with no_inference(torch):
            with torch.enable_grad():
                for i in range(self.training.grad_accum):
                    outputs, grad_outputs, inputs = micro(i, self.weights())
                    grads = torch.autograd.grad(outputs, [*masters, *inputs], grad_outputs)
                    new = grads[: len(masters)]
                    del outputs, grads
                    if acc is None:
                        acc = list(new)
                    else:
                        with operator_range("grad_accumulate"):
                            for a, g in zip(acc, new):
                                a.add_(g)
                    del new
            for p, g in zip(masters, acc or ()):
                p.grad = g
            if self.optimizer is not None:
                with operator_range("optimizer"):
                    self.optimizer.step()
