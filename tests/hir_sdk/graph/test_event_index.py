"""EventIndex's as-of queries, checked against a loop over the events."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hir_sdk.graph.event_index import NEVER, EventIndex
from hir_sdk.schema.manifest import DAY


def _events(seed: int, n: int = 600, groups: int = 7):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n) * 1_000_003  # sparse codes
    ts = rng.integers(0, 60 * DAY, n)
    ts[:20] = ts[20]  # ties
    return g, ts


def _queries(seed: int, g: np.ndarray, ts: np.ndarray, m: int = 300):
    rng = np.random.default_rng(seed + 1)
    qg = np.concatenate([rng.choice(g, m - 10), [-5, 17, 2**40, g[0], g[0]]]).astype(np.int64)
    qt = np.concatenate([rng.integers(-DAY, 61 * DAY, m - 10), [0, 5, 9, ts[0], ts[0] + 1]])
    qg = np.concatenate([qg, np.full(5, g[1])])
    qt = np.concatenate([qt, [ts[1], ts[1] - 1, ts[1] + 1, -(2**40), 2**40]])
    return qg, qt.astype(np.int64)


@pytest.mark.parametrize("seed", [0, 1])
def test_counts_and_last_match_a_loop(seed):
    g, ts = _events(seed)
    index = EventIndex(g, ts)
    qg, qt = _queries(seed, g, ts)
    count = index.count_before(qg, qt)
    last = index.last_before(qg, qt)
    between = index.count_between(qg, qt, qt + 3 * DAY)
    for i in range(len(qg)):
        mine = ts[(g == qg[i]) & (ts < qt[i])]
        assert count[i] == len(mine)
        assert last[i] == (mine.max() if len(mine) else NEVER)
        window = (g == qg[i]) & (ts > qt[i]) & (ts <= qt[i] + 3 * DAY)
        assert between[i] == window.sum()


@pytest.mark.parametrize("half_life_days", [0.5, 3.0, 21.0, 1e9])
def test_decayed_counts_match_a_loop(half_life_days):
    g, ts = _events(2)
    index = EventIndex(g, ts)
    qg, qt = _queries(2, g, ts)
    h = half_life_days * DAY
    got = index.decayed_count_before(qg, qt, h)
    want = np.array(
        [np.exp2(-(qt[i] - ts[(g == qg[i]) & (ts < qt[i])]) / h).sum() for i in range(len(qg))]
    )
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert (got > 0).sum() > len(qg) // 2  # most queries have earlier events
    if half_life_days == 1e9:  # no decay within the log's two months: the plain count
        near = np.abs(qt) < 100 * DAY
        np.testing.assert_allclose(got[near], index.count_before(qg, qt)[near], rtol=1e-6)
    # cached per half-life, and the same again
    np.testing.assert_array_equal(index.decayed_count_before(qg, qt, h), got)


def test_counts_before_answers_every_half_life_from_one_search():
    g, ts = _events(3)
    index = EventIndex(g, ts)
    qg, qt = _queries(3, g, ts)
    half_lives = [0.5 * DAY, 3.0 * DAY, 14.0 * DAY]
    count, decayed = index.counts_before(qg, qt, half_lives)
    np.testing.assert_array_equal(count, index.count_before(qg, qt))
    assert len(decayed) == len(half_lives)
    for h, got in zip(half_lives, decayed, strict=True):
        np.testing.assert_array_equal(got, index.decayed_count_before(qg, qt, h))
    assert decayed[0].sum() < decayed[1].sum() < decayed[2].sum()  # slower decay, more weight
    none, empty = index.counts_before(qg, qt, [])
    np.testing.assert_array_equal(none, count)
    assert empty == []
    with pytest.raises(ValueError, match="half_life"):
        index.counts_before(qg, qt, [DAY, 0.0])


def test_decayed_counts_survive_a_long_log():
    # ten years of hourly events in one group: exp(age / half-life) would overflow
    ts = np.arange(0, 10 * 365 * DAY, 3_600, dtype=np.int64)
    index = EventIndex(np.zeros(len(ts), dtype=np.int64), ts)
    h = 3_600.0  # an hour
    got = index.decayed_count_before(np.zeros(3, dtype=np.int64), [1, ts[-1], ts[-1] + 1], h)
    np.testing.assert_allclose(got[0], np.exp2(-1 / h))  # the first event, 1 s old
    # at the last event: the earlier ones, an hour apart, sum to 1/2 + 1/4 + ... = 1
    np.testing.assert_allclose(got[1], 1.0, rtol=1e-9)
    np.testing.assert_allclose(got[2], 2.0 * np.exp2(-1 / h), rtol=1e-9)  # and it, 1 s old
    assert np.isfinite(got).all()


def test_decayed_counts_warn_of_nothing_across_groups_years_apart():
    # group 0's events are ten years after group 1's: the running sums read no gap across
    # the groups' boundary (2^(ten years / an hour) overflows; a warning a user would see)
    late = np.arange(10 * 365 * DAY, 10 * 365 * DAY + 5 * 3_600, 3_600, dtype=np.int64)
    g = np.concatenate([np.zeros(5, np.int64), np.ones(5, np.int64)])
    index = EventIndex(g, np.concatenate([late, late - 10 * 365 * DAY]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = index.decayed_count_before(np.array([0, 1]), [late[-1] + 1, 5 * 3_600], 3_600.0)
    want = np.exp2(-(1 + 3_600 * np.arange(5)) / 3_600.0).sum()
    np.testing.assert_allclose(got, [want, 0.5 + 0.25 + 0.125 + 0.0625 + 0.03125], rtol=1e-9)


def test_decayed_counts_refuse_a_bad_half_life():
    index = EventIndex(np.zeros(3, dtype=np.int64), np.arange(3))
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="half_life"):
            index.decayed_count_before(np.zeros(1, dtype=np.int64), 5, bad)
