"""The host CPU's energy through RAPL (Linux powercap: /sys/class/powercap/intel-rapl:N/energy_uj),
read around the same energy window as the GPU's counter.

Why "unavailable" is common and must say why: since Linux 5.10 (CVE-2020-8694) energy_uj is
readable by root only, virtual machines rarely expose RAPL at all, and AMD packages appear under
the same interface only with newer kernels. Only the package domains (intel-rapl:N, not their
core/uncore/dram subdomains) are summed, so nothing is counted twice. Each counter wraps at its
max_energy_range_uj; one wrap per window is undone.
"""

from __future__ import annotations

from pathlib import Path

import attrs

POWERCAP = Path("/sys/class/powercap")


@attrs.frozen
class RaplDomain:
    name: str
    energy: Path
    max_range_uj: int | None


class Rapl:
    """The package domains' summed counter, in joules."""

    def __init__(self, domains: tuple[RaplDomain, ...]):
        self.domains = domains
        self.source = "RAPL package domains " + ", ".join(d.name for d in domains) + " (energy_uj)"

    @classmethod
    def open(cls, root: Path = POWERCAP) -> tuple[Rapl | None, str | None]:
        if not root.is_dir():
            return None, f"{root} does not exist (no powercap interface: a VM or a non-Linux host)"
        packages = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not packages:
            return None, f"no RAPL package domain under {root}"
        domains = []
        for p in packages:
            try:
                int((p / "energy_uj").read_text().strip())
            except PermissionError:
                return None, f"{p / 'energy_uj'} is readable by root only (Linux >= 5.10, CVE-2020-8694)"
            except (OSError, ValueError) as exc:
                return None, f"{p / 'energy_uj'} unreadable: {exc}"
            try:
                top = int((p / "max_energy_range_uj").read_text().strip())
            except (OSError, ValueError):
                top = None
            name = (p / "name").read_text().strip() if (p / "name").exists() else p.name
            domains.append(RaplDomain(name=f"{p.name} ({name})", energy=p / "energy_uj", max_range_uj=top))
        return cls(tuple(domains)), None

    def read_uj(self) -> tuple[int, ...] | None:
        try:
            return tuple(int(d.energy.read_text().strip()) for d in self.domains)
        except (OSError, ValueError):
            return None

    def joules_between(self, start: tuple[int, ...], end: tuple[int, ...]) -> float:
        total = 0
        for d, a, b in zip(self.domains, start, end):
            step = b - a
            if step < 0 and d.max_range_uj:  # wrapped once
                step += d.max_range_uj
            total += max(0, step)
        return total / 1e6


class RaplCounter:
    """RAPL as the energy window's counter, where the host CPU is the device measured (the
    torch-cpu backend): no power readings to integrate, no power limit."""

    counter_source = "RAPL energy_uj, package domains summed"
    unit_j = 1e-6
    instant_source = ""

    def __init__(self, rapl: Rapl):
        self.rapl = rapl
        self.counter_source = rapl.source
        self._origin = rapl.read_uj()
        self._carry = 0.0
        self._last = self._origin

    def joules(self) -> float | None:
        now = self.rapl.read_uj()
        if now is None or self._last is None:
            return None
        self._carry += self.rapl.joules_between(self._last, now)  # wraps undone step by step
        self._last = now
        return self._carry

    def instant_w(self) -> float | None:
        return None

    def averaged_w(self) -> float | None:
        return None

    def enforced_limit_w(self) -> float | None:
        return None
