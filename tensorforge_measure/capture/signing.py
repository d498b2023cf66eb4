"""Who produced a capture: an Ed25519 signature over its digest, and the keys a reader trusts.

Why: the digest is unkeyed SHA-256, so it shows only that a capture was not changed *since it
was sealed*; anyone can edit a capture, re-seal it and get VERIFIED (a re-sealed copy once turned
a RULED OUT into MEETS). A signature made with a private key only its owner holds shows who
sealed it. What it proves and what not: docs/security.md.

* The key pair is created on first use in TensorForge's home (`$TENSORFORGE_HOME/keys`, else
  ~/.cache/tensorforge/keys): the folder 0700, the private key 0600, both owned by the user. A
  private key that others can read or write, a key folder or trusted-keys file that others can
  write, or any of them owned by another user, is refused, as ssh refuses them: a key anyone on
  the machine could use or replace proves nothing.
* "Your own key" is always the public half of the private key, derived from it. The .pub file
  beside it is written for others to copy, never read back: whoever could write that file would
  otherwise choose which key `verify` takes as yours (a forgery trusted, your captures not).
* The signature covers the digest value with a domain prefix (SIGNED_PREFIX), so it cannot be
  replayed as a signature over anything else; the digest covers everything but itself.
* A capture carries the public key and its fingerprint (`SHA256:` + unpadded base64 of the
  SHA-256 of the 32 raw public-key bytes, as ssh prints them), so a reader can check the
  signature without asking anyone; *trusting* that key is the reader's decision: the trusted
  keys are the user's own key, the lines of `$TENSORFORGE_HOME/trusted-keys`, and whatever is
  given with `--trusted-key` (a fingerprint, a public key, or a .pub file) or `--trusted-keys FILE`.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from tensorforge.api import TensorForgeError
from tensorforge_measure.capture.origin import (
    ALGORITHM,
    INVALID,  # noqa: F401 (re-exported)
    OVER,
    SIGNED_PREFIX,
    TRUSTED,  # noqa: F401 (re-exported)
    UNSIGNED,  # noqa: F401 (re-exported)
    UNTRUSTED,  # noqa: F401 (re-exported)
    Origin,  # noqa: F401 (re-exported)
    fingerprint_of,
    origin,  # noqa: F401 (re-exported)
    parse_key,
    signature_problem,  # noqa: F401 (re-exported)
)
from tensorforge_measure.capture.sections.provenance import Signature

PRIVATE_NAME = "capture-signing.key"
PUBLIC_NAME = "capture-signing.pub"
TRUSTED_KEYS_NAME = "trusted-keys"


def _crypto():
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - cryptography is a dependency; a broken install
        raise TensorForgeError(
            "cannot sign or check signatures: the 'cryptography' package is not installed (pip install cryptography)"
        ) from None
    return ed25519, serialization


def keys_dir(home: Path) -> Path:
    return home / "keys"


# -- the user's own key ---------------------------------------------------------------------------


def _owner_problem(path: Path, info: os.stat_result) -> str | None:
    if hasattr(os, "getuid") and info.st_uid not in (os.getuid(), 0):
        return f"belongs to another user (uid {info.st_uid}); it cannot identify you"
    return None


def check_not_writable_by_others(path: Path, what: str, own: bool = True) -> None:
    """Refuse `path` (a key folder, a trusted-keys file) when users other than its owner can
    write it, or (`own`) when it is not the user's. A trusted-keys file handed in with
    --trusted-keys may be a colleague's, read-only to you: `own` is False for those."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise TensorForgeError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    problem = _owner_problem(path, info) if own else None
    if problem is None and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.S_IMODE(info.st_mode)
        problem = (
            f"is writable by others (mode {mode:04o}): anyone on this machine could change which "
            f"keys you trust; run `chmod go-w {path}`"
        )
    if problem is not None:
        raise TensorForgeError(f"{what} {path} {problem}")


def _check_private(path: Path) -> None:
    info = os.stat(path)
    problem = _owner_problem(path, info)
    if problem is not None:
        raise TensorForgeError(f"signing key {path} {problem}")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TensorForgeError(
            f"signing key {path} is accessible to others (mode "
            f"{stat.S_IMODE(info.st_mode):04o}): anyone on this machine could sign "
            f"as you; run `chmod 600 {path}`"
        )


