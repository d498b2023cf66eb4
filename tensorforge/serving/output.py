"""What `predict` prints beside the bound and the estimate: the energy section of every prediction
(tensorforge.energy.predicted) and, with --model, the model's summary (summary.py). JSON: the
prediction's keys unchanged, plus "energy" and, with --model, "model"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tensorforge.cli.screen import Screen

if TYPE_CHECKING:  # the model's summary is imported with --model only: one workload needs none of it
    from tensorforge.serving.summary import ModelSteps

DEFAULT_BATCH = 1
DEFAULT_CONTEXT = 2048


def resolve_workloads(
    host, specs, suites, model: str | None, batch: int | None, context: int | None
) -> tuple[ModelSteps | None, list]:
    """(the model's steps or None, the workloads to predict with their kinds)."""
    if model:
        from tensorforge.serving.summary import resolve_model

        steps = resolve_model(host, model, batch or DEFAULT_BATCH, context or DEFAULT_CONTEXT)
        return steps, steps.workloads
    from tensorforge.workloads.suite import resolve

    return None, resolve(host, tuple(specs), tuple(suites))


def prediction_output(
    pred,
    target,
    chosen,
    ceilings_path: str | None,
    steps: ModelSteps | None,
    protocol: str | None,
    detail: bool,
    screen: Screen,
    as_json: bool,
) -> str:
    from tensorforge.cli.render import memory_level_names, prediction_text, short_basis
    from tensorforge.energy.coefficients import energy_basis
    from tensorforge.energy.predicted import predicted_energy

    basis = energy_basis(target, ceilings_path)
    energy = predicted_energy(pred, target, basis, {w.name: (k, w.params) for w, k in chosen})
    summary = None
    if steps is not None:
        from tensorforge.serving.summary import summarize

        summary = summarize(steps, pred, target, energy, protocol)
    if as_json:
        from tensorforge.files.serialize import canonical_json, to_data  # cattrs: JSON only

        data: dict[str, Any] = to_data(pred)
        data["energy"] = to_data(energy)
        if summary is not None:
            data["model"] = to_data(summary)
        return canonical_json(data)
    levels = memory_level_names(target)
    if summary is None:
        return prediction_text(pred, detail, screen, levels, energy=energy) + "\n"
    from tensorforge.serving.render import summary_text

    estimate_line = ""
    if pred.estimate_basis:
        estimate_line = f"ESTIMATE   not a bound ({pred.estimate_basis_kind}): {short_basis(pred.estimate_basis)}"
    energy_line = f"energy     {basis.kind} coefficients: {basis.short}" if basis.kind else ""
    text = summary_text(summary, screen, estimate_line, energy_line)
    if detail:
        text = prediction_text(pred, True, screen, levels, energy=energy) + "\n\n" + text
    return text
