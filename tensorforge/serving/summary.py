"""One generative model at a batch and a context (`predict --model`), composed from the prediction
of its two steps, each predicted like any workload:

* prefill: the prompt, `context` tokens per sequence, ending in the first output token's logits;
* decode: one new token per sequence over a cache of `context` tokens;

as the model's kind builds them (WorkloadKind.serving). Derived, every figure PREDICTED, a bound
beside an estimate, never confused:

* time to first token = the prefill step; time per output token = the decode step. The bound is
  the warm lower bound (steps run back to back, no L2 flush between them; never above the cold
  bound); the estimate is the one of the chosen protocol (default graph-warm: CUDA-graph steps
  back to back, as serving engines replay decode);
* tokens/s = tokens per step / the step's time (from the bound: an upper bound on the rate);
* joules per token = the step's energy (all its devices) / its tokens: floor and estimate
  (tensorforge.energy.predicted), in the energy window matching the protocol;
* memory per device (WorkloadKind.memory, e.g. weights, KV cache, activations) of the step that
  needs more, against the target's dram_capacity_bytes, and the largest batch whose steps fit at
  this context (a search over the kind's memory, which grows with the batch).

The Core never names the kind: any kind that answers `serving` and `model_file_field` works.
"""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.energy.predicted import PredictedEnergy, window_of
from tensorforge.errors import TensorForgeError
from tensorforge.workloads.kinds import Workload, WorkloadKind
from tensorforge.workloads.suite import parse_fields, resolve_spec

DEFAULT_PROTOCOL = "graph-warm"
LARGEST_BATCH_SEARCHED = 1 << 20  # the largest-batch search stops here (and says so)


@attrs.frozen
class ModelSteps:
    """What `--model` names, resolved: its kind and params, and the two steps as workloads."""

    model: str  # as given
    kind: WorkloadKind
    params: Any
    batch: int
    context: int
    prefill: Workload
    decode: Workload

    @property
    def workloads(self) -> list[tuple[Workload, WorkloadKind]]:
        return [(self.prefill, self.kind), (self.decode, self.kind)]


@attrs.frozen
class StepSummary:
    """One step, all its devices: PREDICTED bound and estimate of its time and energy."""

    step: str  # 'prefill' or 'decode'
    spec: str
    tokens: int  # tokens the step processes (all sequences)
    bound_s: float  # the warm lower bound
    estimate_s: float | None  # the protocol's estimate; None: no estimate
    floor_j: float | None  # None: no energy coefficients
    estimate_j: float | None
    fits_in_memory: bool


@attrs.frozen
class MemoryBudget:
    """Device memory per device (one rank's share), of the step that needs more."""

    step: str
    parts_bytes: Mapping[str, int]
    total_bytes: int
    capacity_bytes: int  # the target's dram_capacity_bytes (per device)
    fits: bool
    largest_batch: int  # the largest batch whose steps fit at this context; 0: not even one sequence
    largest_batch_capped: bool  # the search stopped at LARGEST_BATCH_SEARCHED


@attrs.frozen
class ModelSummary:
    label: str
    model: str
    spec: str  # the model's own spec (before the steps set batch and context)
    target: str
    batch: int
    context: int
    devices: int
    protocol: str  # which estimate the times are (estimate.results.PROTOCOLS)
    energy_window: str  # 'graph' or 'eager' (tensorforge.energy.predicted)
    prefill: StepSummary
    decode: StepSummary
    time_to_first_token_bound_s: float
    time_to_first_token_estimate_s: float | None
    time_per_output_token_bound_s: float
    time_per_output_token_estimate_s: float | None
    output_tokens_per_s_bound: float  # an upper bound: batch / the decode step's lower bound
    output_tokens_per_s_estimate: float | None
    prompt_tokens_per_s_bound: float
    prompt_tokens_per_s_estimate: float | None
    joules_per_output_token_floor: float | None
    joules_per_output_token_estimate: float | None
    joules_per_prompt_token_floor: float | None
    joules_per_prompt_token_estimate: float | None
    memory: MemoryBudget
    notes: tuple[str, ...] = ()


def _kind_steps(kind: WorkloadKind, params: Any, batch: int, context: int, where: str) -> tuple[Any, Any]:
    try:
        steps = kind.serving(params, batch, context)
    except ValueError as exc:
        raise TensorForgeError(f"{where}: {exc}") from None
    if steps is None:
        raise TensorForgeError(
            f"{where}: workload kind {kind.name!r} is not a generative model (no prefill and decode)"
        )
    return steps


def resolve_model(host, text: str, batch: int, context: int) -> ModelSteps:
    """The model `text` names: a workload spec or preset ('transformer:config=PATH,tp=2'), or a
    model file with optional overrides ('PATH' or 'PATH:tp=2') that the one kind reading model
    files builds; then its prefill and decode steps at `batch` and `context`."""
    text = text.strip()
    if batch < 1 or context < 1:
        raise TensorForgeError(f"--model: batch and context must be >= 1, got batch {batch}, context {context}")
    head, _, rest = text.partition(":")
    if not head:
        raise TensorForgeError("--model: give a model file or a workload spec")
    if head in host.preset_names() or head in host.names("workloads"):
        workload, kind = resolve_spec(host, text)
        params = workload.params
    else:
        readers = [k for k in (host.workload_kind(n) for n in host.names("workloads")) if k.model_file_field]
        if not readers:
            raise TensorForgeError(f"--model {head}: no installed workload kind reads model files" + host.broken_hint())
        if len(readers) > 1:
            names = ", ".join(f"{k.name}:{k.model_file_field}={head}" for k in readers)
            raise TensorForgeError(f"--model {head}: several workload kinds read model files; give one of {names}")
        kind = readers[0]
        fields: dict[str, Any] = dict(parse_fields(rest, text))
        fields[kind.model_file_field] = head
        params = kind.parse(fields)
    where = f"--model {text}"
    prefill, decode = _kind_steps(kind, params, batch, context, where)
    return ModelSteps(
        model=text,
        kind=kind,
        params=params,
        batch=batch,
        context=context,
        prefill=Workload(name="prefill", kind=kind.name, params=prefill, spec=kind.spec(prefill)),
        decode=Workload(name="decode", kind=kind.name, params=decode, spec=kind.spec(decode)),
    )


