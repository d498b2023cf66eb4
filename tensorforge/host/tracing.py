"""A trace of plugin loads and hook calls, one line each on stderr, for debugging plugins.

The hosts call registration hooks one implementation at a time (so a failure belongs to one
plugin), which bypasses pluggy's own call monitoring; they report those calls here. Calls that
do go through pluggy (`pm.hook.NAME(...)`) are traced with `add_hookcall_monitoring`.
"""

import sys
import time
from collections.abc import Callable
from typing import Any

import pluggy


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


class Tracer:
    def __init__(self, side: str, enabled: bool):
        self.side = side
        self.enabled = enabled

    def _write(self, text: str) -> None:
        # sys.stderr looked up at call time: click's CliRunner swaps it per invocation.
        sys.stderr.write(f"trace: {self.side} {text}\n")

    def load(self, name: str, module: str, seconds: float, error: str | None = None) -> None:
        if self.enabled:
            self._write(f"load {name} ({module}) {_ms(seconds)}" + (f" -> {error}" if error else ""))

    def call(
        self,
        plugin: str,
        hook: str,
        function: Callable,
        kwargs: dict,
        outcome: Callable[[Any], str] = lambda result: "",
    ) -> Any:
        """Call one plugin's implementation of `hook`, tracing it when enabled."""
        if not self.enabled:
            return function(**kwargs)
        start = time.perf_counter()
        try:
            result = function(**kwargs)
        except BaseException as exc:
            self._write(f"call {plugin} {hook} {_ms(time.perf_counter() - start)} -> raised {type(exc).__name__}")
            raise
        note = outcome(result)
        self._write(f"call {plugin} {hook} {_ms(time.perf_counter() - start)}" + (f" -> {note}" if note else ""))
        return result

    def monitor(self, pm: pluggy.PluginManager) -> None:
        """Trace hooks called through pluggy's dispatch, with the plugins that implement them."""
        if not self.enabled:
            return
        started: list[float] = []

        def before(hook_name, hook_impls, kwargs):
            started.append(time.perf_counter())

        def after(outcome, hook_name, hook_impls, kwargs):
            plugins = ", ".join(pm.get_name(impl.plugin) or "?" for impl in hook_impls) or "no plugin"
            self._write(f"hook {hook_name} [{plugins}] {_ms(time.perf_counter() - started.pop())}")

        pm.add_hookcall_monitoring(before, after)
