"""The A/B report as one self-contained HTML page.

`render_html(report)` returns an HTML5 document with inline CSS and inline SVG charts (from
`hir_sdk.evaluation.svg_charts`): no scripts, no external assets, no network. Notable points:

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
from html import escape

import numpy as np

from hir_sdk.evaluation.ab import MetricDelta
from hir_sdk.evaluation.report import Report, delta_cell, metric_rows
from hir_sdk.evaluation.svg_charts import interval_chart, line_chart

GOOD, BAD, NEUTRAL = "#2ca02c", "#d62728", "#7f7f7f"

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 980px; margin: 24px auto; padding: 0 16px; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.3em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.verdict { padding: 10px 14px; border-radius: 6px; font-weight: 600; border-left: 6px solid; }
.verdict.good { background: #e8f5e9; border-color: #2ca02c; }
.verdict.bad { background: #fdecea; border-color: #d62728; }
.verdict.neutral { background: #f1f1f1; border-color: #7f7f7f; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 4px 8px; }
th { background: #f6f6f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
.note { color: #666; font-size: 0.88em; }
svg { max-width: 100%; height: auto; }
""".strip()


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


def _table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if i in numeric else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(body) + "\n</table>"


def _metrics_section(report: Report) -> list[str]:
    ab = report.ab
    level = f"{100 * ab.confidence:.0f}%"
    header = [
        "metric",
        ab.control,
        ab.treatment,
        f"delta (treatment - control) [{level} CI]",
        "relative",
    ]
    rows = [list(r) for r in metric_rows(report)]
    shown = [d for d in ab.metrics if d.spec.better != "one"]
    better = {"lower": "lower better", "higher": "higher better"}
    chart = interval_chart(
        [_relative_row(f"{d.spec.label} ({better[d.spec.better]})", d) for d in shown],
        title=f"Relative change, treatment vs control ({level} CI)",
        x_label="(treatment - control) / control, %",
        colors=[_colour(d) for d in shown],
        width=900,
    )
    return [
        "<h2>Metrics</h2>",
        _table(header, rows, {1, 2, 3, 4}),
        '<p class="note">&#10003; / &#10007;: the treatment is significantly better / worse. '
        "Dots: green = significantly better, red = significantly worse, grey = not "
        "significant.</p>",
        chart,
    ]


def _slices_section(report: Report) -> list[str]:
    ab = report.ab
    if not ab.slices:
        return []
    rows, chart_rows, colours = [], [], []
    for s in ab.slices:
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
    out = ["<h2>Slices</h2>"]
    if chart_rows:
        out.append(
            interval_chart(
                chart_rows,
                title="NE change per slice (lower is better)",
                x_label="(treatment - control) / control NE, %",
                colors=colours,
                width=900,
            )
        )
    out.append(
        _table(
            ["slice", "examples", "conversions", "NE delta [CI]", "AUC delta [CI]"],
            rows,
            {1, 2, 3, 4},
        )
    )
    if report.slice_rules:
        out += ['<p class="note">How each slice is defined:</p>', "<ul>"]
        out += [f"<li><b>{escape(k)}:</b> {escape(v)}</li>" for k, v in report.slice_rules.items()]
        out.append("</ul>")
    return out


def _curves_section(report: Report) -> list[str]:
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
    return [
        "<h2>Calibration and lift</h2>",
        f'<div class="charts">\n{reliability}\n{lift}\n</div>',
        '<p class="note">Reliability bins hold about equal numbers of examples (quantile '
        "bins); the dashed line is a perfectly calibrated model. On the lift curve the "
        "dashed line is a random ranking; higher is better.</p>",
    ]


def render_html(report: Report) -> str:
    """The report as one self-contained HTML5 page (inline CSS and SVG, no scripts)."""
    ab = report.ab
    level = f"{100 * ab.confidence:.0f}%"
    outcome = _outcome(ab.metric("ne"))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(report.title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(report.title)}</h1>",
        f'<div class="verdict {outcome}">Verdict: {escape(ab.verdict)}</div>',
        f"<p>Control <b>{escape(ab.control)}</b> vs treatment <b>{escape(ab.treatment)}</b> "
        f"on {ab.examples:,} test examples from {ab.users:,} users ({ab.positives:,} "
        f"conversions). Intervals: {level} paired bootstrap over users, {ab.n_bootstrap} "
        f"resamples, seed {ab.seed}.</p>",
    ]
    parts += _metrics_section(report)
    parts += _slices_section(report)
    parts += _curves_section(report)
    if report.protocol:
        parts += ["<h2>Protocol</h2>", "<ul>"]
        parts += [
            f"<li><b>{escape(str(k))}:</b> {escape(str(v))}</li>"
            for k, v in report.protocol.items()
        ]
        parts.append("</ul>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"
