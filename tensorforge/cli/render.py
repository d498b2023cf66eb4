"""The prediction as text for people; JSON is for machines. Tables go through a Screen
(screen.py), so they fit the terminal they are printed on and stay whole in files."""

from collections.abc import Iterable, Mapping

from tensorforge.cli.screen import PLAIN, Screen, table
from tensorforge.cli.units import seconds, si
from tensorforge.results.prediction import OperatorPrediction, Prediction

__all__ = ["memory_cell", "memory_level_names", "prediction_text", "table"]


def memory_level_names(target) -> dict[str, str]:
    """What the mappings' memory levels are called on `target`: 'unit_sram' is its per-unit
    SRAM (shared memory on a GPU), 'cache_to_unit' the path from its shared cache (L2)."""
    names = {"dram": "DRAM"}
    try:
        names["unit_sram"] = target.tile_level().name
        cache = target.cache_level()
        if cache is not None:
            names["cache_to_unit"] = f"{cache.name} to unit"
    except (AttributeError, ValueError):
        pass
    return names


def _level(ops: Iterable[OperatorPrediction], names: Mapping[str, str]) -> str:
    """The memory level(s) that bound the memory time of `ops`, named; several joined by '+'."""
    levels = sorted({o.mapping.memory_level for o in ops if o.memory_s > 0})
    return "+".join(names.get(level, level) for level in levels)


def memory_cell(memory_s: float, ops: Iterable[OperatorPrediction], names: Mapping[str, str]) -> str:
    """A memory time with the level that set it: '1.028 ms (shared_memory)'. The binding level
    is not always DRAM: a large GEMM's tiles stream through shared memory faster than DRAM
    could deliver them, and that time can be the larger one."""
    level = _level(ops, names)
    return f"{seconds(memory_s)} ({level})" if level else seconds(memory_s)


def mapping_text(op) -> str:
    m = op.mapping
    if m.search == "relaxation":
        return f"relaxation over {m.space} {m.strategy} mappings"
    if not m.tile:
        return m.strategy
    tile = "x".join(f"{k}{v}" for k, v in m.tile.items()) if m.tile else m.strategy
    split = f" split{m.split}" if m.split > 1 else ""
    return f"{tile}{split}, {m.tiles} tiles, {m.waves} waves"


def search_text(pred: Prediction) -> str:
    """Which kind of bound the search gave: the minimum over every mapping, or a relaxation."""
    ops = [o for w in pred.workloads for o in w.operators]
    cut = [o for o in ops if o.mapping.search == "relaxation"]
    unstated = sorted({o.mapping.strategy for o in ops if o.mapping.search == "unstated"})
    if cut:
        text = (
            f"search: --max-candidates {pred.max_candidates_per_operator} cut the search of "
            f"{len(cut)} of {len(ops)} operators; their bound is a relaxation (peak FLOP rate, "
            "compulsory traffic), <= every mapping of the full space but looser than the minimum"
        )
    else:
        text = "search: exhaustive, every mapping of every operator's space evaluated (the exact minimum)"
    if unstated:
        text += f"; strategies {', '.join(unstated)} do not say how they searched"
    return text


