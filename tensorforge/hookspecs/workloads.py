"""The hook through which workload plugins register their kinds (GEMM, Conv2D, ...)."""

from . import RegisterWorkload, hookspec


@hookspec
def tensorforge_register_workloads(register: RegisterWorkload) -> None:
    """Register workload kinds.

    Call ``register(kind)`` once per kind, where ``kind`` is an instance of a subclass of
    :class:`tensorforge.workload.WorkloadKind` with a unique lowercase ``name`` (e.g. 'gemm'),
    its ``params_type``, ``presets`` and ``default_suite``. Preset names must be unique across
    all installed plugins. Return nothing.
    """
