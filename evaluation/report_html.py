"""The A/B report as one self-contained HTML page.

`render_html(report)` fills the Jinja2 template `templates/report.html.j2` (autoescaped)
with the report's tables and inline SVG charts (drawn by matplotlib:
`hir_sdk.evaluation.charts`): one HTML5 document, no scripts, no external assets, no
network. Notable points:

* The metric table comes from `report.metric_rows`, so the Markdown and HTML reports agree.
* The verdict box is green when the treatment is significantly better on NE (the whole interval
  of the NE delta below zero, NE being lower-is-better), red when significantly worse, grey
  otherwise (including undefined intervals).
* Forest plots show relative deltas, ``100 * delta / control`` in %, with their intervals: one for
  the metrics (calibration, whose ideal is 1.0, is left out), one for NE per slice. Dots are
  green / red / grey for significantly better / worse / not significant. Slices without deltas
  (too few conversions) appear only in the slice table.
* Reliability diagram (mean predicted vs observed rate, both axes on one scale, dashed ``y = x``)
  and lift curve (share of conversions captured vs share examined, dashed = random ranking).
* All report text is escaped; the output is deterministic in the report.
"""

from __future__ import annotations

import math
from functools import cache

import jinja2
import numpy as np
from markupsafe import Markup

from hir_sdk.evaluation.ab import MetricDelta
from hir_sdk.evaluation.report import (
    Report,
    delta_cell,
    metric_rows,
    resample_note,
    slice_resample_notes,
)

GOOD, BAD, NEUTRAL = "#2ca02c", "#d62728", "#7f7f7f"


def _outcome(d: MetricDelta) -> str:
    """'good' / 'bad' / 'neutral': is the treatment significantly better or worse on `d`?"""
    low, high = d.delta.low, d.delta.high
    if d.spec.better == "one" or not (math.isfinite(low) and math.isfinite(high)):
        return "neutral"
    if high < 0:
        return "good" if d.spec.better == "lower" else "bad"
    if low > 0:
        return "good" if d.spec.better == "higher" else "bad"
    return "neutral"


def _colour(d: MetricDelta) -> str:
    return {"good": GOOD, "bad": BAD, "neutral": NEUTRAL}[_outcome(d)]


def _relative_row(label: str, d: MetricDelta) -> tuple[str, float, float, float]:
    c = d.control
    if not c or not math.isfinite(c):
        return label, math.nan, math.nan, math.nan
    return label, 100 * d.delta.estimate / c, 100 * d.delta.low / c, 100 * d.delta.high / c


def _metric_chart(report: Report) -> str:
    from hir_sdk.evaluation.charts import interval_chart  # matplotlib: on first use

    ab = report.ab
    shown = [d for d in ab.metrics if d.spec.better != "one"]
    better = {"lower": "lower better", "higher": "higher better"}
    return interval_chart(
        [_relative_row(f"{d.spec.label} ({better[d.spec.better]})", d) for d in shown],
        title=f"Relative change, treatment vs control ({100 * ab.confidence:.0f}% CI)",
        x_label="(treatment - control) / control, %",
        colors=[_colour(d) for d in shown],
        width=900,
    )


def _slices(report: Report) -> tuple[list[list[str]], str]:
    """The slice table's rows and the NE forest plot ("" when no slice has an NE delta)."""
    from hir_sdk.evaluation.charts import interval_chart  # matplotlib: on first use

    rows, chart_rows, colours = [], [], []
    for s in report.ab.slices:
        cells = {d.metric: delta_cell(d) for d in s.deltas}
        rows.append(
            [
                s.name,
                f"{s.examples:,}",
                f"{s.positives:,}",
                cells.get("ne", "too few conversions"),
                cells.get("auc", "too few conversions"),
            ]
        )
        ne = next((d for d in s.deltas if d.metric == "ne"), None)
        if ne is not None:
            chart_rows.append(_relative_row(s.name, ne))
            colours.append(_colour(ne))
    if not chart_rows:
        return rows, ""
    chart = interval_chart(
        chart_rows,
        title="NE change per slice (lower is better)",
        x_label="(treatment - control) / control NE, %",
        colors=colours,
        width=900,
    )
    return rows, chart


def _curves(report: Report) -> tuple[str, str]:
    """The reliability diagram and the lift curve of both arms."""
    from hir_sdk.evaluation.charts import line_chart  # matplotlib: on first use

    c, t = report.control, report.treatment
    rel = [(m.name, m.reliability.mean_predicted, m.reliability.observed_rate) for m in (c, t)]
    values = np.concatenate([np.asarray(a, float) for _, x, y in rel for a in (x, y)])
    values = values[np.isfinite(values)]
    top = float(values.max()) if len(values) else 1.0
    top = min(1.0, 1.05 * top) if top > 0 else 1.0
    reliability = line_chart(
        rel,
        title="Reliability diagram",
        x_label="mean predicted",
        y_label="observed conversion rate",
        diagonal=True,
        x_range=(0.0, top),
        y_range=(0.0, top),
        diagonal_label="perfectly calibrated",
    )
    lift = line_chart(
        [(m.name, m.lift_x, m.lift_y) for m in (c, t)],
        title="Lift (cumulative gains)",
        x_label="share of examples, top scores first",
        y_label="share of conversions captured",
        diagonal=True,
        x_range=(0.0, 1.0),
        y_range=(0.0, 1.0),
        diagonal_label="random",
    )
    return reliability, lift


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hir_sdk.evaluation", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2")


def render_html(report: Report) -> str:
    """The report as one self-contained HTML5 page (inline CSS and SVG, no scripts)."""
    ab = report.ab
    level = f"{100 * ab.confidence:.0f}%"
    slice_rows, slice_chart = _slices(report)
    reliability, lift = _curves(report)
    return _template().render(
        title=report.title,
        ab=ab,
        resamples=resample_note(ab),
        outcome=_outcome(ab.metric("ne")),
        metric_header=[
            "metric",
            ab.control,
            ab.treatment,
            f"delta (treatment - control) [{level} CI]",
            "relative",
        ],
        metric_rows=[list(r) for r in metric_rows(report)],
        # the charts are SVG whose text matplotlib escaped, inserted as markup
        metric_chart=Markup(_metric_chart(report)),
        slice_rows=slice_rows,
        slice_chart=Markup(slice_chart),
        slice_rules=report.slice_rules,
        slice_resamples=slice_resample_notes(ab),
        reliability=Markup(reliability),
        lift=Markup(lift),
        protocol={str(k): str(v) for k, v in report.protocol.items()},
    )