def _make_private_dir(folder: Path) -> None:
    """The key folder, 0700; an existing one others can write is refused, not repaired
    (whatever they put there before would stay)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_not_writable_by_others(folder, "key folder")
        os.chmod(folder, 0o700)
    except OSError as exc:
        raise TensorForgeError(f"cannot create the key folder {folder}: {exc.strerror or exc}") from None


def load_or_create_key(home: Path):
    """The user's Ed25519 private key, created (0600, in a 0700 folder) on first use."""
    ed25519, serialization = _crypto()
    folder = keys_dir(home)
    private = folder / PRIVATE_NAME
    if folder.exists():
        check_not_writable_by_others(folder, "key folder")
    if not private.exists():
        _make_private_dir(folder)
        key = ed25519.Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        try:
            # O_EXCL: two first runs at once must not each write a key and sign with different ones
            fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return load_or_create_key(home)
        except OSError as exc:
            raise TensorForgeError(f"cannot create signing key {private}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
            handle.flush()
            os.fsync(handle.fileno())
        raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        (folder / PUBLIC_NAME).write_text(public_line(raw, "tensorforge capture signing key"), encoding="ascii")
        return key
    _check_private(private)
    try:
        key = serialization.load_pem_private_key(private.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise TensorForgeError(
            f"signing key {private} is unreadable ({exc}); move it away and a new key is made on the next run"
        ) from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise TensorForgeError(f"signing key {private} is not an Ed25519 key")
    return key


def own_public_key(home: Path) -> bytes | None:
    """The raw public key of the user's key pair, derived from the private key (its folder and
    permissions checked as for signing), or None before the first signature."""
    if not (keys_dir(home) / PRIVATE_NAME).exists():
        return None
    _, serialization = _crypto()
    key = load_or_create_key(home)
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_line(raw: bytes, comment: str = "") -> str:
    """One line of a trusted-keys file: 'ed25519 <base64 key> <comment>'."""
    return f"{ALGORITHM} {base64.b64encode(raw).decode('ascii')} {comment}".rstrip() + "\n"


def sign_digest(digest_value: str, home: Path) -> Signature:
    _, serialization = _crypto()
    key = load_or_create_key(home)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    value = key.sign(SIGNED_PREFIX + digest_value.encode("ascii"))
    return Signature(
        algorithm=ALGORITHM,
        public_key=base64.b64encode(raw).decode("ascii"),
        fingerprint=fingerprint_of(raw),
        over=OVER,
        value=base64.b64encode(value).decode("ascii"),
    )


# -- checking -------------------------------------------------------------------------------------

# -- trusted keys ---------------------------------------------------------------------------------


def read_trusted_file(path: Path, what: str = "trusted-keys file") -> list[str]:
    """Fingerprints from a file of keys, one a line ('#' comments and blank lines ignored)."""
    from tensorforge.api import read_text

    text = read_text(path, what, 1 << 20)  # a key a line: a MiB is thousands of keys
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(parse_key(line, f"{what} {path}, line {number}"))
    return out


def trusted_fingerprints(home: Path, given: Iterable[str] = (), files: Iterable[str] = ()) -> list[str]:
    """The user's own key, `$HOME/trusted-keys`, and the --trusted-key / --trusted-keys values.
    A given value naming an existing file is read as a key file (a .pub or a trusted-keys list)."""
    found: list[str] = []
    raw = own_public_key(home)
    if raw is not None:
        found.append(fingerprint_of(raw))
    default = home / TRUSTED_KEYS_NAME
    if default.exists():
        check_not_writable_by_others(default, "trusted-keys file")
        found.extend(read_trusted_file(default))
    for value in given:
        if os.path.exists(value):
            check_not_writable_by_others(Path(value), "trusted key file", own=False)
            found.extend(read_trusted_file(Path(value), "trusted key file"))
        else:
            found.append(parse_key(value, "--trusted-key"))
    for path in files:
        if os.path.exists(path):
            check_not_writable_by_others(Path(path), "trusted-keys file", own=False)
        found.extend(read_trusted_file(Path(path)))
    return list(dict.fromkeys(found))
