"""Paired bootstrap A/B: intervals cover the true difference; results are deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.evaluation.ab import MAX_BOOTSTRAP, _user_draws, compare
from hir_sdk.evaluation.metrics import log_loss, roc_auc
from hir_sdk.evaluation.pipeline import ABConfig


def _world(rng: np.random.Generator, n_users: int, per_user: int):
    """Users with their own base rates; control sees the truth through more noise."""
    user_logit = rng.normal(-4.0, 0.8, n_users)
    users = np.repeat(np.arange(n_users), per_user)
    logit = user_logit[users] + rng.normal(0, 1.0, len(users))
    y = (rng.random(len(users)) < 1 / (1 + np.exp(-logit))).astype(float)
    control = 1 / (1 + np.exp(-(logit + rng.normal(0, 1.2, len(users)))))
    treatment = 1 / (1 + np.exp(-(logit + rng.normal(0, 0.6, len(users)))))
    return y, control, treatment, users


def test_interval_covers_the_true_difference():
    rng = np.random.default_rng(7)
    y, c, t, _ = _world(rng, 40_000, 10)  # the "population"
    true_ll = log_loss(y, t) - log_loss(y, c)
    true_auc = roc_auc(y, t) - roc_auc(y, c)
    covered_ll = covered_auc = 0
    trials = 40
    for k in range(trials):
        y, c, t, users = _world(np.random.default_rng(100 + k), 400, 10)
        result = compare(y, c, t, users, n_bootstrap=100, seed=k, metrics=("log_loss", "auc"))
        ll, auc = result.metric("log_loss").delta, result.metric("auc").delta
        covered_ll += ll.low <= true_ll <= ll.high
        covered_auc += auc.low <= true_auc <= auc.high
    # nominal 95%; with 40 trials, fewer than 32 hits would be a broken interval
    assert covered_ll >= 32 and covered_auc >= 32, (covered_ll, covered_auc)
    assert true_ll < 0 and true_auc > 0


def test_resampling_users_widens_intervals_for_correlated_examples():
    """Examples of one user share their base rate: resampling users must give wider
    intervals than resampling examples would (here: each example its own user)."""
    y, c, t, users = _world(np.random.default_rng(1), 300, 20)
    by_user = compare(y, c, t, users, n_bootstrap=200, metrics=("log_loss",))
    by_row = compare(y, c, t, np.arange(len(y)), n_bootstrap=200, metrics=("log_loss",))
    width = [
        r.metric("log_loss").delta.high - r.metric("log_loss").delta.low for r in (by_user, by_row)
    ]
    assert width[0] > width[1]


def test_deterministic_in_seed_and_verdict():
    y, c, t, users = _world(np.random.default_rng(2), 500, 10)
    a = compare(
        y,
        c,
        t,
        users,
        n_bootstrap=50,
        seed=4,
        control="old",
        treatment="new",
        slices={"first half": users < 250},
    )
    b = compare(
        y,
        c,
        t,
        users,
        n_bootstrap=50,
        seed=4,
        control="old",
        treatment="new",
        slices={"first half": users < 250},
    )
    assert a == b
    assert a.verdict.startswith("new beats old: NE -") and "significant" in a.verdict
    assert a.metric("ne").delta.high < 0
    assert [s.name for s in a.slices] == ["first half"]
    assert {d.metric for d in a.slices[0].deltas} == {"ne", "auc"}
    swapped = compare(y, t, c, users, n_bootstrap=50, seed=4, control="new", treatment="old")
    assert swapped.verdict.startswith("new beats old: old NE +")


def test_slice_without_conversions_has_no_deltas():
    y, c, t, users = _world(np.random.default_rng(3), 200, 10)
    result = compare(y, c, t, users, n_bootstrap=10, slices={"none": np.zeros(len(y), bool)})
    assert result.slices[0].deltas == () and result.slices[0].examples == 0


def test_input_errors():
    with pytest.raises(ValueError, match="one length"):
        compare(np.ones(3), np.ones(3), np.ones(2), np.arange(3))
    with pytest.raises(ValueError, match="confidence"):
        compare(np.ones(3), np.ones(3), np.ones(3), np.arange(3), confidence=1.5)


def test_the_number_of_resamples_is_bounded_before_any_work():
    """`hir ab --bootstrap 1000000000` used to be accepted and then allocate a (10^9 x
    users) int32 table of draws: now the config refuses it with one message."""
    with pytest.raises(InputError, match="between 1 and 10,000 .*got 1,000,000,000"):
        ABConfig(n_bootstrap=10**9)
    with pytest.raises(InputError, match="got 0"):
        ABConfig(n_bootstrap=0)
    with pytest.raises(InputError, match="confidence must be between 0 and 1"):
        ABConfig(confidence=1.0)
    assert ABConfig(n_bootstrap=MAX_BOOTSTRAP).n_bootstrap == MAX_BOOTSTRAP
    with pytest.raises(ValueError, match="n_bootstrap <= 10000"):
        compare(np.ones(3), np.ones(3), np.ones(3), np.arange(3), n_bootstrap=MAX_BOOTSTRAP + 1)


def test_resamples_are_streamed_and_equal_the_table_they_replace():
    """One resample at a time, the same sequence on every pass, equal to the (B, U)
    table drawn before (so every interval is unchanged)."""
    n_users, b, seed = 37, 25, 5
    rng = np.random.default_rng(seed)
    table = np.empty((b, n_users), dtype=np.int32)
    for k in range(b):
        table[k] = np.bincount(rng.integers(0, n_users, n_users), minlength=n_users)
    first, second = _user_draws(n_users, b, seed), _user_draws(n_users, b, seed)
    assert not isinstance(first, np.ndarray)
    np.testing.assert_array_equal(np.stack(list(first)), table)
    np.testing.assert_array_equal(np.stack(list(second)), table)


def test_too_few_resamples_give_no_interval_and_no_verdict():
    """One resample gave a zero-width interval, away from the estimate, called
    significant; below `min_resamples` (40 at 95%) there is no interval at all."""
    from hir_sdk.evaluation.ab import min_resamples

    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(60), 20)
    y = (rng.random(len(users)) < 0.3).astype(float)
    c = np.clip(0.3 + 0.1 * rng.normal(size=len(y)), 0.01, 0.99)
    t = np.clip(0.5 * c + 0.5 * y, 0.01, 0.99)  # clearly better
    assert min_resamples(0.95) == 40 and min_resamples(0.9) == 20
    for n in (1, 39):
        few = compare(y, c, t, users, n_bootstrap=n)
        assert np.isnan(few.metric("ne").delta.low) and not few.metric("ne").delta.excludes_zero()
        assert few.verdict.startswith("no verdict") and "at least 40" in few.verdict
    enough = compare(y, c, t, users, n_bootstrap=40)
    assert enough.metric("ne").delta.high < 0 and "significant" in enough.verdict


def test_the_report_counts_the_resamples_its_intervals_rest_on():
    """Two converting users of twenty: about a tenth of the resamples draw neither and are
    skipped. The result counts them (overall and per slice), each interval says how many
    resamples it is computed from, and both reports say so rather than "200 resamples"."""
    from hir_sdk.evaluation.report import ModelCurves, Report, render_markdown
    from hir_sdk.evaluation.report_html import render_html

    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(20), 10)
    y = np.zeros(len(users))
    y[[30, 33, 111]] = 1  # users 3 and 11
    c = np.full(len(y), 0.1)
    t = np.clip(0.1 + 0.3 * y + 0.05 * rng.normal(size=len(y)), 0.01, 0.99)
    slices = {"users 0-9": users < 10}
    result = compare(y, c, t, users, n_bootstrap=200, seed=0, slices=slices)

    draws = list(_user_draws(20, 200, 0))
    skipped = sum(1 for d in draws if d[3] == 0 and d[11] == 0)
    skipped_in_slice = sum(1 for d in draws if d[3] == 0)
    assert 0 < skipped < skipped_in_slice
    assert result.no_conversion == skipped
    assert result.metric("ne").resamples == result.metric("log_loss").resamples == 200 - skipped
    assert result.slices[0].no_conversion == skipped_in_slice
    assert {d.resamples for d in result.slices[0].deltas} == {200 - skipped_in_slice}

    report = Report("t", result, ModelCurves.of("c", y, c), ModelCurves.of("t", y, t))
    said = (
        f"computed from {200 - skipped} of 200 resamples: {skipped} drew no user with a "
        "conversion, on which no metric is defined, and were skipped."
    )
    in_slice = (
        f"users 0-9: NE from {200 - skipped_in_slice}, ROC-AUC from "
        f"{200 - skipped_in_slice} of the 200 resamples ({skipped_in_slice} drew no "
        "conversion in the slice and were skipped)"
    )
    for text in (render_markdown(report), render_html(report)):
        assert said in text and in_slice in text and "200 resamples," not in text

    y[users * 10 + 5] = 1  # a conversion for every user: no resample is skipped
    every = compare(y, c, t, users, n_bootstrap=200, seed=0)
    assert every.no_conversion == 0 and every.metric("ne").resamples == 200
    report = Report("t", every, ModelCurves.of("c", y, c), ModelCurves.of("t", y, t))
    assert "paired bootstrap over users, 200 resamples, seed 0." in render_markdown(report)
