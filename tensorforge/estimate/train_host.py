"""The eager time of a training step (phase=train): the host's timeline of the step's machinery
beside the device's, as a two-stage pipeline like model.eager_time.

Why apart from model.eager_time: that one charges every kernel the host time of a forward kernel
(Python calling one framework op, KernelCosts.host_per_kernel_s). A training step also pays for
machinery no forward has (coefficients.TrainingHostCosts, fitted from the train-host probes):
the step's own Python once, the call into autograd's engine once per micro-step, the engine's
dispatch per backward kernel, the optimizer's Python step once and per parameter tensor. What
issues each operator's kernels is the workload's declaration (Implementation.issued_by), so a
step written elsewhere is estimated from its own launch structure.

The step's order, as TrainStep runs it (tensorforge_measure/measure/training.py): the step's
Python, then per micro-step the forward's kernels (layer by layer), the engine's call and the
backward's kernels; then what runs once after the micro-steps (the gradients' accumulation, an
operator whose count is not a multiple of the micro-steps), then the optimizer's step and its
kernels. On a GPU the host runs ahead of the device, which waits for what the host has not yet
issued; on a CPU (`serial`) the kernels run on the host's own thread, so each host cost waits for
the kernel before it.
"""

from collections.abc import Mapping, Sequence

from tensorforge.estimate.coefficients import EstimateCoefficients, KernelCosts, TrainingHostCosts
from tensorforge.estimate.implementation import DEFAULT, Implementation
from tensorforge.estimate.menus import menu_for
from tensorforge.estimate.results import OperatorEstimate
from tensorforge.workloads.training import Training


def runs_on_host(family: str) -> bool:
    """Whether a device family runs its kernels on the host's own cores (a CPU), so a training
    step's host costs add to its kernels rather than hide behind them (TrainingHostCosts.serial)."""
    return menu_for(family).family == "cpu"


def issuer(declared: Mapping[str, Implementation], name: str) -> str:
    return declared.get(name, DEFAULT).issued_by


def _micro_order(results: Sequence[OperatorEstimate], micro: int) -> list[tuple[OperatorEstimate, int]]:
    """(operator, kernels) in the order one micro-step runs them, each operator count // micro
    times: those repeated most (one per layer) layer by layer, the others before them where they
    come first (the masters' casts) and after them otherwise (a final norm, an LM head)."""
    per = [r.count // micro for r in results]
    repeats = max(per, default=0)
    first = next((i for i, n in enumerate(per) if n == repeats), 0)
    before = [(r, n) for i, (r, n) in enumerate(zip(results, per)) if n != repeats and i < first]
    after = [(r, n) for i, (r, n) in enumerate(zip(results, per)) if n != repeats and i > first]
    order = [(r, r.kernels) for r, n in before for _ in range(n)]
    order += [(r, r.kernels) for _ in range(repeats) for r, n in zip(results, per) if n == repeats]
    order += [(r, r.kernels) for r, n in after for _ in range(n)]
    return order


def update_host_s(costs: TrainingHostCosts, optimizer: str, tensors: int) -> float:
    """The optimizer's Python step over `tensors` parameter tensors (0 without an optimizer)."""
    if optimizer == "none":
        return 0.0
    return costs.optimizer_step_s.get(optimizer, 0.0) + tensors * costs.optimizer_tensor_s


def eager_train_time(
    results: Sequence[OperatorEstimate],
    declared: Mapping[str, Implementation],
    training: Training,
    kernel: KernelCosts,
    costs: TrainingHostCosts,
    slack: float,
) -> float:
    """The eager step's end on the device, from the host's first instruction (the harness's flush
    ahead of it: `slack` of the host's head start)."""
    micro = max(1, training.grad_accum)
    # per micro-step: what Python and autograd issue `micro` times; after the micro-steps what runs
    # another number of times (the gradients' accumulation: micro - 1), then the optimizer
    role = [issuer(declared, r.name) for r in results]
    per_micro = [r.count % micro == 0 and who != "optimizer" for r, who in zip(results, role)]
    forward = [r for r, who, m in zip(results, role, per_micro) if m and who == "python"]
    backward = [r for r, who, m in zip(results, role, per_micro) if m and who == "autograd"]
    once = [r for r, who, m in zip(results, role, per_micro) if not m and who != "optimizer"]
    update = [r for r, who in zip(results, role) if who == "optimizer"]
    host, device = -slack, 0.0

    def wait(seconds: float) -> None:
        nonlocal host
        host = (max(host, device) if costs.serial else host) + seconds

    def issue(r: OperatorEstimate, kernels: int, per_kernel: float) -> None:
        nonlocal host, device
        duration = r.estimate_s / r.count / max(1, r.kernels)
        for _ in range(kernels):
            wait(per_kernel)
            device = max(device, host) + duration

    wait(costs.step_s)
    for _ in range(micro):
        for r, kernels in _micro_order(forward, micro):
            issue(r, kernels, kernel.host_per_kernel_s)
        wait(costs.micro_step_s)
        for r, kernels in _micro_order(backward, micro):
            issue(r, kernels, costs.backward_kernel_s)
    for r in once:
        per_kernel = costs.backward_kernel_s if issuer(declared, r.name) == "autograd" else kernel.host_per_kernel_s
        for _ in range(r.count):
            issue(r, r.kernels, per_kernel)
    for r in update:
        tensors = declared.get(r.name, DEFAULT).tensors
        for _ in range(r.count):
            wait(update_host_s(costs, training.optimizer, tensors))
            issue(r, r.kernels, 0.0)  # the step's Python above launches them
    return device


def training_words(coefficients: EstimateCoefficients) -> str:
    """What the basis says of eager training steps: whose host costs they carry."""
    if coefficients.training.measured:
        return "; eager training steps: autograd's and the optimizer's host costs from the train-host probes"
    return (
        "; eager training steps: autograd's and the optimizer's host costs not probed "
        "(not modelled: every kernel charged as a forward one)"
    )
