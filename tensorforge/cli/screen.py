"""Output for people: tables that fit the terminal, colour for the five labels and the verdicts.

A table is laid out in two steps. First the plain layout (`table`): every cell in full,
the layout files and pipes get, byte for byte what they always got. On a screen of known width
(a terminal, or $COLUMNS) a column with nothing in any row ("-" or empty) is named once above
the table instead of printed; only when the table is still wider than the screen is it fitted:
columns whose value is the same in every row are stated once above the table, then the widest
text columns wrap inside their cell while short cells (numbers, units, verdicts) stay whole.
A listing read row by row (`targets list`) may ask for one line per row: then the columns it
names as optional are left out before any row wraps, and a line above the table says which.
`--wide` turns the fitting off and `--json` never comes here, so machines keep full detail.

Wrapping, of cells and of prose alike, never breaks a token: a line breaks at a space, or
inside a long spec after a comma or a '+' ("m=8192,n=8192," / "k=8192"; "(DRAM+" /
"shared_memory)"), never inside a number, a name or a unit. A token longer than the line is
left whole and overflows; a misread number is worse than a ragged edge.

Hand-written rather than rich's Table: rich shrinks every column alike, so numbers break in the
middle ("comput|e"), and at narrow widths it drops whole columns without a word. A number cut in
two or a column silently gone misleads; a wrapped sentence does not.

Colour is applied after layout (zero-width escape codes), so it never moves a column. It is on
only on a terminal, never with NO_COLOR set (https://no-color.org), and FORCE_COLOR turns it on
for a pipe (a pager that shows colour, or a test). The colours follow the report's.
"""

import functools
import os
import re
import shutil
import sys
from collections.abc import Sequence
from typing import IO

import attrs
import click

GAP = "  "
# A column narrower than this is never wrapped: numbers with units, verdicts, short names.
KEEP_WHOLE = 12
# A wrapped text column keeps at least this many characters per line, and every piece whole.
MIN_TEXT = 10
# Where a long word may break: after a comma, or after a '+' that joins two names.
_PIECE = re.compile(r"[^,+]*(?:,|\+(?=[A-Za-z_(])|$)")

RESET = "\x1b[0m"
# The five labels, as in the report (blue, green, purple, amber, red) ...
LABEL_STYLES = {"PREDICTED": "1;34", "MEASURED": "1;32", "CALIBRATED": "1;35", "DIAGNOSTIC": "1;33", "POLICY": "1;31"}
# ... and the verdicts: green for a claim the evidence supports, red for one it contradicts,
# yellow where evidence is missing or a target is set aside.
VERDICT_STYLES = {
    "within bound": "32",
    "PASS": "32",
    "IMPROVEMENT": "32",
    "MEETS": "32",
    "VERIFIED": "32",
    "BOUND VIOLATION": "1;31",
    "REGRESSION": "1;31",
    "NOT VERIFIED": "1;31",
    "FAIL": "1;31",
    "DOES NOT FIT": "1;31",
    "BELOW": "1;31",
    "FASTEST SAMPLE BELOW THE CALIBRATED BOUND": "1;31",
    "NO VERDICT": "33",
    "no verdict": "33",
    "UNKNOWN": "33",
    "RULED OUT": "33",
    "unavailable": "33",
    "INCOMPLETE": "1;33",
}
STYLES = {**LABEL_STYLES, **VERDICT_STYLES}
# Longest first, so 'NOT VERIFIED' is painted as one verdict and not as 'NOT ' + 'VERIFIED'.
_WORDS = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(w) for w in sorted(STYLES, key=len, reverse=True)) + r")(?![\w-])"
)


def paint(text: str) -> str:
    """`text` with each label and verdict in its colour (ANSI escape codes)."""
    return _WORDS.sub(lambda m: f"\x1b[{STYLES[m.group(1)]}m{m.group(1)}{RESET}", text)


