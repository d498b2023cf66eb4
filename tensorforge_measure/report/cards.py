"""What the primary and contrast cards say about the evidence behind their APEs, for both the
HTML page and the Markdown report. One rule for both formats: a reader who stops at the cards,
in either, must be told alike when an APE is provisional rather than settled."""

from typing import Any

PROVISIONAL = "The APEs and the bound check are provisional: they may not hold on a rerun."


def evidence(row: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, headline, reasons) of the evidence quality behind one card. kind: 'none' (nothing
    was judged: the headline says why), 'insufficient' (the reasons say what fell short) or
    'judged' (the headline is the evidence-quality verdict)."""
    if row["measured_p50_s"] is None:
        return "none", "no measurement: nothing to judge the bound or the estimate by", ""
    verdict = row.get("evidence")
    if verdict is None:
        return "none", "not assessed (the capture kept no raw samples)", ""
    if row.get("provisional"):
        return "insufficient", "insufficient", "; ".join(row["evidence_reasons"]) or "insufficient"
    return "judged", verdict, ""
