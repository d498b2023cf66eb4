"""Plain-text tables for people; JSON is for machines."""

from collections.abc import Sequence

from .results import Prediction
from .units import seconds, si


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


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
        text = (f"search: --max-candidates {pred.max_candidates_per_operator} cut the search of "
                f"{len(cut)} of {len(ops)} operators; their bound is a relaxation (peak FLOP rate, "
                "compulsory traffic), <= every mapping of the full space but looser than the minimum")
    else:
        text = "search: exhaustive, every mapping of every operator's space evaluated (the exact minimum)"
    if unstated:
        text += f"; strategies {', '.join(unstated)} do not say how they searched"
    return text


def prediction_text(pred: Prediction, detail: bool = False) -> str:
    c = pred.ceilings
    ceil = ", ".join(f"{mode} {si(rate, 'FLOP/s')}" for mode, rate in sorted(c.compute.items()))
    if c.vector:
        ceil += "; vector " + ", ".join(f"{p} {si(rate, 'FLOP/s')}" for p, rate in sorted(c.vector.items()))
    if c.special:
        ceil += "; special-function " + ", ".join(f"{p} {si(rate, 'op/s')}" for p, rate in sorted(c.special.items()))
    if c.vector_origin and c.vector_origin != c.origin:
        ceil += f" ({c.vector_origin})"
    lines: list[str] = [
        f"PREDICTED  {pred.bound} lower bound on {pred.target} @ {pred.operating_point} "
        f"({pred.clock_mhz:g} MHz)",
        f"ceilings ({c.origin}): DRAM {si(c.dram_bytes_per_s, 'B/s')}; {ceil}",
        "",
    ]
    estimated = any(w.estimate is not None for w in pred.workloads)
    rows = []
    for w in pred.workloads:
        main = max(w.operators, key=lambda o: o.latency_s)
        row = [w.name, si(w.flops, "FLOP"), si(w.compulsory_bytes, "B"),
               mapping_text(main) if len(w.operators) == 1 else f"{len(w.operators)} ops; top: {main.name}",
               seconds(w.compute_s), seconds(w.memory_s), seconds(w.latency_s), w.bottleneck,
               "/".join(sorted({o.ceiling_origin for o in w.operators})), w.search]
        if estimated:
            e = w.estimate
            row += [seconds(e.device_s) if e else "-", seconds(e.eager_s) if e else "-"]
        rows.append(row + ["" if w.fits_in_memory else "DOES NOT FIT"])
    headers = ["workload", "FLOPs", "compulsory", "mapping", "compute", "memory",
               "lower bound", "bottleneck", "ceilings", "search"]
    headers += ["ESTIMATE device", "ESTIMATE eager"] if estimated else []
    lines.append(table(headers + [""], rows))
    if estimated:
        from .estimate.render import basis_line
        lines += ["", basis_line(pred)]
    if detail:
        for w in pred.workloads:
            lines += ["", f"{w.name}  ({w.spec})"]
            lines.append(table(
                ["operator", "x", "FLOPs", "mapping", "DRAM traffic", "compute", "memory", "latency", "bound by",
                 "search"],
                [[o.name, o.count, si(o.flops, "FLOP"), mapping_text(o), si(o.mapping.traffic.get("dram", 0) * o.count, "B"),
                  seconds(o.compute_s), seconds(o.memory_s), seconds(o.latency_s),
                  o.bottleneck if o.bottleneck == "compute" else f"{o.bottleneck} ({o.mapping.memory_level})",
                  o.mapping.search]
                 for o in w.operators]))
            if w.estimate is not None:
                from .estimate.render import OPERATOR_HEADERS, operator_rows, waterfall_lines
                lines.append("")
                lines.append(table(OPERATOR_HEADERS, operator_rows(w)))
                lines += waterfall_lines(w)
    lines += ["", f"{pred.candidates} mapping candidates evaluated "
                  f"(at most {pred.max_candidates_per_operator} per operator and strategy)"]
    lines.append(search_text(pred))
    lines += [f"note: {n}" for n in pred.notes]
    lines.append("note: the bottleneck is an analytical classification; telemetry does not prove it")
    if estimated:
        lines.append("note: the estimate is the expected time (a sum of calibrated, named terms on top of "
                     "the bound; device = kernels back to back, eager = launched one by one from "
                     "Python); it is not a bound and may be beaten")
    return "\n".join(lines)
