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
    return f'<table class="rows"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
