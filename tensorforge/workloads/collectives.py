"""Collective communication as a problem the model can bound: the operator, its sizes in
nccl-tests' conventions, the bytes each device must move across each tier of a system's links,
and the calibrated curve that replaces the datasheet links once probes have measured them.

Sizes (S, `bytes`) follow nccl-tests (NVIDIA/nccl-tests doc/PERFORMANCE.md): all_reduce and
broadcast S is the buffer; all_gather S is the gathered output (each rank contributes S/n);
reduce_scatter S is each rank's input (each keeps S/n reduced); all_to_all S is each rank's send
buffer; send_recv S is the message. Bus bandwidth = S x factor / time with the factors below,
the bytes a ring moves through each device's link.

Analytical bound, per tier the ranks cross (docs/model.md, "Collectives"):
  bytes per device = f(k) x S / g    k: groups of ranks the tier joins, g: ranks per group
  f: all_reduce 2(k-1)/k (k-1 reduce-scatter steps, k-1 all-gather steps; the least any
  algorithm without in-network reduction moves, Patarasuk & Yuan 2009); with in-switch reduction
  1 (each device sends its data once and receives the sum once); all_gather and reduce_scatter
  (k-1)/k; broadcast 1 per group; all_to_all the share of the buffer addressed outside one's
  group; send_recv 1.
  time >= latency of the outermost tier crossed + max over tiers (bytes per device / bandwidth)
The last byte leaves after bytes/bandwidth and still has to cross one hop, so the sum is a bound.

Calibrated bound (per operation and rank count, from the sweep probes), from each swept size's
fastest sample less an allowance, t_i = fastest x (1 - drift) - resolution (a lower bound must
hold for every later run, not for the median; drift 2% covers what moves between the calibration
window and a measurement window, the same 2% the bound checks tolerate; resolution 1 us is what
a pair of CUDA events cannot resolve, 0.5 us each by the CUDA documentation):
  time >= max(floor, envelope(S)) inside the sweep, max(floor, alpha + S x factor / beta) beyond it
beta: the sweep's asymptotic bus bandwidth (slope between its two largest sizes, never below the
best bus bandwidth it saw); alpha: the largest intercept that keeps the line under every swept
point; floor: the fastest message of the sweep; envelope: through the knots k_i = min(t_j, j >= i)
(a larger message is never faster, so a swept size that happened to be slow, a host-bound sample
at a few KiB, is lowered to the fastest larger size), the straight line (chord) between the two
knots that bracket S (on GPUs; on a CPU, whose caches make gloo's time convex in size, the
smaller of the two knots: `interpolation`); beyond the sweep only the line holds.
Why the chord is a lower bound: NCCL runs each message with the fastest of its algorithm and
protocol choices, each of them latency + size / bandwidth, and a minimum of lines is concave: it
lies on or above every chord between two of its points. Why an envelope at all: NCCL's bus
bandwidth keeps rising from 48 MiB to 3 GiB on two H200s (264 to 349 GB/s), so no single line
is within 10% of the measurements across that range; the chords follow them. The sweep's sizes
(3 x 2^k bytes) are none of the default suite's (powers of two), so the suite's collectives are
bounded at sizes no probe measured.
"""

from collections.abc import Mapping, Sequence

import attrs

