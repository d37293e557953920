"""Scaling sweeps: the log-linear fit, compute accounting, and both sweeps end to end on
the tiny world (small sizes, few steps)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from hir_sdk.evaluation.pipeline import ABConfig
from hir_sdk.evaluation.scaling import (
    ScalingPoint,
    encoder_sweep,
    fit_log_linear,
    render_scaling,
    scaling_svg,
    user_model_sweep,
)
from hir_sdk.ranking.baselines import XGBoostConfig
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.sequence import UserModelConfig
from hir_sdk.training import TrainConfig
from hir_sdk.training.config import DistillConfig, EngagementConfig, ModelSizes
from tests.evaluation.test_pipeline_hir import SMALL_RANKER

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)

AB = ABConfig(n_bootstrap=10, xgboost=XGBoostConfig(n_estimators=30))
UNTIL = 1_768_608_000  # 2026-01-17, the end of the encoders' training window


def test_the_fit_recovers_a_line_and_scores_the_scatter():
    compute = np.array([1e12, 1e13, 1e14, 1e15])
    fit = fit_log_linear(compute, 0.9 - 0.01 * np.log10(compute))
    assert fit.slope == pytest.approx(-0.01) and fit.intercept == pytest.approx(0.9)
    assert fit.r2 == pytest.approx(1.0)
    noisy = np.array([0.79, 0.775, 0.772, 0.745])
    fit = fit_log_linear(compute, noisy)
    x = np.log10(compute)
    slope = np.sum((x - x.mean()) * (noisy - noisy.mean())) / np.sum((x - x.mean()) ** 2)
    assert fit.slope == pytest.approx(slope)
    residual = noisy - (fit.intercept + fit.slope * x)
    r2 = 1 - np.sum(residual**2) / np.sum((noisy - noisy.mean()) ** 2)
    assert fit.r2 == pytest.approx(r2) and 0 < fit.r2 < 1
    with pytest.raises(ValueError, match="at least 3"):
        fit_log_linear([1e12, 1e13], [0.8, 0.7])


def test_compute_counts_forward_and_backward():
    point = ScalingPoint("encoder", "dim 8", params=1_000, train_tokens=50, forward_tokens=20, ne=1)
    assert point.compute == 6 * 1_000 * 50 + 2 * 1_000 * 20


def test_encoder_sweep_on_the_tiny_world(tiny_world, tiny_graph, tmp_path):
    base = TrainConfig(
        steps=3,
        batch_size=16,
        eval_every=3,
        checkpoint_every=3,
        eval_anchors=16,
        train_until="2026-01-17",
        engagement=EngagementConfig(pairs=16),
        distill=DistillConfig(seed_rows=128),
    )
    sizes = [
        (f"dim {d}", ModelSizes(dim=d, out_dim=16, heads=2, layers=1, prototypes=(4, 16, 64)))
        for d in (8, 16, 32)
    ]
    points = encoder_sweep(
        tiny_world, tiny_graph, sizes, base, tmp_path, ab=AB, snapshot_times=[UNTIL]
    )
    assert [p.size for p in points] == ["dim 8", "dim 16", "dim 32"]
    assert points[0].params < points[1].params < points[2].params
    for point in points:
        records = [
            json.loads(line)
            for line in (tmp_path / f"encoder_{point.size.replace(' ', '_')}" / "metrics.jsonl")
            .read_text()
            .splitlines()
        ]
        assert len(records) == 3
        assert point.train_tokens == sum(r["student_tokens"] for r in records)
        # each step: 16 anchors and 4 x 16 pair views through the student, at least a node each
        assert all(r["student_tokens"] >= 16 + 4 * 16 for r in records)
        assert point.forward_tokens == sum(r["teacher_tokens"] for r in records)
        assert np.isfinite(point.ne) and point.ne > 0
    assert "R² = " in "\n".join(render_scaling(points))
    svg = scaling_svg(points)
    assert svg.startswith("<svg") and "encoder fit, R²" in svg


def test_user_model_sweep_counts_the_history_it_reads(tiny_world, tiny_graph, early_run):  # noqa: F811
    hir = build_hir_lookup(early_run, tiny_world, tiny_graph, times=[UNTIL])
    sizes = [
        (f"dim {d}", UserModelConfig(dim=d, heads=2, layers=1, out_dim=8, history=32))
        for d in (8, 16, 32)
    ]
    base = dataclasses.replace(SMALL_RANKER, max_train_examples=4_000, max_valid_examples=2_000)
    points = user_model_sweep(tiny_graph, hir, sizes, base, ab=AB)
    assert points[0].params < points[1].params < points[2].params
    # the same examples and history windows for every size: the same tokens
    assert len({p.train_tokens for p in points}) == 1 and points[0].train_tokens > 0
    assert all(p.forward_tokens == 0 and np.isfinite(p.ne) and p.ne > 0 for p in points)
    table = "\n".join(render_scaling(points))
    assert table.startswith("**user model**") and f"{points[2].params:,}" in table
