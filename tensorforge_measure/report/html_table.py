"""The report's tables, readable on any screen: on a wide one a plain grid; on a narrow one
(a phone, a split window) every row becomes a small card of `column: value` lines, so no column
is ever pushed off the page (the bound check used to be, on a long-named capture). Each cell
carries its column's name for that (data-label) and its content in one span (one flex item
beside the name); the CSS in html.py switches the layout, no script needed. Workload names built from specs break after their commas."""

from collections.abc import Iterable, Sequence
from html import escape


def breakable(text: str) -> str:
    """An escaped workload or operator name that may break after a comma (inline specs such as
    gemm:m=2048,n=2048,k=2048,dtype=fp32 have no spaces to wrap at)."""
    return escape(text).replace(",", ",<wbr>")


# From this many columns a table is laid out as cards already in a laptop's window (html.py's CSS):
# eight to eleven columns of figures and names do not fit side by side in 1,100 px.
WIDE = 8


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    """`rows` are HTML already (escaped by the caller); `numeric` columns align right."""
    numbers = set(numeric)
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td{" class=num" if i in numbers else ""} data-label="{escape(headers[i])}"><span>{cell}</span></td>'
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    kind = "rows wide" if len(headers) >= WIDE else "rows"
    return f'<table class="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def fold(summary: str, body: str, ident: str = "") -> str:
    """A section's detail behind a one-line summary (<details>, closed): the page on a phone stays
    a few screens long, and the detail is one tap away. `summary` and `body` are HTML already."""
    attr = f' id="{escape(ident)}"' if ident else ""
    return f"<details{attr}><summary>{summary}</summary>{body}</details>"


def drop_empty_columns(headers: Sequence[str], rows: Sequence[Sequence[str]], keep: int = 1, empty: str = "-"):
    """(headers, rows, kept column indexes) without the columns that say `empty` in every row: a
    column of dashes tells the reader nothing and costs a phone a line per row. The first `keep`
    columns (the row's name) always stay."""
    kept = [i for i in range(len(headers)) if i < keep or any(row[i] != empty for row in rows)]
    return [headers[i] for i in kept], [[row[i] for i in kept] for row in rows], kept
