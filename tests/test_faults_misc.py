"""Fault catalogue: the smaller classes — huge dimensions, parameters too long to echo, specs that
are not key=value, and the plugin-selection and option mistakes a user makes at the prompt."""

import pytest
from fault_catalogue import Case, check, ids

pytestmark = pytest.mark.timeout(120)

HUGE = "1" * 100_000
CASES = [
    Case(
        "a dimension of 2^63 is refused, not wrapped",
        ("predict", "-t", "h200", "-w", "gemm:m=9223372036854775808,n=1,k=1"),
        error=r"m=9223372036854775808 is outside 1\.\.2147483647",
    ),
    Case(
        "dimensions of 2^34 give no negative time",
        ("predict", "-t", "h200", "-w", "gemm:m=17179869184,n=17179869184,k=17179869184"),
        error=r"is outside 1\.\.2147483647",
    ),
    Case(
        "a 100 KB parameter value is cut in the error line",
        ("predict", "-t", "h200", "-w", f"gemm:m={HUGE},n=1,k=1"),
        error=r"m must be an integer, got '1+\.\.\.\[\d+ characters cut\]\.\.\.1+'$",
    ),
    Case(
        "a 100 KB parameter name is cut in the error line",
        ("predict", "-t", "h200", "-w", f"gemm:{'x' * 100_000}=1"),
        error=r"unknown parameter 'x+\.\.\.\[\d+ characters cut\]\.\.\.x+'; known: m, n, k",
    ),
    Case(
        "a 100 KB target name is cut in the error line",
        ("predict", "-t", "y" * 100_000, "-w", "gemm_tiny"),
        error=r"unknown target 'y+\.\.\.\[\d+ characters cut\]\.\.\.y+'; known: h200",
    ),
    Case(
        "a spec part without '=' is named", ("predict", "-t", "h200", "-w", "gemm:m=1,n"), error=r"expected key=value"
    ),
    Case(
        "a parameter given twice is named",
        ("predict", "-t", "h200", "-w", "gemm:m=1,m=2,n=1,k=1"),
        error=r"parameter 'm' given twice",
    ),
    Case(
        "a negative dimension is named", ("predict", "-t", "h200", "-w", "gemm:m=-1,n=1,k=1"), error=r"m must be >= 1"
    ),
    Case(
        "a float dimension is named",
        ("predict", "-t", "h200", "-w", "gemm:m=1.5,n=1,k=1"),
        error=r"m must be an integer",
    ),
    Case(
        "an unknown workload suggests the closest",
        ("predict", "-t", "h200", "-w", "gemm_tin"),
        # the closest few, then how to list them all: every preset in one line ran to 784 characters
        error=r"unknown workload or preset 'gemm_tin' \(did you mean 'gemm_tiny'\?\); known: gemm_tiny, [^;]*"
        r"\.\.\. \(\d+ in all: `tensorforge workloads` lists them\)$",
    ),
    Case(
        "an unknown target suggests the closest",
        ("predict", "-t", "h2000", "-w", "gemm_tiny"),
        error=r"unknown target 'h2000' \(did you mean 'h200'\?\)",
    ),
    Case(
        "an unknown backend is one line",
        ("run", "-t", "h200", "-w", "gemm_tiny", "--backend", "torch-tpu", "-o", "c.json"),
        error=r"unknown backend 'torch-tpu'",
        may_write=("home",),
    ),
    Case(
        "an unknown sink is refused before the run",
        ("run", "-t", "h200", "-w", "gemm_tiny", "--export", "wandb", "-o", "c.json"),
        error=r"wandb",
    ),
    Case(
        "--force-ceilings without --ceilings is named",
        ("predict", "-t", "h200", "-w", "gemm_tiny", "--force-ceilings"),
        error=r"--force-ceilings applies to --ceilings",
    ),
    Case(
        "rightsize without an objective says which to give",
        ("rightsize", "-w", "gemm_tiny"),
        error=r"give exactly one objective: --latency-ms or --throughput",
    ),
    Case(
        "rightsize with both objectives says which to give",
        ("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--throughput", "5"),
        error=r"give exactly one objective",
    ),
    Case(
        "gate --min-samples 2 is out of range",
        ("gate", "a.json", "b.json", "--min-samples", "2"),
        error=r"'--min-samples': 2 is not in the range",
    ),
    Case(
        "a malformed --trusted-key is one line",
        ("verify", "c.json", "--trusted-key", "nonsense"),
        files={"c.json": "{}"},
        error=r"--trusted-key: expected a SHA256:\.\.\. fingerprint or an ed25519 public key",
    ),
    Case(
        "a missing --trusted-keys file is one line",
        ("verify", "c.json", "--trusted-keys", "keys.txt"),
        files={"c.json": "{}"},
        error=r"keys\.txt",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_misc(case, tmp_path):
    check(case, tmp_path)