def prediction_text(
    pred: Prediction,
    detail: bool = False,
    screen: Screen = PLAIN,
    levels: Mapping[str, str] | None = None,
    energy=None,
) -> str:
    """The prediction for people: its ceilings, one row per workload (every operator with
    `detail`), the search, the notes. `levels` names the memory levels (memory_level_names);
    `energy` (tensorforge.energy.predicted.PredictedEnergy) adds the energy estimate."""
    names = dict(levels or {"dram": "DRAM"})
    c = pred.ceilings
    ceil = ", ".join(f"{mode} {si(rate, 'FLOP/s')}" for mode, rate in sorted(c.compute.items()))
    if c.vector:
        ceil += "; vector " + ", ".join(f"{p} {si(rate, 'FLOP/s')}" for p, rate in sorted(c.vector.items()))
    if c.special:
        ceil += "; special-function " + ", ".join(f"{p} {si(rate, 'op/s')}" for p, rate in sorted(c.special.items()))
    if c.vector_origin and c.vector_origin != c.origin:
        ceil += f" ({c.vector_origin})"
    if not detail:  # the span of the math modes; --detail lists every rate
        (low, low_rate), (high, high_rate) = (
            min(c.compute.items(), key=lambda kv: kv[1]),
            max(c.compute.items(), key=lambda kv: kv[1]),
        )
        ceil = f"{low} {si(low_rate, 'FLOP/s')} to {high} {si(high_rate, 'FLOP/s')}"
    lines: list[str] = [
        f"PREDICTED  {pred.bound} lower bound on {pred.target} @ {pred.operating_point} ({pred.clock_mhz:g} MHz)",
        screen.wrap(f"ceilings ({c.origin}): DRAM {si(c.dram_bytes_per_s, 'B/s')}; {ceil}"),
        "",
    ]
    estimated = any(w.estimate is not None for w in pred.workloads)
    rows = []
    for w in pred.workloads:
        main = max(w.operators, key=lambda o: o.latency_s)
        row = [
            w.name,
            si(w.flops, "FLOP"),
            si(w.compulsory_bytes, "B"),
            mapping_text(main) if len(w.operators) == 1 else f"{len(w.operators)} ops; top: {main.name}",
            seconds(w.compute_s),
            memory_cell(w.memory_s, w.operators, names),
            seconds(w.latency_s),
            w.bottleneck,
            "/".join(sorted({o.ceiling_origin for o in w.operators})),
            w.search,
        ]
        if estimated and pred.estimate_protocol:
            e = w.estimate
            row += [seconds(e.for_protocol(pred.estimate_protocol)) if e else "-"]
        elif estimated:
            e = w.estimate
            row += [seconds(e.device_s) if e else "-", seconds(e.eager_s) if e else "-"]
        rows.append(row + ["" if w.fits_in_memory else "DOES NOT FIT"])
    headers = [
        "workload",
        "FLOPs",
        "compulsory",
        "mapping",
        "compute",
        "memory (level)",
        "lower bound",
        "bottleneck",
        "ceilings",
        "search",
    ]
    if estimated:
        headers += (
            [f"ESTIMATE {pred.estimate_protocol}"] if pred.estimate_protocol else ["ESTIMATE device", "ESTIMATE eager"]
        )
    optional = ("mapping", "compulsory", "FLOPs", "compute")
    table_text = screen.table(headers + [""], rows, optional=optional)
    if energy is not None and energy.workloads:
        from tensorforge.energy.render import ENERGY_HEADER, energy_cell

        cells = [energy_cell(energy, w.name, pred.estimate_protocol) for w in pred.workloads]
        with_energy = screen.table(
            headers + [ENERGY_HEADER, ""],
            [r[:-1] + [c, r[-1]] for r, c in zip(rows, cells)],
            optional + (ENERGY_HEADER,),
        )
        # the column is one more a narrow screen leaves out: never at the cost of a line there
        # (--wide, --json and --detail show it)
        if "--wide" not in table_text or len(with_energy.splitlines()) <= len(table_text.splitlines()):
            table_text = with_energy
    lines.append(table_text)
    if estimated:
        from tensorforge.estimate.render import basis_line

        short = f"ESTIMATE   not a bound ({pred.estimate_basis_kind}): {short_basis(pred.estimate_basis)}"
        lines += ["", basis_line(pred) if detail else short]
    if detail and energy is not None:
        lines.append(f"energy ({energy.basis_kind or 'none'}): {energy.coefficients_source}")
    if detail:
        for w in pred.workloads:
            lines += ["", f"{w.name}  ({w.spec})"]
            if w.warm_latency_s is not None:
                lines.append(f"lower bound: cold {seconds(w.latency_s)}, warm {seconds(w.warm_latency_s)}")
            if energy is not None and w.name in energy.workloads:
                from tensorforge.energy.render import energy_line

                lines.append(energy_line(energy.workloads[w.name]))
            lines.append(
                screen.table(
                    [
                        "operator",
                        "x",
                        "FLOPs",
                        "mapping",
                        "DRAM traffic",
                        "compute",
                        "memory (level)",
                        "latency",
                        "warm",
                        "bound by",
                        "search",
                    ],
                    [
                        [
                            o.name,
                            o.count,
                            si(o.flops, "FLOP"),
                            mapping_text(o),
                            si(o.mapping.traffic.get("dram", 0) * o.count, "B"),
                            seconds(o.compute_s),
                            memory_cell(o.memory_s, (o,), names),
                            seconds(o.latency_s),
                            "-" if o.warm_latency_s is None else seconds(o.warm_latency_s),
                            o.bottleneck,
                            o.mapping.search,
                        ]
                        for o in w.operators
                    ],
                    optional=("search", "mapping", "FLOPs", "x", "compute", "warm"),
                )
            )
            if w.estimate is not None:
                from tensorforge.estimate.render import OPERATOR_HEADERS, operator_rows, waterfall_lines

                lines.append("")
                lines.append(screen.table(OPERATOR_HEADERS, operator_rows(w)))
                lines += waterfall_lines(w)
    notes = list(pred.notes) + [BOTTLENECK_NOTE] + ([ESTIMATE_NOTE] if estimated else [])
    if detail:
        lines += [
            "",
            f"{pred.candidates} mapping candidates evaluated "
            f"(at most {pred.max_candidates_per_operator} per operator and strategy)",
            search_text(pred),
        ]
        lines += [f"{field}: {state}" for field, state in pred.cache_states.items()]
        lines += [f"note: {n}" for n in notes]
    else:
        lines.append(summary_line(pred, notes))
    return "\n".join(screen.wrap(line) for line in "\n".join(lines).split("\n"))


