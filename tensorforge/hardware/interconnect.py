"""How the devices of a system target reach each other: tiers of links, innermost first, each
figure with its source.

A system target is a `Target` with `devices` > 1 and an `Interconnect`. Each tier joins its
devices into domains of `span` devices: NVLink through the NVSwitch chips of one HGX board joins
8, InfiniBand between two such boards joins 16. Spans grow from tier to tier, each divides the
next, and the outermost span is the system's device count. Why spans rather than a graph: the
collective bounds (collectives.py) need, for each tier a collective crosses, how many groups of
ranks it connects and how many ranks share one group's links; a span says exactly that for the
switched and hierarchical systems TensorForge ships, and stays writable in a TOML target file.

Bandwidth is per device and per direction (what one device can send while it receives as much),
the convention of nccl-tests' bus bandwidth, so a collective's per-device bytes divide by it
directly. Latency is one hop across the tier, a lower bound on any message that crosses it.
"""

import attrs

# switch: every device of a domain reaches every other through switches at full rate (NVSwitch,
# an InfiniBand fat tree); direct: point-to-point links (NVLink bridges); ring: neighbours only;
# pcie: through the host's PCIe tree; host-memory: processes on one CPU sharing its memory.
TOPOLOGIES = ("switch", "direct", "ring", "pcie", "host-memory")


@attrs.frozen
class LinkTier:
    """One tier of links. `bytes_per_s` is per device per direction; `latency_s` is one hop (0
    where no trustworthy figure exists: the bound stays a bound, only looser);
    `in_switch_reduction` says the tier's switches can add the data passing through them
    (NVLink SHARP in third-generation NVSwitch, SHARP in InfiniBand switches)."""

    name: str
    span: int
    bytes_per_s: float
    latency_s: float = 0.0
    topology: str = "switch"
    in_switch_reduction: bool = False


@attrs.frozen
class Interconnect:
    tiers: tuple[LinkTier, ...]

    def tier(self, name: str) -> LinkTier | None:
        return next((t for t in self.tiers if t.name == name), None)


def validate_interconnect(name: str, devices: int, interconnect: Interconnect | None) -> None:
    """Raise ValueError describing the first thing wrong with a system's device count and links."""
    if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        raise ValueError(f"target {name!r}: devices must be an integer >= 1, got {devices!r}")
    if interconnect is None:
        if devices > 1:
            raise ValueError(f"target {name!r}: {devices} devices need an interconnect (how they are linked)")
        return
    if not isinstance(interconnect, Interconnect) or not interconnect.tiers:
        raise ValueError(f"target {name!r}: interconnect declares no tier")
    previous = 1
    seen = set()
    for tier in interconnect.tiers:
        where = f"target {name!r}: interconnect tier {tier.name!r}"
        if not tier.name or tier.name != tier.name.strip() or tier.name in seen:
            raise ValueError(
                f"target {name!r}: interconnect tier names must be non-empty and unique, got {tier.name!r}"
            )
        seen.add(tier.name)
        if tier.topology not in TOPOLOGIES:
            raise ValueError(f"{where}: topology must be one of {', '.join(TOPOLOGIES)}, got {tier.topology!r}")
        if not (tier.bytes_per_s > 0):
            raise ValueError(f"{where}: bytes_per_s must be > 0, got {tier.bytes_per_s!r}")
        if not (tier.latency_s >= 0):
            raise ValueError(f"{where}: latency_s must be >= 0, got {tier.latency_s!r}")
        if tier.span <= previous or tier.span % previous:
            raise ValueError(
                f"{where}: span {tier.span} must be a multiple of the previous tier's "
                f"span ({previous}) and larger than it"
            )
        previous = tier.span
    if previous != devices:
        raise ValueError(
            f"target {name!r}: the outermost interconnect tier spans {previous} devices; the target has {devices}"
        )
