"""The report's charts, drawn by matplotlib as inline SVG.

Each function returns one ``<svg>`` element as a string (no XML prolog), ready to paste
into an HTML page or to save as a ``.svg`` file. Notable points:

* Deterministic: the same inputs give the same string (a fixed ``svg.hashsalt``, no date
  in the metadata).
* Text stays text (``svg.fonttype = "none"``): matplotlib escapes it, so names such as
  ``<b>&x`` are shown literally and the SVG stays well-formed XML.
* ``line_chart`` skips non-finite points (a line breaks at them); a single point still
  draws. ``diagonal=True`` adds the dashed ``y = x`` reference (perfect calibration, or
  a random ranking on a lift curve).
* ``interval_chart`` is a horizontal forest plot: a dot with a whisker per row and a
  vertical zero line; rows with a non-finite estimate are shown as "n/a". The artists
  carry SVG ids for checks: ``point-<row>`` for each drawn dot, ``zero`` for the zero
  line; in ``line_chart``, ``series-<k>`` for each series and ``diagonal`` for the
  reference line.
* Colours: ``CONTROL`` for the first series, ``TREATMENT`` for the second.
"""

from __future__ import annotations

import io
import math

import matplotlib
import numpy as np
from matplotlib.figure import Figure

CONTROL = "#1f77b4"
TREATMENT = "#d62728"
PALETTE = (CONTROL, TREATMENT, "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
_STYLE = {
    "svg.hashsalt": "hir-sdk",  # ids derived from the content, not random
    "svg.fonttype": "none",  # text as <text>, searchable and escaped
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_DPI = 100


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :].strip()


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
    """Lines with markers for each ``(name, x, y)`` series, with a legend."""
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI, layout="constrained")
        ax = fig.add_subplot()
        if diagonal:
            lo = min(x_range[0] if x_range else 0.0, y_range[0] if y_range else 0.0)
            hi = max(x_range[1] if x_range else 1.0, y_range[1] if y_range else 1.0)
            (line,) = ax.plot([lo, hi], [lo, hi], "--", color="#888888", label=diagonal_label)
            line.set_gid("diagonal")
        for k, (name, x, y) in enumerate(series):
            x, y = np.asarray(x, float), np.asarray(y, float)
            y = np.where(np.isfinite(x) & np.isfinite(y), y, np.nan)  # a gap, not a point
            colour = PALETTE[k % len(PALETTE)]
            (line,) = ax.plot(x, y, "-o", color=colour, markersize=3.5, linewidth=1.6, label=name)
            line.set_gid(f"series-{k}")
        if x_range:
            ax.set_xlim(*x_range)
        if y_range:
            ax.set_ylim(*y_range)
        ax.set_title(title, fontsize=11, fontweight="bold")
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.grid(color="#eeeeee")
        if series or diagonal:
            ax.legend(loc="lower right", frameon=True, fontsize=8)
        return _svg(fig)


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
    """Forest plot: one ``(label, estimate, low, high)`` row each, dot + whisker, zero line,
    and the estimate with its interval printed right of the plot.

    ``colors`` optionally gives each row's dot colour (default dark grey).
    """
    height = 70 + row_height * max(len(rows), 1)
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI, layout="constrained")
        ax = fig.add_subplot()
        ax.axvline(0.0, color="#555555", linewidth=1).set_gid("zero")
        ys = np.arange(len(rows))[::-1]  # the first row on top
        finite = [v for _, *values in rows for v in values if math.isfinite(v)]
        for k, ((_, est, low, high), y) in enumerate(zip(rows, ys, strict=True)):
            colour = colors[k] if colors else "#333333"
            if not math.isfinite(est):
                ax.annotate(
                    "n/a",
                    (0.0, y),
                    xytext=(6, 0),
                    textcoords="offset points",
                    va="center",
                    color="#777777",
                )
                continue
            if math.isfinite(low) and math.isfinite(high):
                ax.plot([low, high], [y, y], color=colour, linewidth=1.6)
            (dot,) = ax.plot([est], [y], "o", color=colour, markersize=6)
            dot.set_gid(f"point-{k}")
        ax.set_yticks(ys, [label for label, *_ in rows])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        lo, hi = (min(finite), max(finite)) if finite else (-1.0, 1.0)
        pad = max(hi - lo, 1e-9) * 0.08
        ax.set_xlim(min(lo, 0.0) - pad, max(hi, 0.0) + pad)
        values = ax.secondary_yaxis("right")
        values.set_yticks(
            ys, [_interval_text(est, low, high, digits) for _, est, low, high in rows]
        )
        values.tick_params(length=0)
        values.spines["right"].set_visible(False)
        ax.set_title(title, fontsize=11, fontweight="bold")
        ax.set_xlabel(x_label)
        ax.grid(axis="x", color="#eeeeee")
        return _svg(fig)


def _interval_text(est: float, low: float, high: float, digits: int) -> str:
    if not math.isfinite(est):
        return "n/a"
    if math.isfinite(low) and math.isfinite(high):
        return f"{est:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
    return f"{est:+.{digits}f} [n/a]"