# Notes every prediction carries: the manual explains them, --detail prints them in full.
BOTTLENECK_NOTE = "the bottleneck is an analytical classification; telemetry does not prove it"
ESTIMATE_NOTE = (
    "the estimate is the expected time (a sum of calibrated, named terms on top of the bound; device = "
    "kernels back to back, eager = launched one by one from Python); it is not a bound and may be beaten"
)
_STANDING = ("latency is a lower bound", BOTTLENECK_NOTE, ESTIMATE_NOTE)


def summary_line(pred: Prediction, notes: list[str]) -> str:
    """The notes in one line: those particular to this prediction by their head, the standing
    ones by number; a cut search in full before them (it changes what the bound is). The
    search of every row is in the table's search column."""
    cut = any(o.mapping.search == "relaxation" for w in pred.workloads for o in w.operators)
    particular = [n.split(": ")[0] for n in notes if not n.startswith(_STANDING)]
    said = f"note: {'; '.join(particular)} (--detail: all {len(notes)} notes)" if particular else ""
    said = said or f"notes: {len(notes)}, with the search and the mapping candidates in --detail"
    return f"{search_text(pred)}; {said}" if cut else said


def short_basis(basis: str | None) -> str:
    """The estimate's basis as one short line: its text without what is in parentheses, up to
    its first comma ('shipped coefficients of NVIDIA H200'). The text itself is the estimate's
    to write; the whole of it stays in the JSON and in --detail."""
    if not basis:
        return ""
    depth, kept = 0, []
    for ch in basis:
        depth += ch == "("
        if depth == 0:
            kept.append(ch)
        depth -= ch == ")" and depth > 0
    text = " ".join("".join(kept).split()).replace(" ,", ",").replace(" ;", ";")
    return text.split(", ")[0].strip()