def _need(kind: WorkloadKind, params: Any, batch: int, context: int) -> tuple[str, dict[str, int]]:
    """(the step that needs more, its memory by part) at `batch`."""
    prefill, decode = _kind_steps(kind, params, batch, context, "--model")
    parts = {
        step: {k: int(v) for k, v in kind.memory(p).items()} for step, p in (("prefill", prefill), ("decode", decode))
    }
    step = max(parts, key=lambda s: (sum(parts[s].values()), s == "prefill"))
    return step, parts[step]


def largest_batch(kind: WorkloadKind, params: Any, context: int, capacity: int) -> tuple[int, bool]:
    """(the largest batch whose steps fit in `capacity` bytes per device at `context`, whether the
    search stopped at LARGEST_BATCH_SEARCHED); 0 where one sequence does not fit. A doubling then
    a bisection: memory grows with the batch."""

    def fits(batch: int) -> bool:
        return sum(_need(kind, params, batch, context)[1].values()) <= capacity

    if not fits(1):
        return 0, False
    low, high = 1, 2
    while high <= LARGEST_BATCH_SEARCHED and fits(high):
        low, high = high, high * 2
    if high > LARGEST_BATCH_SEARCHED:
        return low, True
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low, False


def memory_budget(steps: ModelSteps, capacity: int) -> MemoryBudget:
    step, parts = _need(steps.kind, steps.params, steps.batch, steps.context)
    total = sum(parts.values())
    largest, capped = largest_batch(steps.kind, steps.params, steps.context, capacity)
    return MemoryBudget(
        step=step,
        parts_bytes=parts,
        total_bytes=total,
        capacity_bytes=int(capacity),
        fits=total <= capacity,
        largest_batch=largest,
        largest_batch_capped=capped,
    )


def _rate(tokens: int, seconds: float | None) -> float | None:
    return tokens / seconds if seconds else None


def _per(joules: float | None, tokens: int) -> float | None:
    return joules / tokens if joules is not None and tokens else None


def _step(name: str, steps: ModelSteps, pred, energy: PredictedEnergy | None, protocol: str) -> StepSummary:
    workload = getattr(steps, name)
    w = pred.workload(workload.name)
    bound = min(w.latency_s, w.warm_latency_s) if w.warm_latency_s is not None else w.latency_s
    figures = energy.workloads.get(workload.name) if energy is not None else None
    return StepSummary(
        step=name,
        spec=workload.spec,
        tokens=int(steps.kind.tokens(workload.params) or 0),
        bound_s=float(bound),
        estimate_s=w.estimate.for_protocol(protocol) if w.estimate is not None else None,
        floor_j=figures.floor_j if figures is not None else None,
        estimate_j=figures.estimate_j(window_of(protocol)) if figures is not None else None,
        fits_in_memory=w.fits_in_memory,
    )


def summarize(
    steps: ModelSteps, pred, target, energy: PredictedEnergy | None = None, protocol: str | None = None
) -> ModelSummary:
    """The model's summary from the prediction of its two steps (`steps.workloads`) on `target`."""
    protocol = protocol or DEFAULT_PROTOCOL
    prefill = _step("prefill", steps, pred, energy, protocol)
    decode = _step("decode", steps, pred, energy, protocol)
    notes = []
    if energy is not None and not energy.workloads:
        notes.append(f"no energy: {energy.coefficients_source}")
    return ModelSummary(
        label="PREDICTED",
        model=steps.model,
        spec=steps.kind.spec(steps.params),
        target=target.name,
        batch=steps.batch,
        context=steps.context,
        devices=int(steps.kind.devices(steps.decode.params)),
        protocol=protocol,
        energy_window=window_of(protocol),
        prefill=prefill,
        decode=decode,
        time_to_first_token_bound_s=prefill.bound_s,
        time_to_first_token_estimate_s=prefill.estimate_s,
        time_per_output_token_bound_s=decode.bound_s,
        time_per_output_token_estimate_s=decode.estimate_s,
        output_tokens_per_s_bound=decode.tokens / decode.bound_s if decode.bound_s > 0 else float("inf"),
        output_tokens_per_s_estimate=_rate(decode.tokens, decode.estimate_s),
        prompt_tokens_per_s_bound=prefill.tokens / prefill.bound_s if prefill.bound_s > 0 else float("inf"),
        prompt_tokens_per_s_estimate=_rate(prefill.tokens, prefill.estimate_s),
        joules_per_output_token_floor=_per(decode.floor_j, decode.tokens),
        joules_per_output_token_estimate=_per(decode.estimate_j, decode.tokens),
        joules_per_prompt_token_floor=_per(prefill.floor_j, prefill.tokens),
        joules_per_prompt_token_estimate=_per(prefill.estimate_j, prefill.tokens),
        memory=memory_budget(steps, target.dram_capacity_bytes),
        notes=tuple(notes),
    )


def model_data(summary: ModelSummary) -> Mapping[str, Any]:
    """The summary as JSON data (`predict --json`: "model")."""
    from tensorforge.files.serialize import to_data

    return to_data(summary)