@attrs.frozen
class Screen:
    """Where human output goes: its width (None: unlimited, as in a file or a pipe) and
    whether it shows colour."""

    width: int | None = None
    colour: bool = False

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[object]],
        optional: Sequence[str] = (),
        one_line: bool = False,
    ) -> str:
        return fit_table(headers, rows, self.width, optional, one_line)

    def wrap(self, line: str, indent: str = "  ") -> str:
        """A long line of prose broken at the screen's width, continuation lines indented."""
        if self.width is None or len(line) <= self.width:
            return line
        lead = line[: len(line) - len(line.lstrip(" "))]
        return "\n".join(wrap_words(line, self.width, lead, indent)) or line

    def echo(self, text: str, nl: bool = True, err: bool = False) -> None:
        click.echo(paint(text) if self.colour else text, nl=nl, err=err, color=self.colour)


PLAIN = Screen()


def _columns_env() -> int | None:
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) >= 20 else None


def detect(wide: bool = False, stream: IO[str] | None = None) -> Screen:
    """The screen behind `stream` (standard output by default). Width: unlimited with `wide`,
    else $COLUMNS, else the terminal's, else unlimited (a file or a pipe)."""
    stream = stream if stream is not None else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    colour = (
        not os.environ.get("NO_COLOR")
        and os.environ.get("TERM") != "dumb"
        and (tty or bool(os.environ.get("FORCE_COLOR")))
    )
    width: int | None = None
    if not wide:
        width = _columns_env() or (shutil.get_terminal_size().columns if tty else None)
    return Screen(width=width, colour=colour)


# -- wrapping --------------------------------------------------------------------------------


def pieces(word: str) -> list[str]:
    """`word` cut where it may break: after each comma and each '+' between names."""
    return [p for p in _PIECE.findall(word) if p]


def wrap_words(text: str, width: int, first: str = "", indent: str = "") -> list[str]:
    """`text` in lines of at most `width` characters (the first starting with `first`, the
    others with `indent`), broken at spaces (the spacing inside a line is kept), or where
    `pieces` allows inside a word too long for a whole line. A piece longer than a line stays
    whole on a line of its own."""
    lines: list[str] = []
    line = first
    bare = True  # nothing but the indent on this line yet
    for match in re.finditer(r"(\s*)(\S+)", text.strip()):
        space, word = match.group(1) or " ", match.group(2)
        whole = len(indent) + len(word) <= width or len(line) + len(space) + len(word) <= width
        for k, unit in enumerate([word] if whole else pieces(word)):
            sep = "" if bare or k > 0 else space
            if bare or len(line) + len(sep) + len(unit) <= width:
                line += sep + unit
            else:
                lines.append(line)
                line = indent + unit
            bare = False
    lines.append(line)
    return lines


# -- tables ------------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """The plain layout: every cell in full, columns two spaces apart, a rule under the header."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


EMPTY = ("", "-")


def _drop_empty_columns(headers: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]], str]:
    """Columns with nothing in any row ("-" or empty), named once instead of printed; a
    nameless one (a flag column nobody raised) goes without a word."""
    if not rows:
        return headers, rows, ""
    empty = [i for i in range(1, len(headers)) if all(r[i] in EMPTY for r in rows)]
    keep = [i for i in range(len(headers)) if i not in empty]
    named = ", ".join(headers[i] for i in empty if headers[i])
    return (
        [headers[i] for i in keep],
        [[r[i] for i in keep] for r in rows],
        f"no data in any row: {named}" if named else "",
    )


def _lift_constant_columns(headers: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]], str]:
    """Columns with one value in every row (of two or more), said once above the table."""
    if len(rows) < 2:
        return headers, rows, ""
    constant = [i for i in range(1, len(headers)) if len({r[i] for r in rows}) == 1]
    keep = [i for i in range(len(headers)) if i not in constant]
    said = "; ".join(f"{headers[i]}: {rows[0][i]}" for i in constant if headers[i] and rows[0][i])
    return ([headers[i] for i in keep], [[r[i] for i in keep] for r in rows], f"every row: {said}" if said else "")


