"""The predicted bottleneck of a measured workload, in one wording for the run summary, the
report and the README.

A capture holds two predictions of each workload, the analytical bound (datasheet ceilings) and
the calibrated bound (the probes' ceilings), and each classifies its bottleneck. They can differ:
on the H200 the tiny GEMM is compute-bound against the datasheet and memory-bound against the
calibrated ceilings, because calibration cut the compute rate by more than the bandwidth. Showing
one in the summary and the other in the report under the same header said two things at once;
every place now shows this cell, which names both where they differ.
"""

HEADER = "bottleneck*"
FOOTNOTE = (
    "* predicted bottleneck of the analytical bound ('calibrated: ...' where the calibrated bound's "
    "differs): an analytical classification; telemetry does not prove it"
)


def bottleneck_cell(analytical: str, calibrated: str | None) -> str:
    """'compute', or 'compute; calibrated: memory' when the two bounds classify differently."""
    if not calibrated or calibrated == analytical:
        return analytical
    return f"{analytical}; calibrated: {calibrated}"
