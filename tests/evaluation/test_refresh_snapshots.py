"""Refreshed encoders: each full HIR snapshot embedded by the newest run trained before it,
the lookup's fit window, and `hir ab --run A --run B`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.evaluation.pipeline import ABConfig
from hir_sdk.interests.arrivals import ARRIVALS_SINCE, arrival_times
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.ranking.hir_lookup import ALIGNED_READ_UNTIL, read_until
from hir_sdk.ranking.hir_snapshots import (
    DEFAULT_REFRESH,
    Refresh,
    build_hir_lookup,
    encoder_of_snapshots,
)
from hir_sdk.ranking.snapshot_alignment import ALIGNED_TO
from hir_sdk.training import TrainConfig, Trainer
from tests.evaluation.conftest import EARLY, SMALL

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def refresh_run(tiny_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A refresh run until the validation start (the last checkpoint kept)."""
    run = tmp_path_factory.mktemp("refresh") / "run"
    config = TrainConfig(**{**SMALL.__dict__, "train_until": "validation_start", "select": "last"})
    Trainer(tiny_world, run, config).fit(progress=False)
    return run


WEEKLY = 7 * 86_400  # arrival snapshots every week (the default is daily)


@pytest.fixture(scope="module")
def lookups(tiny_world, tiny_graph, early_run, refresh_run):
    """The two runs' snapshots under each refresh policy, with weekly arrivals."""
    return {
        r: build_hir_lookup(
            [refresh_run, early_run], tiny_world, tiny_graph, arrivals_every=WEEKLY, refresh=r
        )
        for r in Refresh
    }


@pytest.fixture(scope="module")
def single(tiny_world, tiny_graph, early_run):
    """The first encoder's snapshots alone, without arrivals (what the refreshed policies
    are compared with)."""
    return build_hir_lookup(early_run, tiny_world, tiny_graph, arrivals_every=None)


def test_each_snapshot_is_embedded_by_the_newest_encoder_before_it(
    tiny_graph, early_run, refresh_run, lookups, single
):
    t = tiny_graph.manifest.time
    # in either order; a time before every run's end falls back to the earliest-ending run
    times = [t.start + 3 * 86_400, EARLY, t.validation_start, t.test_start]
    expected = [early_run, early_run, refresh_run, refresh_run]
    assert encoder_of_snapshots([refresh_run, early_run], tiny_graph, times) == expected
    lookup = lookups[Refresh.NEWEST]
    full = lookup.full_snapshots
    assert [s.as_of for s in full] == [EARLY, t.validation_start, t.test_start]
    assert [s.meta["trained_until"] for s in full] == [EARLY, *[t.validation_start] * 2]
    assert lookup.refreshed and lookup.fit_from == EARLY
    assert len(lookup.snapshots) > len(full)
    for s in lookup.snapshots:  # arrivals are embedded by their full snapshot's encoder
        base = max((f for f in full if f.as_of <= s.as_of), key=lambda f: f.as_of)
        assert s.meta["trained_until"] == base.meta["trained_until"] <= s.as_of
    # the refreshed encoder moves the embeddings of the snapshot it took over
    assert not single.refreshed and single.fit_from == EARLY
    g, code = tiny_graph, tiny_graph.type_code("user")
    users = np.arange(g.type_offsets[code], g.type_offsets[code + 1])
    users = users[g.created_ts[users] < EARLY][:50]
    at = np.full(len(users), t.validation_start)
    a, b = lookup.lookup(users, at), single.lookup(users, at)
    assert a.found.all() and b.found.all() and not np.allclose(a.z, b.z)
    later = lookup.lookup(users, at - 1)  # before the refresh: the first encoder's snapshot
    np.testing.assert_array_equal(later.z, single.lookup(users, at - 1).z)


