"""`predict --model` for people: one header line, a short table (a bound or floor beside the
estimate, each cell with its unit and, for the bound, its direction: '>=' the value is at least
this, '<=' at most), the memory budget in one line."""

from tensorforge.cli.screen import PLAIN, Screen
from tensorforge.cli.units import seconds
from tensorforge.energy.render import joules
from tensorforge.serving.summary import LARGEST_BATCH_SEARCHED, ModelSummary


def decimal_bytes(value: float) -> str:
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.3g}M tokens/s"
    return f"{value:,.0f} tokens/s" if value >= 100 else f"{value:.3g} tokens/s"


def _seconds(value: float | None) -> str:
    return "-" if value is None else seconds(value)


def _at(sign: str, text: str) -> str:
    return text if text == "-" else f"{sign} {text}"


def memory_line(s: ModelSummary) -> str:
    m = s.memory
    parts = " + ".join(f"{decimal_bytes(v)} {k.replace('_', ' ')}" for k, v in m.parts_bytes.items())
    per = "per device" if s.devices > 1 else "memory"
    verdict = "fits" if m.fits else "DOES NOT FIT"
    if m.largest_batch == 0:
        largest = f"not even batch 1 fits at context {s.context}"
    else:
        more = "+" if m.largest_batch_capped else ""
        largest = f"largest batch that fits at context {s.context}: {m.largest_batch}{more}"
    return (
        f"{per} ({m.step}): {parts} = {decimal_bytes(m.total_bytes)} of {decimal_bytes(m.capacity_bytes)}: "
        f"{verdict}; {largest}"
    )


def summary_text(s: ModelSummary, screen: Screen = PLAIN, estimate_line: str = "", energy_line: str = "") -> str:
    devices = f"{s.devices} devices" if s.devices > 1 else "1 device"
    rows = [
        [
            "time to first token",
            _at(">=", seconds(s.time_to_first_token_bound_s)),
            _seconds(s.time_to_first_token_estimate_s),
        ],
        [
            "time per output token",
            _at(">=", seconds(s.time_per_output_token_bound_s)),
            _seconds(s.time_per_output_token_estimate_s),
        ],
        ["output tokens/s", _at("<=", _rate(s.output_tokens_per_s_bound)), _rate(s.output_tokens_per_s_estimate)],
        ["prompt tokens/s", _at("<=", _rate(s.prompt_tokens_per_s_bound)), _rate(s.prompt_tokens_per_s_estimate)],
        [
            "energy per output token",
            _at(">=", joules(s.joules_per_output_token_floor)),
            joules(s.joules_per_output_token_estimate),
        ],
        [
            "energy per prompt token",
            _at(">=", joules(s.joules_per_prompt_token_floor)),
            joules(s.joules_per_prompt_token_estimate),
        ],
    ]
    lines = [
        screen.wrap(f"PREDICTED  {s.model} on {s.target} ({devices}): batch {s.batch}, context {s.context} tokens"),
        "",
        screen.table(["model", "bound / floor", f"ESTIMATE {s.protocol}"], rows),
        "",
        screen.wrap(memory_line(s)),
    ]
    lines += [screen.wrap(line) for line in (estimate_line, energy_line) if line]
    lines += [screen.wrap(f"note: {n}") for n in s.notes]
    if s.memory.largest_batch_capped:
        lines.append(screen.wrap(f"note: the largest-batch search stops at {LARGEST_BATCH_SEARCHED}"))
    return "\n".join(lines) + "\n"
