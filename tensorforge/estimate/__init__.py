"""PREDICTED estimates: the expected latency beside the sound bound.

The bound (tensorforge.bound.model) answers "how fast can this possibly run"; the estimate answers
"how fast will it run" with the tiles libraries really launch and the efficiencies calibration
probes measured, as a waterfall of named terms from the bound, so every gap is explained rather
than only measured. estimate >= bound always: every term is >= 0.

Modules: implementation (what plugins declare about their kernels), menus (library tile menus),
coefficients (calibrated figures), basis (which figures a target gets), gemm / operators (the
per-operator models), model (workloads), fit (coefficients from probe sweeps), classes and
evaluation (scoring against measurements). This package imports nothing heavy at import time so
tensorforge.results.prediction can use its result types.
"""

from tensorforge.estimate.results import LABEL, TERMS, OperatorEstimate, WorkloadEstimate

__all__ = ["LABEL", "OperatorEstimate", "TERMS", "WorkloadEstimate"]