def _pairs(graph, at: int, k: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """`k` (user, ad) pairs of entities that exist at `at`."""
    out = []
    for kind in ("user", "ad"):
        code = graph.type_code(kind)
        nodes = np.arange(graph.type_offsets[code], graph.type_offsets[code + 1])
        out.append(nodes[graph.created_ts[nodes] < at][:k])
    n = min(len(out[0]), len(out[1]))
    return out[0][:n], out[1][:n]


def test_no_snapshot_holds_anything_read_at_or_after_its_time(lookups):
    """Under every policy, each snapshot (full, arrival, creation) and each of its rows is
    served from a time at or after the end of everything it was made from: its encoder's
    training and checkpoint selection, and the encoders it was aligned through."""
    for refresh, lookup in lookups.items():
        for snap in lookup.snapshots:
            end = read_until(snap.meta)
            assert end <= snap.as_of, (refresh, snap.meta["as_of_iso"])
            assert (snap.table["as_of"].to_numpy() >= end).all()


def test_serving_embeds_every_snapshot_with_the_first_encoder(lookups, single):
    serving, newest = lookups[Refresh.SERVING], lookups[Refresh.NEWEST]
    assert {s.meta["trained_until"] for s in serving.snapshots} == {EARLY}
    assert not serving.refreshed and serving.fit_from == newest.fit_from == EARLY
    assert [s.as_of for s in serving.full_snapshots] == [s.as_of for s in newest.full_snapshots]
    for a, b in zip(serving.full_snapshots, single.full_snapshots, strict=True):
        np.testing.assert_array_equal(a.embeddings(), b.embeddings())


def test_aligned_rotates_each_refreshed_encoder_onto_the_first(tiny_graph, early_run, lookups):
    aligned, newest = lookups[Refresh.ALIGNED], lookups[Refresh.NEWEST]
    serving = lookups[Refresh.SERVING]  # the first encoder's embeddings at the same times
    t = tiny_graph.manifest.time
    assert aligned.aligned and aligned.refreshed and aligned.fit_from == EARLY
    assert len(aligned.snapshots) == len(newest.snapshots)
    first = aligned.full_snapshots[0]
    np.testing.assert_array_equal(first.embeddings(), newest.full_snapshots[0].embeddings())
    for a, n, s in zip(aligned.snapshots, newest.snapshots, serving.snapshots, strict=True):
        assert a.meta["trained_until"] == n.meta["trained_until"]  # the newest encoder's
        assert a.meta[ALIGNED_TO] == str(early_run.resolve())
        for level, p in enumerate(first.prototypes):  # clusters numbered as the first's
            np.testing.assert_array_equal(a.prototypes[level], p)
        if n.meta["trained_until"] == EARLY:
            continue
        assert a.meta[ALIGNED_READ_UNTIL] == t.validation_start
        # closer to the first encoder's embedding of the same entities than unrotated
        # (strictly: the fitted rotation is not the identity)
        if ALIGNED_READ_UNTIL in a.meta and a.as_of in (t.validation_start, t.test_start):
            gap = np.linalg.norm(a.embeddings() - s.embeddings())
            assert gap < np.linalg.norm(n.embeddings() - s.embeddings())
    # a rotation keeps every cosine: user-ad similarities are the newest encoder's
    users, ads = _pairs(tiny_graph, t.test_start)
    at = np.full(len(users), t.test_start)
    za, zn = aligned.lookup(users, at), newest.lookup(users, at)
    wa, wn = aligned.lookup(ads, at), newest.lookup(ads, at)
    assert za.found.all() and wa.found.all()
    np.testing.assert_allclose((za.z * wa.z).sum(axis=1), (zn.z * wn.z).sum(axis=1), atol=1e-5)


def test_unknown_refresh_policies_are_refused():
    with pytest.raises(InputError, match="unknown refresh policy 'latest'"):
        ABConfig(refresh="latest")
    assert ABConfig().refresh == DEFAULT_REFRESH.value


def test_fit_window_follows_each_snapshots_encoder(tiny_world, tiny_graph, early_run, refresh_run):
    t = tiny_graph.manifest.time
    # a snapshot older than its encoder's window serves examples only from that window's end
    times = [t.start + 3 * 86_400, t.validation_start]
    stale = build_hir_lookup(early_run, tiny_world, tiny_graph, times=times, arrivals_every=None)
    assert stale.fit_from == EARLY
    stale.check_fit_window(EARLY)
    with pytest.raises(InputError, match="before the HIR encoder's training window ended"):
        stale.check_fit_window(EARLY - 1)
    # the refresh run embedding a snapshot before its end: leaky until the next full one
    leaky = build_hir_lookup(
        refresh_run, tiny_world, tiny_graph, times=[EARLY, t.test_start], arrivals_every=None
    )
    assert leaky.fit_from == t.validation_start
    # examples before the first snapshot would fit on missing features
    late = build_hir_lookup(
        early_run, tiny_world, tiny_graph, times=[t.validation_start], arrivals_every=None
    )
    assert late.fit_from == t.validation_start
    with pytest.raises(InputError, match="before the first HIR snapshot"):
        late.check_fit_window(EARLY)


def test_cli_ab_with_refresh_runs(tiny_world, early_run, refresh_run, tmp_path, capsys):
    out = tmp_path / "ab"
    args = ["ab", "--data", str(tiny_world), "--out", str(out), "--treatment", "xgboost+hir"]
    args += ["--run", str(early_run), "--run", str(refresh_run), "--bootstrap", "40", "--no-tune"]
    assert main(args) == 0
    md = (out / "report.md").read_text()
    assert "each embedded by an encoder trained until its time" in md
    assert "fit on training examples from 2026-01-17" in md
    assert "beats" in capsys.readouterr().out or "no significant" in md


def test_arrival_snapshots_are_bounded_per_full_snapshot(tiny_world, tiny_graph, early_run):
    """`max_arrivals` caps the arrival snapshots after each full snapshot, spread evenly
    over a span longer than that many days (a log whose windows run for years), and
    `arrival_max_age` the age of the ads each embeds again."""
    age = 3 * 86_400
    lookup = build_hir_lookup(
        early_run,
        tiny_world,
        tiny_graph,
        max_arrivals=2,
        arrival_max_age=age,
        creation_latency=None,
    )
    arrivals = [s for s in lookup.snapshots if ARRIVALS_SINCE in s.meta]
    assert arrivals
    for arrival in arrivals:
        born = tiny_graph.created_ts[snapshot_nodes(arrival, tiny_graph)]
        assert len(born) and (born >= arrival.as_of - age).all()
    full = lookup.full_snapshots
    stops = [*(s.as_of for s in full[1:]), tiny_graph.manifest.time.end]
    bounded = 0
    for base, stop in zip(full, stops, strict=True):
        times = [s.as_of for s in lookup.snapshots if s.meta.get(ARRIVALS_SINCE) == base.as_of]
        expected = arrival_times(base.as_of, stop, 86_400, 2)
        assert set(times) <= set(expected) and len(expected) <= 2
        bounded += len(arrival_times(base.as_of, stop, 86_400)) > 2
    assert bounded  # the bound changed at least one span's daily times
