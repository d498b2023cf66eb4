"""Human-readable numbers for tables (JSON keeps raw SI values)."""


def si(value: float, unit: str, digits: int = 3) -> str:
    if value is None:
        return "-"
    if value == 0:
        return f"0 {unit}"
    prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")]
    for scale, prefix in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def percent(value) -> str:
    """A fraction as a percentage with one decimal, '-' when there is none."""
    return "-" if value is None else f"{value * 100:.1f}%"


def seconds(value: float) -> str:
    if value is None:
        return "-"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value / 1e-9:.4g} ns"


def binary_bytes(value: float) -> str:
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"
