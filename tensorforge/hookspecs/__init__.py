"""Core hook specifications (pluggy project 'tensorforge', entry-point group 'tensorforge').

Plugins implement these with `tensorforge.hookspecs.hookimpl`. Registration hooks hand the
plugin a `register` callback rather than collecting return values, so the host validates
types, names and duplicates in one place and names the plugin in every error.

The specs are typed, as tox types its hooks: a plugin that annotates its implementation with
the same types (`register: RegisterWorkload`) is checked by mypy against what the host calls.
"""

from collections.abc import Callable
from typing import TypeAlias

import pluggy

from ..mappings.base import MappingStrategy
from ..target import Target
from ..workload import WorkloadKind

PROJECT = "tensorforge"
ENTRY_POINT_GROUP = "tensorforge"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# The callbacks the registration hooks receive: call one with each thing to register.
RegisterWorkload: TypeAlias = Callable[[WorkloadKind], None]
RegisterTarget: TypeAlias = Callable[[Target], None]
RegisterMapping: TypeAlias = Callable[[MappingStrategy], None]

from . import commands, mappings, targets, workloads  # noqa: E402  (they use the markers above)

SPEC_MODULES = (workloads, targets, mappings, commands)