def _widths(headers: list[str], rows: list[list[str]], width: int) -> list[int]:
    natural = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def longest_piece(texts: Sequence[str]) -> int:
        return max((len(p) for text in texts for word in text.split() for p in pieces(word)), default=0)

    def floor_of(i: int) -> int:
        if i == 0:  # the first column names the row: it stays whole, so every row is found by name
            return natural[i]
        cells = [r[i] for r in rows]
        longest_cell = max((len(c) for c in cells), default=0)
        cell = longest_cell if longest_cell <= KEEP_WHOLE else max(MIN_TEXT, longest_piece(cells))
        return max(cell, longest_piece([headers[i]]))  # a header wraps between its words

    floor = [floor_of(i) for i in range(len(headers))]
    widths = list(natural)
    room = width - len(GAP) * (len(headers) - 1)
    cells = [[headers[i], *(r[i] for r in rows)] for i in range(len(headers))]

    @functools.cache
    def lines(i: int, w: int) -> tuple[int, ...]:
        return tuple(len(_cell_lines(text, w)) for text in cells[i])

    def height(ws: list[int]) -> int:
        return sum(max(per_row) for per_row in zip(*(lines(i, w) for i, w in enumerate(ws))))

    # Greedy: narrow, one character at a time, the column whose narrowing adds the fewest lines
    # to the table (ties: the widest), so long prose wraps before short labels break.
    while sum(widths) > room:
        shrinkable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not shrinkable:
            break  # even the whole cells do not fit: the terminal wraps the rest
        best = min(shrinkable, key=lambda i: (height(widths[:i] + [widths[i] - 1] + widths[i + 1 :]), -widths[i], i))
        widths[best] -= 1
    return widths


def _cell_lines(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    return wrap_words(text, width) or [""]


def _block(cells: Sequence[str], widths: list[int]) -> list[str]:
    wrapped = [_cell_lines(c, w) for c, w in zip(cells, widths)]
    height = max(len(w) for w in wrapped)
    return [
        GAP.join((w[k] if k < len(w) else "").ljust(width) for w, width in zip(wrapped, widths)).rstrip()
        for k in range(height)
    ]


def _fits(lines: list[str], width: int) -> bool:
    return max((len(line) for line in lines), default=0) <= width


def _layout(headers: list[str], rows: list[list[str]], width: int) -> list[str]:
    widths = _widths(headers, rows, width)
    lines = _block(headers, widths)
    lines.append(GAP.join("-" * w for w in widths))
    for row in rows:
        lines += _block(row, widths)
    return lines


def _rows_wrap(headers: list[str], rows: list[list[str]], width: int) -> bool:
    """Whether the fitted layout gives some row more than one line (a header may wrap)."""
    widths = _widths(headers, rows, width)
    return any(len(_block(row, widths)) > 1 for row in rows)


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    width: int | None,
    optional: Sequence[str] = (),
    one_line: bool = False,
) -> str:
    """The plain table when it fits in `width` (or `width` is None); else the fitted one.
    `optional` names columns, least needed first, that may be left out when wrapping alone
    cannot make the table fit, or, with `one_line`, when a row would take two lines (a row that
    wraps under its name reads as two rows); a line then says which, and that --wide shows them."""
    plain = table(headers, rows)
    if width is None:
        return plain
    heads, body, dropped = _drop_empty_columns([str(h) for h in headers], [[str(c) for c in r] for r in rows])
    if not dropped and _fits(plain.splitlines(), width):
        return plain
    said = ""
    if not _fits(table(heads, body).splitlines(), width):
        heads, body, said = _lift_constant_columns(heads, body)
    lines = _layout(heads, body, width)
    left_out: list[str] = []
    for name in optional:
        if _fits(lines, width) and not (one_line and _rows_wrap(heads, body, width)):
            break
        if name in heads[1:]:
            i = heads.index(name)
            heads, body = heads[:i] + heads[i + 1 :], [r[:i] + r[i + 1 :] for r in body]
            left_out.append(name)
            lines = _layout(heads, body, width)
    notes = [n for n in (dropped, said) if n]
    if left_out:
        notes.append(f"not shown to fit (--wide shows them): {', '.join(left_out)}")
    return "\n".join([Screen(width).wrap(n) for n in notes] + lines)
