"""Platt scaling: the fitted (a, b) is the log-loss optimum, checked by its optimality
conditions and by recovering planted parameters."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.ranking.calibration import PlattScaling


def test_fit_satisfies_the_optimality_conditions():
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0])
    y = np.array([0, 0, 1, 0, 0, 1, 1, 1])
    platt = PlattScaling.fit(x, y)
    p = platt(x)
    # gradient of the log loss in (a, b) vanishes: sum (p - y) x = 0 and sum (p - y) = 0
    assert abs(np.sum(p - y)) < 1e-8
    assert abs(np.sum((p - y) * x)) < 1e-8
    assert platt.a > 0


def test_recovers_planted_parameters():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200_000)
    y = (rng.random(x.size) < 1 / (1 + np.exp(-(0.5 * x - 3.0)))).astype(float)
    platt = PlattScaling.fit(x, y)
    assert platt.a == pytest.approx(0.5, abs=0.03)
    assert platt.b == pytest.approx(-3.0, abs=0.05)


def test_needs_both_labels():
    with pytest.raises(ValueError, match="both positive and negative"):
        PlattScaling.fit(np.array([0.0, 1.0]), np.array([1, 1]))


def test_logits_in_a_narrow_range_far_from_the_rate():
    """Margins of a tree model: between -5.3 and -4.2 while the positive rate is 3.7%
    (plain Newton from the identity diverged to a ~ 1e10 here)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-5.3, -4.2, size=5_000)
    y = (rng.random(x.size) < 1 / (1 + np.exp(-(2.0 * x + 6.2)))).astype(float)
    platt = PlattScaling.fit(x, y)
    p = platt(x)
    assert abs(np.sum(p - y)) < 1e-6 and abs(np.sum((p - y) * x)) < 1e-5
    assert platt.a == pytest.approx(2.0, abs=1.0)
