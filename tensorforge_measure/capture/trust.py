"""Which signers a command trusts, and whether it requires them: the options `verify`, `gate`,
`rightsize` and `report` share, and the one check they all apply.

Why one place: "is this capture evidence I accept?" must be answered the same way by every
command that reads captures. Without these options a command reports each capture's origin
(trusted, untrusted, unsigned) beside its verdicts; with `--require-trusted` (implied by
`--trusted-key` / `--trusted-keys`) an unsigned or untrusted capture is refused in one line,
never silently taken as evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import click

from tensorforge.api import TensorForgeError

F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen
class Trust:
    fingerprints: tuple[str, ...]  # the keys whose signatures establish origin
    required: bool  # refuse captures not signed by one of them

    def refusal(self, what: str, origin_status: str, origin_detail: str) -> str | None:
        """Why `what` is refused as evidence under this trust, or None."""
        if not self.required or origin_status == "trusted":
            return None
        return (
            f"{what} is not signed by a trusted key ({origin_detail}); trusted keys: "
            f"{', '.join(self.fingerprints) or 'none'}"
        )


def trust_options(command: F) -> F:
    """--trusted-key (repeatable), --trusted-keys FILE and --require-trusted."""
    command = click.option(
        "--require-trusted",
        is_flag=True,
        help="Accept only captures signed by a trusted key (your own, $TENSORFORGE_HOME/trusted-keys, "
        "--trusted-key, --trusted-keys); unsigned or untrusted ones are refused.",
    )(command)
    command = click.option(
        "--trusted-keys",
        "trusted_key_files",
        multiple=True,
        type=click.Path(dir_okay=False),
        help="A file of trusted keys, one a line (fingerprints or ed25519 public keys). Implies --require-trusted.",
    )(command)
    return click.option(
        "--trusted-key",
        "trusted_keys",
        multiple=True,
        metavar="KEY",
        help="Trust this signer: a SHA256:... fingerprint, an ed25519 public key, or a .pub file. "
        "Repeatable. Implies --require-trusted.",
    )(command)


def trust_from(keys: Iterable[str], files: Iterable[str], require: bool) -> Trust:
    from tensorforge_measure.capture.signing import trusted_fingerprints
    from tensorforge_measure.home import home

    keys, files = tuple(keys), tuple(files)
    return Trust(tuple(trusted_fingerprints(home(), keys, files)), require or bool(keys or files))


def check_trust(trust: Trust | None, what: str, report: Any) -> None:
    """Raise TensorForgeError when `report` (a VerifyReport) is refused as evidence."""
    if trust is None:
        return
    why = trust.refusal(what, report.origin, report.origin_detail)
    if why is not None:
        raise TensorForgeError(why)


def describe_path(path: str | Path) -> str:
    return "standard input" if str(path) == "-" else str(path)
