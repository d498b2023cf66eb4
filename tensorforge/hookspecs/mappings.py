"""The hook through which mapping strategies register (the Core's own among them)."""

from . import RegisterMapping, hookspec


@hookspec
def tensorforge_register_mappings(register: RegisterMapping) -> None:
    """Register mapping strategies.

    Call ``register(strategy)`` once per strategy, where ``strategy`` is an instance of
    :class:`tensorforge.mappings.base.MappingStrategy`: a unique ``name``, the problem types it
    maps (``problem_types``), and ``explore(problem, machine, residency)`` returning a
    :class:`tensorforge.mappings.base.MappingChoice` whose latency is a lower bound over the
    strategy's whole mapping space, evaluating at most ``machine.max_candidates`` candidates,
    chosen deterministically, with ``search`` saying how ("exhaustive", "relaxation" when the
    limit cut the search, "unstated"). :class:`tensorforge.mappings.search.GridStrategy` does
    this for any finite grid. Return nothing.
    """
