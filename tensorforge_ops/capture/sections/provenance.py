"""Provenance: who made the capture, with what software, where, and when."""


import attrs

from ..fields import field, optional


@attrs.frozen(kw_only=True)
class PluginRecord:
    """One installed plugin as the run saw it (broken ones too, with their error)."""
    name: str = field("plugin name (its entry-point name)")
    side: str = field("'core' or 'ops': which plugin host loaded it")
    distribution: str | None = field("the installed distribution that provides it")
    version: str | None = field("that distribution's version")
    error: str | None = field("why the plugin failed to load; null when it loaded")


@attrs.frozen(kw_only=True)
class HostRecord:
    """The machine that ran the command."""
    hostname: str = field("host name of the machine that ran the command")
    platform: str = field("platform.platform(): operating system and kernel")
    python: str = field("Python version")


@attrs.frozen(kw_only=True)
class Provenance:
    """Who made the capture, with what software, where and when."""
    tensorforge_version: str = field("version of the tensorforge distribution")
    plugins: tuple[PluginRecord, ...] = field("every plugin of both sides, loaded or broken")
    host: HostRecord = field("the machine")
    command: tuple[str, ...] = field("the command line that produced the capture")
    started_at: str = field("when the run started (ISO 8601, UTC)")
    finished_at: str | None = optional("when it finished (ISO 8601, UTC); absent if interrupted")
    duration_s: float | None = optional("wall time of the whole run", "s")


@attrs.frozen(kw_only=True)
class Digest:
    """Integrity: SHA-256 over the canonical JSON of the document without this record."""
    algorithm: str = field("'sha256'")
    over: str = field("what was hashed: \"canonical JSON without 'digest'\"")
    value: str = field("the hex digest")
