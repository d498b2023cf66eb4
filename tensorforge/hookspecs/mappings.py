"""The hook through which mapping strategies register (the Core's own among them)."""

from . import RegisterMapping, hookspec


@hookspec
def tensorforge_register_mappings(register: RegisterMapping) -> None:
    """Register mapping strategies.

    Call ``register(strategy)`` once per strategy, where ``strategy`` is an instance of
    :class:`tensorforge.mappings.base.MappingStrategy`: a unique ``name``, the problem types it
    maps (``problem_types``), and ``explore(problem, machine, residency)`` returning the best
    :class:`tensorforge.mappings.base.MappingChoice` among at most ``machine.max_candidates``
    candidates, chosen deterministically. Return nothing.
    """
