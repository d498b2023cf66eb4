"""`tensorforge predict`: the lower-bound latency of workloads on a target (PREDICTED)."""

import click

from tensorforge.cli.commands.common import emit, warn_broken
from tensorforge.cli.options import (
    json_option,
    operating_point_option,
    output_options,
    pass_host,
    target_option,
    wide_option,
    workload_options,
)
from tensorforge.cli.screen import PLAIN, detect
from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost


@click.command()
@target_option
@workload_options(default="every plugin's default suite")
@operating_point_option
@click.option(
    "--ceilings",
    "ceilings_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Calibrated ceilings: a calibration document (`tensorforge calibrate --json "
    "> cal.json`) or a capture (its CALIBRATED section); gives a 'calibrated' "
    "lower bound. Refused unless measured on a device the target describes.",
)
@click.option(
    "--force-ceilings",
    is_flag=True,
    help="Use --ceilings even if they were measured on another device (or name none); "
    "the prediction then says whose ceilings it used.",
)
@click.option(
    "--max-candidates",
    type=click.IntRange(1, 1_000_000),
    default=None,
    help="Evaluate at most N mapping candidates per operator and strategy (default "
    "16384: every shipped mapping space, an exhaustive search). A lower N that cuts "
    "a space gives a labelled relaxation: a looser bound, never a higher one.",
)
@click.option(
    "--protocol",
    type=click.Choice(["graph-flushed", "eager-flushed", "graph-warm", "eager-warm"]),
    default=None,
    help="Show the estimate of a measurement taken this way (default: graph-flushed and eager-flushed "
    "side by side): graph-flushed = device time after an L2 flush (TensorForge's harness); eager-flushed = "
    "one eager call after a flush; graph-warm = back-to-back calls without flushes; eager-warm = one eager "
    "call without a flush, timed by an event pair or a wall clock + synchronize (most scripts and published "
    "operator data). The bound is the cold, flushed bound whatever the protocol.",
)
@click.option(
    "--regime",
    type=click.Choice(["burst", "sustained"]),
    default="burst",
    show_default=True,
    help="burst = a short run at the boost clock; sustained = a long-running job, every call at the rate "
    "the board's power limit allows (the target's [power.joules_per_flop]; a target declaring none is "
    "not slowed). The bound is the same either way.",
)
@click.option(
    "--model",
    default=None,
    metavar="MODEL",
    help="Summarise one generative model instead of workloads: a model file (a Hugging Face config.json or "
    "its folder, optionally with overrides: PATH:tp=2,dtype=fp16) or a workload spec "
    "(transformer:config=PATH,tp=2). Predicts its prefill and decode steps at --batch and --context and "
    "derives time to first token, time per output token, tokens/s, energy per token and a memory budget.",
)
@click.option("--batch", type=click.IntRange(1), default=None, help="With --model: sequences per step (default 1).")
@click.option(
    "--context",
    type=click.IntRange(2),
    default=None,
    help="With --model: tokens per sequence: the prompt's, and the decode step's cache (default 2048).",
)
@click.option("--detail", is_flag=True, help="Show every operator of every workload.")
@json_option("the prediction")
@wide_option
@output_options("prediction", "standard output")
@pass_host
def predict(
    host: PluginHost,
    target_name: str,
    specs: tuple[str, ...],
    suites: tuple[str, ...],
    operating_point: str | None,
    ceilings_path: str | None,
    force_ceilings: bool,
    max_candidates: int | None,
    protocol: str | None,
    regime: str,
    model: str | None,
    batch: int | None,
    context: int | None,
    detail: bool,
    as_json: bool,
    wide: bool,
    output: str | None,
    force: bool,
) -> None:
    """Predict the lower-bound latency of workloads on a target (PREDICTED).

    Per workload: FLOPs, compulsory bytes, chosen mapping (tile, waves), compute time,
    memory time, the lower bound, the bottleneck term, which ceilings were used, and the
    energy floor and estimate. --model: one model's serving summary instead.
    """
    from tensorforge.files.output import STDOUT, claim

    warn_broken(host)
    if force_ceilings and not ceilings_path:
        raise TensorForgeError("--force-ceilings applies to --ceilings, which was not given")
    if not model and (batch is not None or context is not None):
        raise TensorForgeError("--batch and --context apply to --model, which was not given")
    if model and (specs or suites):
        raise TensorForgeError("--model predicts one model's steps: -w and --suite do not apply with it")
    if output and output != STDOUT:
        claim(output, "prediction", force).release()  # refused before the work, not after
    from tensorforge.api import run_prediction
    from tensorforge.hardware.ceilings_file import load_ceilings

    ceilings = load_ceilings(ceilings_path, host.target(target_name), force_ceilings) if ceilings_path else None
    target = host.target(target_name)
    estimate: object = True
    if ceilings_path:  # a calibration or capture with the estimate's calibrated coefficients
        from tensorforge.estimate.store import coefficients_in_document

        estimate = coefficients_in_document(ceilings_path, target.name) or True
    from tensorforge.serving.output import prediction_output, resolve_workloads

    steps, chosen = resolve_workloads(host, specs, suites, model, batch, context)
    pred = run_prediction(
        host, target_name, (), (), operating_point, ceilings, max_candidates, chosen, estimate=estimate, regime=regime
    )
    if protocol:
        import attrs

        pred = attrs.evolve(pred, estimate_protocol=protocol)
    to_file = bool(output) and output != STDOUT
    screen = PLAIN if (to_file or as_json) else detect(wide)
    text = prediction_output(pred, target, chosen, ceilings_path, steps, protocol, detail, screen, as_json)
    emit(text, output, "prediction", force, screen)
