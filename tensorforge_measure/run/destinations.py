"""Where one `tensorforge run` writes, all of it checked and locked before the run starts.

A run writes up to three files: the capture, its readable summary beside it
(NAME.summary.txt) and, if interrupted, what it had gathered (NAME.incomplete.json). Why all
three are claimed up front: a run takes minutes, and finding out at the end that the summary
would overwrite a file, or that another run is writing the same capture, loses that work. The
rule is the one every command follows (tensorforge/files/output.py): an existing file only with
--force; a second run on the same path fails at once, naming the process that holds it.

When the capture goes to standard output ('-') or to a device (/dev/null), there is no summary
or incomplete file: the summary goes to standard error, an interrupted run's document goes where
the capture would have gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tensorforge.api import Claim, claim


class RunDestinations:
    """The capture's destination and, for a regular file, its summary and incomplete siblings."""

    def __init__(self, output: str | Path, force: bool, summary: bool = True):
        self.capture: Claim = claim(output, "capture", force)
        self.summary: Claim | None = None
        self.incomplete: Claim | None = None
        if self.capture.mode in ("new", "replace"):
            path = Path(str(output))
            try:
                if summary:  # False: the capture went to the default place, the summary to the terminal
                    self.summary = claim(path.with_suffix(".summary.txt"), "summary", force)
                self.incomplete = claim(
                    path.with_name(path.stem + ".incomplete.json"), "incomplete capture (of an interrupted run)", force
                )
            except BaseException:
                self.release()
                raise

    @property
    def to_stdout(self) -> bool:
        return self.capture.mode in ("stdout", "descriptor") and self.capture.fd in (None, 1)

    def __enter__(self) -> RunDestinations:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def release(self) -> None:
        for destination in (self.capture, self.summary, self.incomplete):
            if destination is not None:
                destination.release()

    def write_capture(self, text: str) -> str:
        return self.capture.write(text)

    def write_summary(self, text: str) -> str | None:
        return self.summary.write(text) if self.summary is not None else None

    def write_incomplete(self, text: str) -> str:
        """An interrupted run's document: NAME.incomplete.json, or where the capture would go."""
        target = self.incomplete if self.incomplete is not None else self.capture
        return target.write(text)
