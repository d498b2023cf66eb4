"""Core hook specifications (pluggy project 'tensorforge', entry-point group 'tensorforge').

Plugins implement these with `tensorforge.hookspecs.hookimpl`. Registration hooks hand the
plugin a `register` callback rather than collecting return values, so the host validates
types, names and duplicates in one place and names the plugin in every error.
"""

import pluggy

PROJECT = "tensorforge"
ENTRY_POINT_GROUP = "tensorforge"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

from . import commands, mappings, targets, workloads  # noqa: E402  (they use the markers above)

SPEC_MODULES = (workloads, targets, mappings, commands)
