"""Refreshed encoders: each full HIR snapshot embedded by the newest run trained before it,
the lookup's fit window, and `hir ab --run A --run B`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.evaluation.hir_snapshots import build_hir_lookup, encoder_of_snapshots
from hir_sdk.training import TrainConfig, Trainer
from tests.evaluation.conftest import EARLY, SMALL


@pytest.fixture(scope="module")
def refresh_run(tiny_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A refresh run until the validation start (the last checkpoint kept)."""
    run = tmp_path_factory.mktemp("refresh") / "run"
    config = TrainConfig(**{**SMALL.__dict__, "train_until": "validation_start", "select": "last"})
    Trainer(tiny_world, run, config).fit(progress=False)
    return run


def test_each_snapshot_is_embedded_by_the_newest_encoder_before_it(
    tiny_world, tiny_graph, early_run, refresh_run
):
    t = tiny_graph.manifest.time
    # in either order; a time before every run's end falls back to the earliest-ending run
    times = [t.start + 3 * 86_400, EARLY, t.validation_start, t.test_start]
    expected = [early_run, early_run, refresh_run, refresh_run]
    assert encoder_of_snapshots([refresh_run, early_run], tiny_graph, times) == expected
    weekly = 7 * 86_400  # arrival snapshots every week (the default is daily)
    lookup = build_hir_lookup(
        [refresh_run, early_run], tiny_world, tiny_graph, arrivals_every=weekly
    )
    full = lookup.full_snapshots
    assert [s.as_of for s in full] == [EARLY, t.validation_start, t.test_start]
    assert [s.meta["trained_until"] for s in full] == [EARLY, *[t.validation_start] * 2]
    assert lookup.refreshed and lookup.fit_from == EARLY
    assert len(lookup.snapshots) > len(full)
    for s in lookup.snapshots:  # arrivals are embedded by their full snapshot's encoder
        base = max((f for f in full if f.as_of <= s.as_of), key=lambda f: f.as_of)
        assert s.meta["trained_until"] == base.meta["trained_until"] <= s.as_of
    # the refreshed encoder moves the embeddings of the snapshot it took over
    single = build_hir_lookup(early_run, tiny_world, tiny_graph, arrivals_every=None)
    assert not single.refreshed and single.fit_from == EARLY
    g, code = tiny_graph, tiny_graph.type_code("user")
    users = np.arange(g.type_offsets[code], g.type_offsets[code + 1])
    users = users[g.created_ts[users] < EARLY][:50]
    at = np.full(len(users), t.validation_start)
    a, b = lookup.lookup(users, at), single.lookup(users, at)
    assert a.found.all() and b.found.all() and not np.allclose(a.z, b.z)
    later = lookup.lookup(users, at - 1)  # before the refresh: the first encoder's snapshot
    np.testing.assert_array_equal(later.z, single.lookup(users, at - 1).z)


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
    args += ["--run", str(early_run), "--run", str(refresh_run), "--bootstrap", "10", "--no-tune"]
    assert main(args) == 0
    md = (out / "report.md").read_text()
    assert "each embedded by an encoder trained until its time" in md
    assert "fit on training examples from 2026-01-17" in md
    assert "beats" in capsys.readouterr().out or "no significant" in md
