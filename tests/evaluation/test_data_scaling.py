"""Data scaling: nested seeded shares, each arm fitted per share and scored on the whole
test window, log-linear fits and where two lines cross."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.evaluation.data_scaling import (
    DataPoint,
    crossing,
    data_sweep,
    data_sweep_svg,
    fits,
    last_decade,
    render_data_sweep,
    share_rows,
)
from hir_sdk.evaluation.metrics import normalized_entropy
from hir_sdk.evaluation.pipeline import ABConfig, ranking_data
from hir_sdk.evaluation.rankers import make_ranker
from hir_sdk.evaluation.scaling import LogLinearFit


def test_shares_are_nested_sorted_and_seeded():
    rows = share_rows(1_000, [1.0, 0.1, 0.3])
    assert list(rows) == [0.1, 0.3, 1.0]
    assert [len(r) for r in rows.values()] == [100, 300, 1_000]
    assert all((np.diff(r) > 0).all() for r in rows.values())
    assert set(rows[0.1]) <= set(rows[0.3]) <= set(rows[1.0])
    np.testing.assert_array_equal(share_rows(1_000, [0.1])[0.1], rows[0.1])
    assert not np.array_equal(share_rows(1_000, [0.1], seed=1)[0.1], rows[0.1])
    assert len(share_rows(10, [0.001])[0.001]) == 1  # never an empty share
    with pytest.raises(ValueError, match=r"must be in \(0, 1\]"):
        share_rows(10, [0.0])


def test_two_lines_cross_where_they_meet():
    falling = LogLinearFit(slope=-0.02, intercept=1.0, r2=1.0)
    flat = LogLinearFit(slope=-0.005, intercept=0.94, r2=1.0)
    n = crossing(falling, flat)
    assert n == pytest.approx(10**4)  # 1.0 - 0.08 = 0.94 - 0.02 at log10(n) = 4
    assert falling(n) == pytest.approx(flat(n))
    assert crossing(falling, LogLinearFit(-0.02, 0.5, 1.0)) is None


def test_the_report_names_the_crossing_and_says_when_it_extrapolates():
    points = [
        DataPoint("multistage", s, n, 1.0 - 0.02 * np.log10(n), 1.0)
        for s, n in ((0.01, 100), (0.1, 1_000), (1.0, 10_000))
    ] + [
        DataPoint("xgboost", s, n, 0.955 - 0.005 * np.log10(n), 1.0)
        for s, n in ((0.01, 100), (0.1, 1_000), (1.0, 10_000))
    ]
    assert fits(points)["multistage"].slope == pytest.approx(-0.02)
    local = last_decade(points)["xgboost"]  # through the two largest sizes
    assert local.slope == pytest.approx(-0.005) and local(10_000) == pytest.approx(0.935)
    text = "\n".join(render_data_sweep(points, neural="multistage"))
    assert "| 1,000 | 0.9400 (1) | 0.9400 (1) |" in text
    assert "multistage against xgboost: the fitted lines cross at 1,000 examples" in text
    assert "(inside the measured range)" in text
    assert "at the largest size multistage's line is below" in text
    steep = [DataPoint("multistage", p.share, p.examples, p.ne - 0.1, 1.0) for p in points[:3]]
    text = "\n".join(render_data_sweep(steep + points[3:], "multistage"))
    assert "the fitted lines cross at 2.2e-04 examples (an extrapolation)" in text
    bent = [  # parallel to XGBoost over the last decade, above it
        DataPoint("multistage", 0.01, 100, 0.96, 1.0),
        DataPoint("multistage", 0.1, 1_000, 0.95, 1.0),
        DataPoint("multistage", 1.0, 10_000, 0.945, 1.0),
        *points[3:],
    ]
    text = "\n".join(render_data_sweep(bent, "multistage"))
    assert "between the two largest sizes -0.0050 per decade" in text
    assert "the lines through the two largest sizes cross nowhere (parallel)" in text
    assert data_sweep_svg(points, title="t").startswith("<svg")


def test_the_sweep_fits_each_arm_on_each_share(tiny_graph):
    config = ABConfig(tune=False)
    _, data = ranking_data(tiny_graph, config)
    points = data_sweep(data, ["popularity", "xgboost"], [0.2, 1.0], config)
    n = data.examples["train"].height
    assert [(p.arm, p.examples) for p in points] == [
        ("popularity", round(0.2 * n)),
        ("xgboost", round(0.2 * n)),
        ("popularity", n),
        ("xgboost", n),
    ]
    # the whole share is the arm fitted on the whole window, scored on the same test rows
    whole = make_ranker("xgboost", config).fit(data).predict(data, "test")
    assert points[3].ne == pytest.approx(float(normalized_entropy(data.labels("test"), whole)))
    assert points[1].ne != points[3].ne and all(p.seconds > 0 for p in points)
