"""Point labels that never overlap, whatever the capture: each point is labelled with its
workload's number (the report's key and workload table give the name), at the first of a ring
of positions around it where the label touches no other label, no point and no other text, and
stays inside the axes; farther rings get a leader line. Names as labels overlapped on every
capture (inline specs such as gemm:m=2048,n=2048,k=2048,dtype=fp32 are wider than the plot's
gaps); numbers are short and the search makes room for them.

Each label's SVG group carries an id (label-N, prefixed with the figure's name when inlined), so
the browser test can check from the rendered page that no two labels overlap.
"""

from collections.abc import Sequence
from typing import Any

# Offsets in points around the point, nearest first; each ring is the same pattern farther out.
PATTERN = ((5, 3), (5, -10), (-11, 3), (-11, -10), (-3, 7), (-3, -15), (8, -4), (-15, -4))
RINGS = 6
POINT_RADIUS_PX = 4.0
PAD_PX = 2.0


def _overlaps(a: Any, b: Any) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _padded(box: Any, pad: float) -> Any:
    from matplotlib.transforms import Bbox

    return Bbox.from_extents(box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad)


def _other_text(fig: Any, renderer: Any) -> list[Any]:
    """Boxes of the text already in the figure: titles, axis labels, tick labels, legends."""
    boxes = []
    for ax in fig.axes:
        texts = [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
        legend = ax.get_legend()
        if legend is not None:
            boxes.append(legend.get_window_extent(renderer))
        boxes += [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text()]
    return boxes


def place_labels(ax: Any, points: list[tuple[float, float, str]], avoid: Sequence[tuple[float, float]] = ()) -> None:
    """Label each (x, y, text) point of `ax` without overlap (see the module docstring); the
    points in `avoid` (unlabelled markers) are kept clear too."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.draw_without_rendering()  # positions of ticks and legend are known from here on
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    centres = [ax.transData.transform((x, y)) for x, y in [(x, y) for x, y, _ in points] + list(avoid)]
    taken = _other_text(fig, renderer) + [
        Bbox.from_extents(cx - POINT_RADIUS_PX, cy - POINT_RADIUS_PX, cx + POINT_RADIUS_PX, cy + POINT_RADIUS_PX)
        for cx, cy in centres
    ]
    scale = fig.dpi / 72.0  # offsets are in points, boxes in pixels
    first = PATTERN[0]
    for x, y, text in points:
        # The label's box is measured once, at the first spot; every other spot is the same box
        # shifted by the offset (same text, same alignment). Measuring each candidate annotation
        # instead cost ~10 ms apiece (its leader line's clipping), 20 s for a 66-workload plot.
        probe = ax.annotate(text, (x, y), xytext=first, textcoords="offset points", fontsize=7, annotation_clip=False)
        probe.update_positions(renderer)
        base = Text.get_window_extent(probe, renderer)
        probe.remove()
        chosen = None
        for ring in range(1, RINGS + 1):
            for dx, dy in PATTERN:
                shift_x, shift_y = (dx * ring - first[0]) * scale, (dy * ring - first[1]) * scale
                box = _padded(base.translated(shift_x, shift_y), PAD_PX)
                if (
                    box.x0 >= inside.x0
                    and box.x1 <= inside.x1
                    and box.y0 >= inside.y0
                    and box.y1 <= inside.y1
                    and not any(_overlaps(box, other) for other in taken)
                ):
                    taken.append(box)
                    chosen = (dx * ring, dy * ring), ring
                    break
            if chosen is not None:
                break
        # nowhere free within the rings: the nearest spot, still numbered
        offset, ring = chosen or (first, 1)
        ax.annotate(
            text,
            (x, y),
            xytext=offset,
            textcoords="offset points",
            fontsize=7,
            # a label away from its point gets a leader line (drawn, not measured: the text
            # alone must stay clear of the other labels and text)
            arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#8c959f"} if ring > 1 else None,
            gid=f"label-{text}",
            annotation_clip=False,
        )
