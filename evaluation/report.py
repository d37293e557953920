"""The A/B report: what goes in it, and its Markdown rendering.

`Report` gathers the comparison (`ABResult`), the curves behind the plots and the protocol
facts a reader needs (windows, attribution, censoring, sizes). `render_markdown` writes
the text report; `hir_sdk.evaluation.report_html.render_html` the self-contained page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hir_sdk.evaluation.ab import ABResult, MetricDelta
from hir_sdk.evaluation.metrics import ReliabilityBins, lift_curve, reliability_bins


@dataclass(frozen=True)
class ModelCurves:
    """Per-model data behind the reliability diagram and the lift curve."""

    name: str
    reliability: ReliabilityBins
    lift_x: np.ndarray  # fraction of examples examined, highest scores first
    lift_y: np.ndarray  # fraction of conversions captured

    @classmethod
    def of(cls, name: str, y: np.ndarray, p: np.ndarray, n_bins: int = 10) -> ModelCurves:
        x, captured = lift_curve(y, p, n_points=51)
        return cls(name, reliability_bins(y, p, n_bins=n_bins), x, captured)


@dataclass(frozen=True)
class Report:
    title: str
    ab: ABResult
    control: ModelCurves
    treatment: ModelCurves
    protocol: dict[str, str] = field(default_factory=dict)
    slice_rules: dict[str, str] = field(default_factory=dict)  # slice name -> its rule


def _num(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def delta_cell(d: MetricDelta) -> str:
    """`+0.0123 [low, high] ✓`: the delta, its interval, and ✓ / ✗ when significant."""
    mark = ""
    if d.delta.excludes_zero():
        good = (d.delta.estimate < 0) == (d.spec.better == "lower")
        mark = " ✓" if d.spec.better != "one" and good else " ✗" if d.spec.better != "one" else ""
    return f"{d.delta.estimate:+.4f} [{_num(d.delta.low)}, {_num(d.delta.high)}]{mark}"


def resample_note(ab: ABResult) -> str:
    """The sentence that says how the intervals were computed: the level, the seed and the
    resamples they rest on; when some were skipped, how many and why (no converting user
    drawn, or the metric undefined on the resample)."""
    head = f"Intervals: {100 * ab.confidence:.0f}% paired bootstrap over users"
    usable = ab.n_bootstrap - ab.no_conversion
    fewer = [d for d in ab.metrics if d.resamples < usable]
    if not ab.no_conversion and not fewer:
        return f"{head}, {ab.n_bootstrap} resamples, seed {ab.seed}."
    text = f"{head}, seed {ab.seed}, computed from {usable} of {ab.n_bootstrap} resamples"
    if ab.no_conversion:
        text += (
            f": {ab.no_conversion} drew no user with a conversion, on which no metric is "
            "defined, and were skipped"
        )
    text += "."
    if fewer:
        text += " Fewer where a metric was undefined on a resample: " + ", ".join(
            f"{d.spec.label} from {d.resamples}" for d in fewer
        )
        text += "."
    return text


def slice_resample_notes(ab: ABResult) -> list[str]:
    """For each slice whose intervals rest on fewer than all the resamples: how many each
    interval is computed from, and how many drew no conversion in the slice."""
    notes = []
    for s in ab.slices:
        if not s.deltas or all(d.resamples == ab.n_bootstrap for d in s.deltas):
            continue
        counts = ", ".join(f"{d.spec.label} from {d.resamples}" for d in s.deltas)
        why = (
            f" ({s.no_conversion} drew no conversion in the slice and were skipped)"
            if s.no_conversion
            else ""
        )
        notes.append(f"{s.name}: {counts} of the {ab.n_bootstrap} resamples{why}")
    return notes


def metric_rows(report: Report) -> list[tuple[str, str, str, str, str]]:
    """(metric, control, treatment, delta with interval, relative) rows, formatted."""
    rows = []
    for d in report.ab.metrics:
        rel = "n/a" if math.isnan(d.relative) else f"{100 * d.relative:+.2f}%"
        better = {"lower": "lower is better", "higher": "higher is better", "one": "1.0 is ideal"}[
            d.spec.better
        ]
        rows.append(
            (f"{d.spec.label} ({better})", _num(d.control), _num(d.treatment), delta_cell(d), rel)
        )
    return rows


def render_markdown(report: Report) -> str:
    ab = report.ab
    level = f"{100 * ab.confidence:.0f}%"
    lines = [
        f"# {report.title}",
        "",
        f"**Verdict:** {ab.verdict}",
        "",
        f"Control **{ab.control}** vs treatment **{ab.treatment}** on {ab.examples:,} "
        f"test examples from {ab.users:,} users ({ab.positives:,} conversions). "
        f"{resample_note(ab)} ✓ / ✗: the treatment is significantly better / worse.",
        "",
        "## Metrics",
        "",
        f"| metric | {ab.control} | {ab.treatment} | delta (treatment - control) "
        f"[{level} CI] | relative |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in metric_rows(report)]
    lines += [
        "",
        "## Slices",
        "",
        "| slice | examples | conversions | NE delta [CI] | AUC delta [CI] |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in ab.slices:
        cells = {d.metric: delta_cell(d) for d in s.deltas}
        lines.append(
            f"| {s.name} | {s.examples:,} | {s.positives:,} | "
            f"{cells.get('ne', 'too few conversions')} | "
            f"{cells.get('auc', 'too few conversions')} |"
        )
    fewer = slice_resample_notes(ab)
    if fewer:
        lines += ["", "Slice intervals from fewer resamples:", ""]
        lines += [f"- {note}" for note in fewer]
    if report.slice_rules:
        lines += ["", "How each slice is defined:", ""]
        lines += [f"- **{k}:** {v}" for k, v in report.slice_rules.items()]
    lines += [
        "",
        "## Calibration (reliability bins)",
        "",
        "| model | bin | mean predicted | observed rate | examples |",
        "|---|---|---:|---:|---:|",
    ]
    for curves in (report.control, report.treatment):
        r = curves.reliability
        for i in range(len(r.lower)):
            lines.append(
                f"| {curves.name} | [{r.lower[i]:.4f}, {r.upper[i]:.4f}] | "
                f"{r.mean_predicted[i]:.4f} | {r.observed_rate[i]:.4f} | "
                f"{r.weight[i]:,.0f} |"
            )
    lines += [
        "",
        "## Lift (share of conversions in the top-scored share of examples)",
        "",
        f"| top share | {report.control.name} | {report.treatment.name} |",
        "|---:|---:|---:|",
    ]
    for share in (0.01, 0.05, 0.1, 0.2, 0.5):
        lines.append(
            f"| {share:.0%} | {_at(report.control, share):.1%} | "
            f"{_at(report.treatment, share):.1%} |"
        )
    if report.protocol:
        lines += ["", "## Protocol", ""]
        lines += [f"- **{k}:** {v}" for k, v in report.protocol.items()]
    return "\n".join(lines) + "\n"


def _at(curves: ModelCurves, share: float) -> float:
    return float(np.interp(share, curves.lift_x, curves.lift_y))
