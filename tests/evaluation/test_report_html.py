"""Tests for hir_sdk.evaluation.report_html and charts: a self-contained, escaped page."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html import escape

import numpy as np
import pytest

from hir_sdk.evaluation.ab import compare
from hir_sdk.evaluation.charts import interval_chart, line_chart
from hir_sdk.evaluation.report import ModelCurves, Report, metric_rows
from hir_sdk.evaluation.report_html import render_html

SVG_NS = "{http://www.w3.org/2000/svg}"
SVG_RE = re.compile(r"<svg\b.*?</svg>", re.DOTALL)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@pytest.fixture(scope="module")
def report() -> Report:
    rng = np.random.default_rng(0)
    n, n_users = 3000, 300
    users = rng.integers(0, n_users, n)
    logit = rng.normal(-2.0, 1.2, n) + rng.normal(0, 0.5, n_users)[users]
    p_true = _sigmoid(logit)
    y = (rng.random(n) < p_true).astype(np.int64)
    p_control = _sigmoid(logit + rng.normal(0, 1.2, n))
    p_treatment = _sigmoid(logit + rng.normal(0, 0.3, n))
    slices = {"new users": users < 60, "<b>&x": users >= 60, "empty": np.zeros(n, dtype=bool)}
    ab = compare(
        y,
        p_control,
        p_treatment,
        users,
        control="baseline",
        treatment="candidate",
        slices=slices,
        n_bootstrap=40,
        seed=1,
    )
    return Report(
        title="Baseline vs candidate <test>",
        ab=ab,
        control=ModelCurves.of("baseline", y, p_control),
        treatment=ModelCurves.of("candidate", y, p_treatment),
        protocol={"window": "2024-01-01 .. 2024-01-31", "attribution": "7-day click & view"},
    )


@pytest.fixture(scope="module")
def page(report: Report) -> str:
    return render_html(report)


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()
    assert page.count("<html") == 1 and page.count("<body>") == 1


def test_page_content(report: Report, page: str) -> None:
    assert escape(report.ab.verdict) in page
    assert escape(report.title) in page and "<test>" not in page
    for row in metric_rows(report):
        for cell in row:
            assert escape(cell) in page
    for s in report.ab.slices:
        assert escape(s.name) in page
    for key, value in report.protocol.items():
        assert escape(key) in page and escape(value) in page
    assert "too few conversions" in page  # the "empty" slice is listed, not plotted


def test_verdict_box_outcome(report: Report, page: str) -> None:
    ne = report.ab.metric("ne")
    assert ne.delta.high < 0  # the less noisy treatment wins on these data
    assert 'class="verdict good"' in page


def test_four_charts_that_parse(page: str) -> None:
    assert page.count("<svg") == 4
    snippets = SVG_RE.findall(page)
    assert len(snippets) == 4
    for snippet in snippets:
        root = ET.fromstring(snippet)
        assert root.tag == SVG_NS + "svg"


def test_escaping(page: str) -> None:
    assert "&lt;b&gt;&amp;x" in page
    assert "<b>&x" not in page


def test_deterministic(report: Report, page: str) -> None:
    assert render_html(report) == page


def _points(svg: str) -> tuple[list[float], float]:
    """The x of each drawn dot (SVG ids `point-<row>`) and of the vertical zero line."""
    root = ET.fromstring(svg)
    groups = {g.get("id"): g for g in root.iter(SVG_NS + "g") if g.get("id")}
    points = [
        float(next(groups[gid].iter(SVG_NS + "use")).get("x"))
        for gid in sorted(groups)
        if gid.startswith("point-")
    ]
    x1, _, x2, _ = (
        float(v)
        for v in re.findall(r"[-\d.]+", next(groups["zero"].iter(SVG_NS + "path")).get("d"))
    )
    assert x1 == x2
    return points, x1


def test_interval_chart_negative_left_of_zero() -> None:
    svg = interval_chart(
        [("worse", -2.0, -3.0, -1.0), ("better", 1.5, 0.5, 2.5)], title="t", x_label="x"
    )
    (neg, pos), zero = _points(svg)
    assert neg < zero < pos


def test_interval_chart_nan_row_and_escaping() -> None:
    svg = interval_chart(
        [("a<b", float("nan"), float("nan"), float("nan")), ("ok", 0.5, 0.1, 0.9)],
        title="T & U",
        x_label="x",
    )
    points, _ = _points(svg)
    assert len(points) == 1
    assert "n/a" in svg and "a&lt;b" in svg and "T &amp; U" in svg


def test_line_chart_single_point() -> None:
    svg = line_chart(
        [("only", np.array([0.3]), np.array([0.4]))], title="one", x_label="x", y_label="y"
    )
    root = ET.fromstring(svg)
    series = next(g for g in root.iter(SVG_NS + "g") if g.get("id") == "series-0")
    markers = list(series.iter(SVG_NS + "use"))
    assert len(markers) == 1
    assert all(np.isfinite(float(markers[0].get(k))) for k in ("x", "y"))
    assert "nan" not in svg.lower()


def test_line_chart_diagonal_and_deterministic() -> None:
    x = np.linspace(0, 1, 6)
    series = [("control", x, x**0.5), ("treatment", x, x**0.3)]
    svg = line_chart(
        series,
        title="lift",
        x_label="x",
        y_label="y",
        diagonal=True,
        x_range=(0, 1),
        y_range=(0, 1),
    )
    root = ET.fromstring(svg)
    assert any(e.get("id") == "diagonal" for e in root.iter(SVG_NS + "g"))
    assert "#1f77b4" in svg and "#d62728" in svg
    assert svg == line_chart(
        series,
        title="lift",
        x_label="x",
        y_label="y",
        diagonal=True,
        x_range=(0, 1),
        y_range=(0, 1),
    )
