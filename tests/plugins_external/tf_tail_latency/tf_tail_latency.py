"""A stranger's POLICY plugin for TensorForge: tail latency.

Why a policy on the tail: a service answers to its slow requests, not to its median. A
workload whose p90 sits far above its p50 will miss a latency objective that its median meets,
however good the median looks. This policy judges one capture (the gate's candidate, or the
capture a report is made of): per measured workload TAIL OK when p90 <= 1.5 x p50, HEAVY TAIL
(which fails a gate) otherwise, NO VERDICT for a workload without samples. It needs MEASURED;
without it TensorForge does not ask it and shows NO VERDICT with what is missing.
"""

import math

from tensorforge_measure import NO_VERDICT, Measurement, Policy, PolicyRequest, Verdict, hookimpl

MAX_TAIL_RATIO = 1.5


class TailLatency(Policy):
    name = "tail-latency"
    description = f"every measured workload's p90 within {MAX_TAIL_RATIO:g}x its p50"
    requires = ("candidate", "MEASURED")
    commands = ("gate", "report")

    def decide(self, request: PolicyRequest):
        judged = request.candidate
        verdicts = []
        for name, row in sorted(judged.capture.measured.workloads.items()):
            if not isinstance(row, Measurement):
                verdicts.append(Verdict(self.name, name, NO_VERDICT, f"no verdict: not measured ({row.reason})"))
                continue
            if not row.stats.p50 > 0:
                verdicts.append(Verdict(self.name, name, NO_VERDICT, "no verdict: p50 is 0 s (below timer resolution)"))
                continue
            ratio = row.stats.p90 / row.stats.p50
            evidence = (f"MEASURED p50 and p90 of {name} ({row.stats.n} samples) in {judged.path}",)
            if ratio <= MAX_TAIL_RATIO and math.isfinite(ratio):
                verdicts.append(
                    Verdict(
                        self.name, name, "TAIL OK", f"p90 is {ratio:.2f}x p50 (limit {MAX_TAIL_RATIO:g}x)", evidence
                    )
                )
            else:
                verdicts.append(
                    Verdict(
                        self.name,
                        name,
                        "HEAVY TAIL",
                        f"p90 is {ratio:.2f}x p50, above the {MAX_TAIL_RATIO:g}x limit",
                        evidence,
                        fails=True,
                    )
                )
        return verdicts


@hookimpl
def tensorforge_measure_register_policies(register):
    register(TailLatency())
