"""Provenance: who made the capture, with what software, where, and when."""

import attrs

from tensorforge_measure.capture.fields import field, optional


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
class Signature:
    """Origin: an Ed25519 signature over the digest value, made with the key of whoever ran the
    command (capture/signing.py, docs/security.md). Whether to trust that key is the reader's call."""

    algorithm: str = field("'ed25519'")
    public_key: str = field("base64 of the signer's 32-byte Ed25519 public key")
    fingerprint: str = field("SHA256:<unpadded base64 of the SHA-256 of the public key>, as ssh prints it")
    over: str = field("what was signed: the digest value with a fixed prefix")
    value: str = field("base64 of the 64-byte signature")


@attrs.frozen(kw_only=True)
class Digest:
    """Integrity: SHA-256 over the canonical JSON of the document without this record; and, where
    the capture was signed, the signature over that digest (the record is outside the hash)."""

    algorithm: str = field("'sha256'")
    over: str = field("what was hashed: \"canonical JSON without 'digest'\"")
    value: str = field("the hex digest")
    signature: Signature | None = optional("who sealed it: an Ed25519 signature over the digest (absent: unsigned)")
