"""Dense peak FLOPs per clock per core, per math mode, from the CPU's ISA flags.

Nothing on Linux states how many FMA units a core has or how wide they really are, so these
are rules with their assumptions spelled out (docs/host-cpu.md). Where a rule can be wrong,
it errs on the high side: a peak that is too high keeps the analytical prediction a lower
bound (only looser), one that is too low would not. Calibration measures the real rate.

  x86  avx512f          512-bit vectors, 2 FMA units: 2 x 16 fp32 lanes x 2 = 64 FLOP/clock
                        (Xeon Scalable Gold/Platinum; many client and Silver parts have one
                        unit, so 64 is their upper bound). AMD Zen 4 (family 25) executes
                        512-bit operations as two 256-bit halves: 2 x 8 x 2 = 32.
       avx2 + fma       256-bit, 2 FMA units: 2 x 8 x 2 = 32 (Haswell and later, Zen 2 and later)
       avx (no fma)     256-bit, one add and one multiply per clock: 8 x 2 = 16
       sse2             128-bit, one add and one multiply: 4 x 2 = 8
       bf16             amx_bf16: 1024 FLOP/clock/core (Intel AMX, 16x32 bf16 tiles);
                        else avx512_bf16: 2 x the fp32 rate (VDPBF16PS: two products per lane)
       fp16             amx_fp16: 1024; else avx512_fp16: 2 x the fp32 rate (32 fp16 lanes)
  Arm  asimd (NEON)     128-bit, 2 FMA pipes assumed (Neoverse N1/N2, Cortex-A7x): 2 x 4 x 2 = 16;
                        'sve' alone does not say the vector length, so it is not used
       bf16             'bf16' (BFMMLA: 16 products per 128-bit op vs 4): 4 x the fp32 rate
       fp16             'asimdhp': 2 x the fp32 rate (8 fp16 lanes)
  unknown               128-bit, 2 FMA units assumed: 16

bf16 and fp16 are declared only with native support; without it PyTorch still runs them
(slowly, by conversion), but no dense peak exists to declare, so `predict` says the mode is
not declared rather than inventing one.

Vector (elementwise) rates per precision: fp32 is the fp32 rate above. fp16 elementwise
arithmetic is native with avx512_fp16 (32 fp16 lanes per 512-bit register) and Arm 'asimdhp'
(8 per 128-bit): 2 x the fp32 rate. bf16 has no elementwise arithmetic on these ISAs (x86
avx512_bf16 and Arm 'bf16' add dot products and conversions only), so bf16 elementwise work
takes the fp32 rate. CPUs have no special-function units: a transcendental runs on the FMA
units (the model charges it as such).
"""

import attrs

from tf_cpu.machine import Machine

AMX_FLOPS_PER_CLOCK = 1024  # Intel: AMX does 1024 bf16/fp16 FLOPs per clock per core


@attrs.frozen
class Isa:
    vector: str  # e.g. 'avx512 (executed as 2 x 256-bit)'
    flops_per_clock: dict[str, float]  # per core, per math mode
    rules: tuple[str, ...]  # which rule produced each rate, for `sources`
    vector_flops_per_clock: dict[str, float] = attrs.field(factory=dict)  # per core, per precision
    vector_rules: tuple[str, ...] = ()


def _x86_fp32(m: Machine) -> tuple[str, float, str]:
    if m.has("avx512f"):
        if m.vendor == "AuthenticAMD" and m.family == 25:
            return (
                "avx512 (executed as 2 x 256-bit on Zen 4)",
                32.0,
                "avx512f on AMD family 25 (Zen 4): 256-bit datapath, 2 FMA units: 2 x 8 fp32 lanes x 2",
            )
        return (
            "avx512",
            64.0,
            "avx512f: 512-bit, 2 FMA units assumed: 2 x 16 fp32 lanes x 2 (an upper bound for one-unit parts)",
        )
    if m.has("avx2", "fma"):
        return "avx2+fma", 32.0, "avx2 + fma: 256-bit, 2 FMA units: 2 x 8 fp32 lanes x 2"
    if m.has("avx"):
        return "avx", 16.0, "avx without fma: 256-bit, 1 add + 1 multiply per clock: 8 lanes x 2"
    if m.has("sse2"):
        return "sse2", 8.0, "sse2: 128-bit, 1 add + 1 multiply per clock: 4 lanes x 2"
    return "unknown", 16.0, "ASSUMED: no recognised x86 SIMD flag; 128-bit, 2 FMA units: 2 x 4 x 2"


def host_isa(m: Machine) -> Isa:
    rules: list[str] = []
    arm = m.arch in ("aarch64", "arm64") or "asimd" in m.flags
    if arm:
        if m.has("asimd"):
            vector, fp32, rule = "neon", 16.0, "asimd: 128-bit NEON, 2 FMA pipes assumed: 2 x 4 fp32 lanes x 2"
        else:
            vector, fp32, rule = "unknown", 16.0, "ASSUMED: no 'asimd' feature; 128-bit, 2 FMA pipes"
    elif m.flags:
        vector, fp32, rule = _x86_fp32(m)
    else:
        vector, fp32, rule = "unknown", 16.0, "ASSUMED: no ISA flags readable; 128-bit, 2 FMA units: 2 x 4 x 2"
    rates = {"fp32": fp32}
    rules.append(f"fp32 {fp32:g} FLOP/clock/core: {rule}")
    if arm:
        if m.has("bf16"):
            rates["bf16"] = 4 * fp32
            rules.append(f"bf16 {4 * fp32:g}: Arm 'bf16' (BFMMLA), 4 x fp32")
        if m.has("asimdhp"):
            rates["fp16"] = 2 * fp32
            rules.append(f"fp16 {2 * fp32:g}: Arm 'asimdhp', 2 x fp32")
    else:
        for mode, amx, avx in (("bf16", "amx_bf16", "avx512_bf16"), ("fp16", "amx_fp16", "avx512_fp16")):
            if m.has(amx):
                rates[mode] = float(AMX_FLOPS_PER_CLOCK)
                rules.append(f"{mode} {AMX_FLOPS_PER_CLOCK}: {amx} (Intel AMX tiles)")
            elif m.has(avx):
                rates[mode] = 2 * fp32
                rules.append(f"{mode} {2 * fp32:g}: {avx}, 2 x fp32")
    missing = [mode for mode in ("bf16", "fp16") if mode not in rates]
    if missing:
        rules.append(f"not declared (no native support): {', '.join(missing)}")
    vector_rates = {"fp32": fp32}
    vector_rules = [f"fp32 {fp32:g}: the fp32 FMA rate"]
    half = "asimdhp" if arm else "avx512_fp16"
    if m.has(half):
        vector_rates["fp16"] = 2 * fp32
        vector_rules.append(f"fp16 {2 * fp32:g}: {half}, twice the fp32 lanes")
    vector_rules.append(
        "bf16: no elementwise bf16 arithmetic, the fp32 rate applies; "
        "no special-function units (transcendentals run on the FMA units)"
    )
    return Isa(
        vector=vector,
        flops_per_clock=rates,
        rules=tuple(rules),
        vector_flops_per_clock=vector_rates,
        vector_rules=tuple(vector_rules),
    )
