"""Errors a user can cause. The CLI turns each into one line and exit status 2."""

import difflib
import re

# An error line stays readable whatever the user typed: a 100 KB parameter was echoed in full.
LONG_RUN = 120
_LONG = re.compile(r"[^\s]{" + str(LONG_RUN + 1) + ",}")


class TensorForgeError(Exception):
    """A problem with the user's input or installed plugins, described in one line."""


class PluginError(TensorForgeError):
    """A plugin raised, or registered something invalid; the message names the plugin."""


def one_line(exc: BaseException) -> str:
    """'ExcType: first line of the message' (or the type alone): how a plugin's or a device's
    exception is shown to the user, in one line, without a traceback."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def closest(name: str, choices) -> str:
    """A ' (did you mean X?)' suffix for the closest known name, or '' when nothing is close."""
    match = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""


# Past this many known names a refusal that says how to list them names only the closest few:
# every preset of every plugin in one line made it hundreds of characters long.
FEW = 5


def unknown(what: str, name: str, choices, listed_by: str | None = None) -> TensorForgeError:
    """'unknown WHAT NAME (did you mean X?); known: ...'. With `listed_by` (the command that lists
    them all) and more than FEW choices, only the FEW closest are named, then that command."""
    choices = sorted(choices)
    known = ", ".join(choices) or "none installed"
    if listed_by and len(choices) > FEW:
        near = difflib.get_close_matches(name, choices, n=FEW, cutoff=0.4) or choices[:FEW]
        known = f"{', '.join(near)}, ... ({len(choices)} in all: `{listed_by}` lists them)"
    return TensorForgeError(f"unknown {what} {name!r}{closest(name, choices)}; known: {known}")


def shorten(message: str) -> str:
    """`message` with every run of more than LONG_RUN non-space characters cut in the middle,
    saying how much was cut; the start and end of each run (where names and values sit) stay."""

    def cut(match):
        text = match.group(0)
        return f"{text[:60]}...[{len(text) - 80} characters cut]...{text[-20:]}"

    return _LONG.sub(cut, message)
