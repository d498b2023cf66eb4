"""The Core's programmatic entry points, shared by the CLI and the Ops side."""

from typing import Optional, Sequence

from .model import predict
from .plugins import PluginHost
from .results import Prediction
from .suite import resolve
from .target import Ceilings


def run_prediction(host: PluginHost, target_name: str, specs: Sequence[str] = (),
                   suites: Sequence[str] = (), operating_point: Optional[str] = None,
                   ceilings: Optional[Ceilings] = None,
                   max_candidates: Optional[int] = None, workloads=None, estimate=True) -> Prediction:
    """`estimate`: True (the target's basis), coefficients to use, or False (bound only)."""
    target = host.target(target_name)
    chosen = workloads if workloads is not None else resolve(host, tuple(specs), tuple(suites))
    kwargs = {} if max_candidates is None else {"max_candidates": max_candidates}
    return predict(chosen, target, host.mappings(), operating_point, ceilings, estimate=estimate, **kwargs)
