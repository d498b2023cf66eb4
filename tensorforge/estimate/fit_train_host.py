"""Stage train-host of the fit (fit.py): the host costs of an eager training step
(coefficients.TrainingHostCosts) from the train-host probes (probe_plan._train), against the
estimate's own eager time of each probe (train_host.eager_train_time) with every stage before it
fixed.

Why a least-squares solve and not a search: the probes are tiny steps whose device waits for the
host, so each cost adds its count of seconds to a probe's eager time: the probe's design row is
(1 step, its micro-steps, its backward kernels, 1 if SGD, 1 if AdamW, its optimizer's parameter
tensors), a linear model the seven probes pin down in closed form (a six-dimensional Nelder-Mead
over 7 probes cost seconds and stopped in valleys). Where a device kernel hides part of a cost the
model is not quite linear, so the solve repeats on the linearised residual (Gauss-Newton) a few
times. Residuals are relative (each row over its measured time), as every other stage's loss is;
the costs are never negative (a cost that would be is dropped and the rest solved again). A cost
no probe separates from the others (no accumulation probe: the step's and the micro-step's) is
left at 0 and the report names it.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorforge.estimate.coefficients import TrainingHostCosts
from tensorforge.estimate.implementation import declared_table
from tensorforge.estimate.results import WorkloadEstimate
from tensorforge.estimate.train_host import issuer
from tensorforge.workloads.training import Training

FIELDS = (
    "training.step_s",
    "training.micro_step_s",
    "training.backward_kernel_s",
    "training.optimizer_step_s[sgd]",
    "training.optimizer_step_s[adamw]",
    "training.optimizer_tensor_s",
)
ITERATIONS = 6


def design_row(estimate: WorkloadEstimate, kind, params) -> list[float]:
    """How many of each cost (FIELDS) one eager step of this workload pays."""
    training = Training.of(params)
    if training is None:
        raise ValueError("a train-host probe must be a phase=train workload")
    declared = declared_table(kind, params)
    backward = sum(r.count * r.kernels for r in estimate.operators if issuer(declared, r.name) == "autograd")
    tensors = sum(declared[r.name].tensors for r in estimate.operators if issuer(declared, r.name) == "optimizer")
    return [
        1.0,
        float(training.grad_accum),
        float(backward),
        float(training.optimizer == "sgd"),
        float(training.optimizer == "adamw"),
        float(tensors if training.optimizer != "none" else 0),
    ]


def costs_of(theta: "Sequence[float] | np.ndarray", serial: bool) -> TrainingHostCosts:
    step, micro, backward, sgd, adamw, tensor = (max(0.0, float(v)) for v in theta)
    return TrainingHostCosts(
        measured=True,
        step_s=step,
        micro_step_s=micro,
        backward_kernel_s=backward,
        optimizer_step_s={"sgd": sgd, "adamw": adamw},
        optimizer_tensor_s=tensor,
        serial=serial,
    )


def identified(x: np.ndarray) -> list[int]:
    """The columns of x the rows separate, in FIELDS' order: each kept only where it adds rank
    (a column of zeros, an optimizer no probe ran, adds none)."""
    kept: list[int] = []
    for j in range(x.shape[1]):
        if np.linalg.matrix_rank(x[:, kept + [j]]) == len(kept) + 1:
            kept.append(j)
    return kept


def non_negative(x: np.ndarray, y: np.ndarray, columns: list[int]) -> np.ndarray:
    """Least squares of y on x's `columns` with every coefficient >= 0: the most negative one
    dropped (held at 0) and the rest solved again."""
    theta = np.zeros(x.shape[1])
    active = list(columns)
    while active:
        solution = np.linalg.lstsq(x[:, active], y, rcond=None)[0]
        if (solution >= 0).all():
            theta[active] = solution
            break
        active.pop(int(np.argmin(solution)))
    return theta


def fit_train_host(
    points: Sequence[Any],
    estimates: Callable[[TrainingHostCosts], list[WorkloadEstimate]],
    serial: bool,
) -> tuple[TrainingHostCosts, dict[str, Any]]:
    """(the costs, the report's extra lines). points: WorkloadPoints of eager train-host probes;
    estimates(costs): the estimate of every point with those costs."""
    measured = np.array([p.measured_s for p in points], dtype=float)
    theta = np.zeros(len(FIELDS))
    first = estimates(costs_of(theta, serial))
    x = np.array([design_row(e, p.kind, p.params) for e, p in zip(first, points)]) / measured[:, None]
    columns = identified(x)
    modelled = np.array([e.eager_s for e in first])
    for _ in range(ITERATIONS):
        # the linear model's target: what the costs must add to the estimate without them
        target = (measured - modelled) / measured + x @ theta
        new = non_negative(x, target, columns)
        done = np.allclose(new, theta, rtol=1e-3, atol=1e-9)
        theta = new
        modelled = np.array([e.eager_s for e in estimates(costs_of(theta, serial))])
        if done:
            break
    costs = costs_of(theta, serial)
    extra: dict[str, Any] = {"serial": serial}
    missing = [FIELDS[j] for j in range(len(FIELDS)) if j not in columns]
    if missing:
        extra["not_separated"] = missing
        extra["note"] = "costs no probe separates from the others are left at 0"
    return costs, extra
