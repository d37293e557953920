"""Tiny inline-SVG chart primitives for the HTML report (no plotting dependency).

Each function returns one ``<svg>`` element as a string, ready to paste into an HTML page or to
save as a ``.svg`` file. Notable points:

* Deterministic: the same inputs give the same string (coordinates are printed with two
  decimals, tick labels with the fewest decimals that show the tick step exactly).
* All text (titles, labels, legend entries) goes through ``html.escape``, so names such as
  ``<b>&x`` are shown literally and the SVG stays well-formed XML.
* ``line_chart`` skips non-finite points (a line breaks at them); degenerate ranges (one point,
  constant values) are padded, so a single point still draws. ``diagonal=True`` adds the dashed
  ``y = x`` reference (perfect calibration, or a random ranking on a lift curve).
* ``interval_chart`` is a horizontal forest plot: a dot with a whisker per row and a vertical
  zero line; rows with a non-finite estimate are shown as "n/a". The point is drawn as
  ``<circle class="point">`` and the zero line as ``<line class="zero">`` for easy checks.
* Colours: ``CONTROL`` for the first series, ``TREATMENT`` for the second.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

CONTROL = "#1f77b4"
TREATMENT = "#d62728"
PALETTE = (CONTROL, TREATMENT, "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
_FONT = 'font-family="system-ui, sans-serif"'


def _f(v: float) -> str:
    return f"{v:.2f}"


def _open(width: int, height: int, title: str) -> list[str]:
    t = escape(title)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{t}" {_FONT} font-size="12">',
        f"<title>{t}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{_f(width / 2)}" y="18" text-anchor="middle" font-size="14" '
        f'font-weight="600">{t}</text>',
    ]


def _range(values: list[float], pad: float = 0.0) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if hi - lo < 1e-12:
        half = max(abs(lo) * 0.1, 0.5)
        return lo - half, hi + half
    span = hi - lo
    return lo - pad * span, hi + pad * span


def _ticks(lo: float, hi: float, n: int = 5) -> tuple[list[float], int]:
    """About ``n`` round ticks inside ``[lo, hi]`` and the decimals needed to print them."""
    raw = (hi - lo) / max(n, 1)
    if not raw > 0 or not math.isfinite(raw):
        return [lo], 2
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10)), key=lambda v: abs(math.log(v / raw)))
    decimals = next((d for d in range(10) if abs(round(step * 10**d) - step * 10**d) < 1e-6), 9)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step:
        ticks.append(round(k * step, decimals + 2))
        k += 1
    return ticks, decimals


def _label(v: float, decimals: int) -> str:
    text = f"{v:.{decimals}f}"
    return f"{0.0:.{decimals}f}" if float(text) == 0 else text  # no "-0.0"


def line_chart(
    series: list[tuple[str, np.ndarray, np.ndarray]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 460,
    height: int = 320,
    diagonal: bool = False,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    diagonal_label: str = "y = x",
) -> str:
    """Lines with markers for each ``(name, x, y)`` series, axes with ~5 ticks and a legend."""
    left, right, top, bottom = 58, 16, 30, 46
    pw, ph = width - left - right, height - top - bottom
    data = [(name, np.asarray(x, float), np.asarray(y, float)) for name, x, y in series]
    xs = [float(v) for _, x, _ in data for v in x]
    ys = [float(v) for _, _, y in data for v in y]
    x0, x1 = x_range if x_range is not None else _range(xs, 0.05)
    y0, y1 = y_range if y_range is not None else _range(ys, 0.05)
    if not x1 > x0:
        x0, x1 = _range([x0])
    if not y1 > y0:
        y0, y1 = _range([y0])

    def px(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def py(v: float) -> float:
        return top + ph - (v - y0) / (y1 - y0) * ph

    out = _open(width, height, title)
    xt, xd = _ticks(x0, x1)
    yt, yd = _ticks(y0, y1)
    for t in xt:
        out.append(
            f'<line x1="{_f(px(t))}" y1="{top}" x2="{_f(px(t))}" y2="{top + ph}" stroke="#e5e5e5"/>'
        )
        out.append(
            f'<text x="{_f(px(t))}" y="{top + ph + 16}" text-anchor="middle">{_label(t, xd)}</text>'
        )
    for t in yt:
        out.append(
            f'<line x1="{left}" y1="{_f(py(t))}" x2="{left + pw}" y2="{_f(py(t))}" '
            'stroke="#e5e5e5"/>'
        )
        out.append(
            f'<text x="{left - 6}" y="{_f(py(t) + 4)}" text-anchor="end">{_label(t, yd)}</text>'
        )
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#555555"/>'
    )
    out.append(
        f'<text x="{_f(left + pw / 2)}" y="{height - 8}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    cy = top + ph / 2
    out.append(
        f'<text x="14" y="{_f(cy)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f(cy)})">{escape(y_label)}</text>'
    )
    legend = []
    if diagonal:
        a, b = max(x0, y0), min(x1, y1)
        if b > a:
            out.append(
                f'<line class="diagonal" x1="{_f(px(a))}" y1="{_f(py(a))}" '
                f'x2="{_f(px(b))}" y2="{_f(py(b))}" stroke="#888888" '
                'stroke-dasharray="5 4"/>'
            )
        legend.append((diagonal_label, "#888888", True))
    for i, (name, x, y) in enumerate(data):
        colour = PALETTE[i % len(PALETTE)]
        legend.append((name, colour, False))
        ok = np.isfinite(x) & np.isfinite(y)
        segment: list[str] = []
        for j in range(len(x) + 1):
            if j < len(x) and ok[j]:
                segment.append(f"{_f(px(x[j]))},{_f(py(y[j]))}")
                continue
            if len(segment) > 1:
                out.append(
                    f'<polyline points="{" ".join(segment)}" fill="none" '
                    f'stroke="{colour}" stroke-width="2"/>'
                )
            segment = []
        for j in np.flatnonzero(ok):
            out.append(f'<circle cx="{_f(px(x[j]))}" cy="{_f(py(y[j]))}" r="2.5" fill="{colour}"/>')
    lw = 16 + 7 * max((len(n) for n, _, _ in legend), default=0)
    lx, ly = left + pw - lw - 28, top + ph - 8 - 16 * len(legend)
    if legend:
        out.append(
            f'<rect x="{lx}" y="{ly}" width="{lw + 22}" height="{16 * len(legend) + 4}" '
            'fill="#ffffff" fill-opacity="0.85" stroke="#cccccc"/>'
        )
    for k, (name, colour, dashed) in enumerate(legend):
        yy = ly + 12 + 16 * k
        dash = ' stroke-dasharray="5 4"' if dashed else ""
        out.append(
            f'<line x1="{lx + 4}" y1="{yy - 4}" x2="{lx + 20}" y2="{yy - 4}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{lx + 24}" y="{yy}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def interval_chart(
    rows: list[tuple[str, float, float, float]],
    *,
    title: str,
    x_label: str,
    width: int = 560,
    row_height: int = 26,
    colors: list[str] | None = None,
    digits: int = 2,
) -> str:
    """Forest plot: one ``(label, estimate, low, high)`` row each, dot + whisker, zero line.

    ``colors`` optionally gives each row's dot colour (default dark grey).
    """
    label_w = min(320, max(60, 7 * max((len(r[0]) for r in rows), default=0) + 14))
    value_w = 7 * (3 * (digits + 4) + 6) + 10  # room for "+1.23 [+0.45, +2.01]"
    top, bottom = 30, 44
    left, pw = label_w, width - label_w - value_w
    height = top + bottom + row_height * max(len(rows), 1)
    values = [0.0] + [float(v) for r in rows for v in r[1:]]
    x0, x1 = _range(values, 0.08)

    def px(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    out = _open(width, height, title)
    axis_y = top + row_height * max(len(rows), 1)
    ticks, decimals = _ticks(x0, x1)
    for t in ticks:
        out.append(
            f'<line x1="{_f(px(t))}" y1="{top}" x2="{_f(px(t))}" y2="{axis_y}" stroke="#eeeeee"/>'
        )
        out.append(
            f'<text x="{_f(px(t))}" y="{axis_y + 16}" text-anchor="middle">'
            f"{_label(t, decimals)}</text>"
        )
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + pw}" y2="{axis_y}" stroke="#555555"/>')
    out.append(
        f'<line class="zero" x1="{_f(px(0.0))}" y1="{top}" x2="{_f(px(0.0))}" '
        f'y2="{axis_y}" stroke="#333333" stroke-dasharray="3 3"/>'
    )
    out.append(
        f'<text x="{_f(left + pw / 2)}" y="{height - 8}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    for i, (label, est, low, high) in enumerate(rows):
        cy = top + row_height * i + row_height / 2
        colour = colors[i] if colors is not None else "#333333"
        out.append(
            f'<text x="{left - 8}" y="{_f(cy + 4)}" text-anchor="end">{escape(label)}</text>'
        )
        vx = left + pw + 10
        if not math.isfinite(est):
            out.append(f'<text x="{_f(px(0.0) + 6)}" y="{_f(cy + 4)}" fill="#777777">n/a</text>')
            out.append(f'<text x="{vx}" y="{_f(cy + 4)}" fill="#777777">n/a</text>')
            continue
        if math.isfinite(low) and math.isfinite(high):
            out.append(
                f'<line x1="{_f(px(low))}" y1="{_f(cy)}" x2="{_f(px(high))}" '
                f'y2="{_f(cy)}" stroke="{colour}" stroke-width="2"/>'
            )
            for v in (low, high):
                out.append(
                    f'<line x1="{_f(px(v))}" y1="{_f(cy - 5)}" x2="{_f(px(v))}" '
                    f'y2="{_f(cy + 5)}" stroke="{colour}" stroke-width="2"/>'
                )
            ci = f"[{low:+.{digits}f}, {high:+.{digits}f}]"
        else:
            ci = "[n/a]"
        out.append(
            f'<circle class="point" cx="{_f(px(est))}" cy="{_f(cy)}" r="4.5" fill="{colour}"/>'
        )
        out.append(f'<text x="{vx}" y="{_f(cy + 4)}">{est:+.{digits}f} {ci}</text>')
    out.append("</svg>")
    return "\n".join(out)
