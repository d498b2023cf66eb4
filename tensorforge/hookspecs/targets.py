"""The hook through which target plugins register hardware targets."""

from . import RegisterTarget, hookspec


@hookspec
def tensorforge_register_targets(register: RegisterTarget) -> None:
    """Register hardware targets.

    Call ``register(target)`` once per target, where ``target`` is a
    :class:`tensorforge.target.Target` with a unique name (e.g. 'rtx3050-laptop'), its PE
    array, SRAM levels, DRAM capacity, operating points and the source of every datasheet
    figure in ``sources``. Return nothing.
    """
