"""Which plugins to load, and how to watch them load.

A `PluginOptions` value is the one description of the selection: the command line builds it
(the environment's settings, overridden by `--plugins`, `--disable-plugins` and
`--trace-hooks`) and hands it to the Core's plugin host, which hands it to the Ops side's, so
both sides load the same selection. The environment is read once, where a host is built
without options (a library user's or a test's `PluginHost()`):

  TENSORFORGE_PLUGINS=a,b       load only these entry points (both sides)
  TENSORFORGE_DISABLE=a,b       never load these entry points (both sides)
  TENSORFORGE_TRACE=1           print every plugin load and hook call with its duration (stderr)
  TENSORFORGE_SLOW_IMPORT_S=1   warn about entry points slower than this to import (seconds)
"""

import math
import os
from collections.abc import Mapping

import attrs

from tensorforge.errors import TensorForgeError

ONLY = "TENSORFORGE_PLUGINS"
DISABLE = "TENSORFORGE_DISABLE"
TRACE = "TENSORFORGE_TRACE"
SLOW_IMPORT = "TENSORFORGE_SLOW_IMPORT_S"
DEFAULT_SLOW_IMPORT_S = 1.0

_OFF = {"", "0", "false", "no", "off"}


def _names(text: str | None) -> frozenset[str] | None:
    if text is None or not text.strip():
        return None
    return frozenset(n.strip() for n in text.split(",") if n.strip())


@attrs.frozen
class PluginOptions:
    only: frozenset[str] | None = None  # None: every installed plugin
    disabled: frozenset[str] = frozenset()
    trace: bool = False
    slow_import_s: float = DEFAULT_SLOW_IMPORT_S

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> "PluginOptions":
        slow_text = environ.get(SLOW_IMPORT, "").strip()
        slow = DEFAULT_SLOW_IMPORT_S
        if slow_text:
            try:
                slow = float(slow_text)
            except ValueError:
                slow = math.nan
            if not (slow >= 0 and math.isfinite(slow)):
                raise TensorForgeError(f"{SLOW_IMPORT}={slow_text!r}: expected a number of seconds >= 0")
        return cls(
            only=_names(environ.get(ONLY)),
            disabled=_names(environ.get(DISABLE)) or frozenset(),
            trace=environ.get(TRACE, "").strip().lower() not in _OFF,
            slow_import_s=slow,
        )

    def selects(self, name: str) -> bool:
        if self.only is not None and name not in self.only:
            return False
        return name not in self.disabled

    def overridden(self, only: str | None = None, disable: str | None = None, trace: bool = False) -> "PluginOptions":
        """These options with the command line's choices on top: a name list given there
        replaces the environment's, and --trace-hooks turns tracing on."""
        return attrs.evolve(
            self,
            only=_names(only) if only is not None else self.only,
            disabled=(_names(disable) or frozenset()) if disable is not None else self.disabled,
            trace=self.trace or trace,
        )

    def named(self) -> frozenset[str]:
        """Every entry-point name the user typed, to check for typos."""
        return (self.only or frozenset()) | self.disabled