from tensorforge.errors import TensorForgeError
from tensorforge.hardware.interconnect import Interconnect, LinkTier
from tensorforge.workloads.precision import VECTOR_MODE
from tensorforge.workloads.problems import Tensor

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
REDUCING = ("all_reduce", "reduce_scatter")


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor: bus bytes per device = factor x S."""
    if n < 2:
        return 0.0
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if op in ("broadcast", "send_recv"):
        return 1.0
    raise TensorForgeError(f"unknown collective {op!r}; known: {', '.join(OPS)}")


@attrs.frozen
class CollectiveProblem:
    """A collective over `ranks` devices (0: every device of the target), consecutive ranks
    `stride` devices apart (1 for tensor parallelism; a pipeline's neighbouring stages are tp
    apart). `input`/`output` name the tensors it reads and writes on each device."""

    op: str
    bytes: int
    ranks: int
    elem_bytes: int
    input: Tensor
    output: Tensor
    stride: int = 1
    math_mode: str = VECTOR_MODE  # the reduction's arithmetic runs on the vector units

    @property
    def flops(self) -> float:
        """Additions per device for the reducing operations: (n-1)/n of the elements. With
        ranks=0 (resolved only against a target) n=2 is assumed, the fewest additions."""
        if self.op not in REDUCING:
            return 0.0
        n = max(2, self.ranks)
        return (self.bytes / self.elem_bytes) * (n - 1) / n

    def reads(self) -> tuple[Tensor, ...]:
        return (self.input,)

    def writes(self) -> tuple[Tensor, ...]:
        return (self.output,)


@attrs.frozen
class TierTraffic:
    tier: str
    groups: int  # k: groups of ranks this tier joins (inside one of its domains)
    ranks_per_group: int  # g: ranks sharing one group's links
    bytes_per_device: float
    seconds: float
    formula: str


def resolve_ranks(problem: CollectiveProblem, devices: int) -> int:
    n = problem.ranks or devices
    if n < 2:
        raise TensorForgeError(
            f"{problem.op} over every device of a one-device target moves nothing: "
            "choose a system target (e.g. h200x2 or h200x8)"
        )
    last = (n - 1) * problem.stride
    if last >= devices:
        raise TensorForgeError(
            f"{problem.op} over {n} ranks{f' {problem.stride} devices apart' if problem.stride > 1 else ''} "
            f"needs {last + 1} devices; the target has {devices} (choose a system target, e.g. h200x2 or h200x8)"
        )
    return n


def _tier_bytes(op: str, S: float, k: int, g: int, n_domain: int, n: int, in_switch: bool) -> tuple[float, str]:
    if op == "all_reduce":
        if in_switch:
            return S / g, "S/g (in-switch reduction)"
        return 2.0 * (k - 1) / k * S / g, "2(k-1)/k*S/g"
    if op in ("all_gather", "reduce_scatter"):
        return (k - 1) / k * S / g, "(k-1)/k*S/g"
    if op == "all_to_all":
        return S * (n_domain - g) / n, "S*(n_domain-g)/n"
    return S / g, "S/g"  # broadcast, send_recv: each group needs the data once


def tier_traffic(problem: CollectiveProblem, interconnect: Interconnect | None, devices: int) -> list[TierTraffic]:
    """Bytes each device must move across each tier the ranks cross, and the time at the tier's
    bandwidth. Assumes traffic between devices of one domain stays on that domain's tier."""
    n = resolve_ranks(problem, devices)
    if n < 2:
        return []
    if interconnect is None:
        raise TensorForgeError(f"{problem.op} over {n} ranks needs a target with an interconnect")
    ids = [r * problem.stride for r in range(n)]
    out: list[TierTraffic] = []
    inner = 1
    for tier in interconnect.tiers:
        # The ranks in the busiest domain of this tier, grouped by the inner tier's domains.
        domains: dict[int, dict[int, int]] = {}
        for d in ids:
            groups = domains.setdefault(d // tier.span, {})
            groups[d // inner] = groups.get(d // inner, 0) + 1
        busiest = max(domains.values(), key=lambda gs: (sum(gs.values()), len(gs)))
        k, n_domain = len(busiest), sum(busiest.values())
        g = max(busiest.values())
        if k >= 2:
            nbytes, formula = _tier_bytes(problem.op, float(problem.bytes), k, g, n_domain, n, tier.in_switch_reduction)
            out.append(TierTraffic(tier.name, k, g, nbytes, nbytes / tier.bytes_per_s, formula))
        if len(domains) == 1:
            break
        inner = tier.span
    return out


def analytical_seconds(
    problem: CollectiveProblem, interconnect: Interconnect | None, devices: int
) -> tuple[float, float, str, list[TierTraffic]]:
    """(latency term, transfer term, the tier that bounds it, per-tier traffic) from the links."""
    traffic = tier_traffic(problem, interconnect, devices)
    if not traffic or interconnect is None:
        return 0.0, 0.0, "none", traffic
    tiers = {t.name: t for t in interconnect.tiers}
    latency = max(tiers[t.tier].latency_s for t in traffic)
    slowest = max(traffic, key=lambda t: (t.seconds, t.tier))
    return latency, slowest.seconds, slowest.tier, traffic


@attrs.frozen
class CollectiveCeiling:
    """A calibrated collective curve for one operation over `ranks` ranks (CALIBRATED).
    `points`: the knots (bytes, seconds) of every swept size: its fastest time less the allowance,
    lowered to the fastest larger size (module docstring); `eager_floor_s`: what one eager call
    of the smallest swept message costs a program whose host cannot run ahead of its device (the
    longer of the host's cost per call and the device's median time: context for estimates and
    readers, never part of the bound)."""

    op: str
    ranks: int
    bus_bytes_per_s: float  # beta
    latency_s: float  # alpha
    floor_s: float  # the fastest message of the sweep
    min_bytes: int
    max_bytes: int
    source: str = ""
    points: tuple[tuple[int, float], ...] = ()
    eager_floor_s: float | None = None
    drift: float = 0.0  # the allowance taken off each swept time (see the module docstring)
    resolution_s: float = 0.0
    # between two knots: "chord" (time concave in size: NCCL on GPUs) or "step" (time only
    # non-decreasing: the smaller knot; gloo on a CPU, whose caches make time convex in size)
    interpolation: str = "step"
    # the sweep's median time per swept size (bytes, seconds), unlowered: what the estimate
    # expects (CALIBRATED context, never part of the bound); empty in curves made before it
    typical: tuple[tuple[int, float], ...] = ()

    def seconds(self, nbytes: float) -> float:
        """Inside the sweep the envelope (the line adds nothing under a chord, and where time is
        not concave it may lie above unswept sizes); beyond it the line; never below the floor."""
        if self.points and self.points[0][0] <= nbytes <= self.points[-1][0]:
            return max(self.floor_s, self.envelope(nbytes))
        line = self.latency_s + bus_factor(self.op, self.ranks) * nbytes / self.bus_bytes_per_s
        return max(self.floor_s, line)

    def envelope(self, nbytes: float) -> float:
        """Between the two knots (`points`) that bracket the size, the chord or the smaller knot
        (`interpolation`); the knot itself at a knot; 0 outside the sweep (only the line and the
        floor hold there)."""
        for (b1, t1), (b2, t2) in zip(self.points, self.points[1:]):
            if b1 <= nbytes <= b2:
                if nbytes == b1 or b2 == b1:
                    return t1
                if nbytes == b2:
                    return t2
                if self.interpolation == "chord":
                    return t1 + (t2 - t1) * (nbytes - b1) / (b2 - b1)
                return min(t1, t2)
        if len(self.points) == 1 and nbytes == self.points[0][0]:
            return self.points[0][1]
        return 0.0

    def expected_s(self, nbytes: float) -> float | None:
        """The estimate's expected time (not a bound): between two swept sizes the chord of
        their medians, below the sweep the smallest size's median, beyond it the largest's plus
        the extra bytes at beta; None for a curve without medians."""
        pts = self.typical
        if not pts:
            return None
        if nbytes <= pts[0][0]:
            return pts[0][1]
        for (b1, t1), (b2, t2) in zip(pts, pts[1:]):
            if b1 <= nbytes <= b2:
                return t1 + (t2 - t1) * (nbytes - b1) / (b2 - b1) if b2 > b1 else t1
        b, t = pts[-1]
        return t + bus_factor(self.op, self.ranks) * (nbytes - b) / self.bus_bytes_per_s


def ceiling_key(op: str, ranks: int) -> str:
    return f"{op}/{ranks}"


INTERPOLATIONS = ("chord", "step")
DRIFT = 0.02
RESOLUTION_S = 1e-6


def fit_ceiling(
    op: str,
    ranks: int,
    points: Sequence[tuple[int, float]],
    source: str = "",
    eager_floor_s: float | None = None,
    drift: float = DRIFT,
    resolution_s: float = RESOLUTION_S,
    interpolation: str = "chord",
    typical: Sequence[tuple[int, float]] = (),
) -> CollectiveCeiling:
    """The calibrated curve from swept (bytes, fastest seconds) points, each lowered by the
    allowance and to the fastest larger size first: see the module docstring. Every point lies
    on or above the curve it returns."""
    pts = sorted((int(b), float(t) * (1.0 - drift) - resolution_s) for b, t in points if t > 0)
    pts = [(b, t) for b, t in pts if t > 0]
    for i in range(len(pts) - 2, -1, -1):  # knots: a larger message is never faster
        pts[i] = (pts[i][0], min(pts[i][1], pts[i + 1][1]))
    if len(pts) < 2:
        raise ValueError(f"{op}: need at least two swept sizes with positive times, got {len(pts)}")
    factor = bus_factor(op, ranks)
    if factor <= 0:
        raise ValueError(f"{op} over {ranks} rank(s) moves nothing across a link")
    best = max(factor * b / t for b, t in pts)
    (b1, t1), (b2, t2) = pts[-2], pts[-1]
    slope = factor * (b2 - b1) / (t2 - t1) if t2 > t1 else best
    beta = max(best, slope)
    alpha = max(0.0, min(t - factor * b / beta for b, t in pts))
    floor = min(t for _, t in pts)
    return CollectiveCeiling(
        op=op,
        ranks=ranks,
        bus_bytes_per_s=beta,
        latency_s=alpha,
        floor_s=floor,
        min_bytes=pts[0][0],
        max_bytes=pts[-1][0],
        source=source,
        points=tuple(pts),
        eager_floor_s=eager_floor_s,
        drift=drift,
        resolution_s=resolution_s,
        interpolation=interpolation,
        typical=tuple(sorted((int(b), float(t)) for b, t in typical if t > 0)),
    )


def ceilings_from_data(data, where: str) -> dict[str, CollectiveCeiling]:
    """Calibrated curves read back from JSON (a calibration or a capture's CALIBRATED ceilings),
    checked field by field; a TensorForgeError names the culprit."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TensorForgeError(f"{where}: 'collectives' must map op/ranks to curves")
    out: dict[str, CollectiveCeiling] = {}
    for key, c in data.items():
        here = f"{where}: collectives[{key!r}]"
        if not isinstance(c, dict):
            raise TensorForgeError(f"{here} must be an object")
        try:
            curve = CollectiveCeiling(
                op=str(c["op"]),
                ranks=int(c["ranks"]),
                bus_bytes_per_s=float(c["bus_bytes_per_s"]),
                latency_s=float(c["latency_s"]),
                floor_s=float(c["floor_s"]),
                min_bytes=int(c["min_bytes"]),
                max_bytes=int(c["max_bytes"]),
                source=str(c.get("source", "")),
                points=tuple((int(b), float(t)) for b, t in c.get("points") or ()),
                eager_floor_s=float(c["eager_floor_s"]) if c.get("eager_floor_s") is not None else None,
                drift=float(c.get("drift", 0.0)),
                resolution_s=float(c.get("resolution_s", 0.0)),
                interpolation=str(c.get("interpolation", "step")),
                typical=tuple((int(b), float(t)) for b, t in c.get("typical") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TensorForgeError(f"{here} is malformed ({type(exc).__name__}: {exc})") from None
        if (
            curve.op not in OPS
            or curve.ranks < 2
            or not (curve.bus_bytes_per_s > 0 and curve.floor_s > 0 and curve.latency_s >= 0)
            or curve.interpolation not in INTERPOLATIONS
        ):
            raise TensorForgeError(
                f"{here}: needs a known op, ranks >= 2, positive bandwidth and floor, "
                f"interpolation one of {', '.join(INTERPOLATIONS)}"
            )
        if key != ceiling_key(curve.op, curve.ranks):
            raise TensorForgeError(f"{here}: key must be {ceiling_key(curve.op, curve.ranks)!r}")
        out[key] = curve
    return out


def calibrated_for(
    problem: CollectiveProblem, n: int, ceilings: Mapping[str, CollectiveCeiling]
) -> CollectiveCeiling | None:
    """The calibrated curve that applies: same operation, same rank count, neighbouring devices."""
    if problem.stride != 1:
        return None
    return ceilings.get(ceiling_key(problem.op, n))


def describe_tier(tier: LinkTier) -> str:
    return f"{tier.name} ({tier.topology}, {tier.bytes_per_s / 1e9:g} GB/s per device per direction)"
