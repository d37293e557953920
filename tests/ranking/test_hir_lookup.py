"""HirLookup's fit window (nothing an encoder read, training or checkpoint selection, may
overlap the examples a ranker fits on) and its per-snapshot row search."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.errors import InputError
from hir_sdk.interests.arrivals import ARRIVALS_SINCE
from hir_sdk.interests.hierarchy import snapshot_nodes, snapshot_rows
from hir_sdk.ranking.hir_lookup import ALIGNED_READ_UNTIL, HirLookup, _RowIndex
from hir_sdk.schema.manifest import DAY
from hir_sdk.training.as_of import run_selected_until, selected_until
from hir_sdk.training.config import load_config


def test_a_run_that_selects_on_validation_is_read_until_the_test_start(
    tiny_run, snapshot, tiny_graph
):
    """`tiny_run` trained until the validation start and chose its checkpoint on
    `[validation_start, test_start)`: rankers fitting on validation-window examples with
    its features would fit on labels the encoder was selected on. The fit window used to
    start at `trained_until` (the validation start)."""
    t = tiny_graph.manifest.time
    meta = json.loads((tiny_run / "meta.json").read_text())
    assert meta["trained_until"] == t.validation_start
    assert meta["selected_until"] == t.test_start
    assert snapshot.meta["selected_until"] == t.test_start
    lookup = HirLookup(tiny_graph, [snapshot])
    assert lookup.fit_from == t.test_start
    with pytest.raises(InputError, match="checkpoint selection window"):
        lookup.check_fit_window(t.test_start - 1)


def test_runs_written_before_selected_until_was_recorded_read_their_config(
    tiny_run, tmp_path, tiny_graph
):
    splits = tiny_graph.manifest.time
    old = tmp_path / "old"
    shutil.copytree(tiny_run / "checkpoints", old / "checkpoints")
    shutil.copy(tiny_run / "config.toml", old / "config.toml")
    meta = json.loads((tiny_run / "meta.json").read_text())
    del meta["selected_until"]
    (old / "meta.json").write_text(json.dumps(meta))
    select = load_config(old / "config.toml").select
    assert run_selected_until(old, select, splits) == splits.test_start
    assert run_selected_until(old, "last", splits) is None == selected_until("last", splits)
    (old / "meta.json").write_text("{torn")
    with pytest.raises(InputError, match="not readable JSON"):
        run_selected_until(old, select, splits)
    (old / "meta.json").unlink()
    assert run_selected_until(old, select, splits) == splits.test_start


def test_a_snapshot_that_does_not_say_what_its_encoder_read_is_refused(snapshot, tiny_graph):
    stale = dataclasses.replace(snapshot, meta={**snapshot.meta})
    del stale.meta["selected_until"]
    with pytest.raises(InputError, match="does not record"):
        HirLookup(tiny_graph, [stale]).check_fit_window(0)


@st.composite
def _snapshot_metas(draw):
    """Full snapshots at distinct times (each with arrival snapshots after it or not), and
    the windows their encoders trained and chose a checkpoint on."""
    times = sorted(draw(st.sets(st.integers(0, 20), min_size=1, max_size=4)))
    out = []
    for k, at in enumerate(times):
        trained = draw(st.integers(max(at - 5, 0), at + 8))
        selected = draw(st.one_of(st.none(), st.integers(trained, trained + 8)))
        ends = {"trained_until": trained * DAY, "selected_until": selected and selected * DAY}
        if draw(st.booleans()):  # aligned onto an earlier encoder's space, through a
            # chain of encoders that read until here
            ends[ALIGNED_READ_UNTIL] = draw(st.integers(max(at - 5, 0), at + 8)) * DAY
        out.append({"as_of": at * DAY, **ends})
        stop = times[k + 1] if k + 1 < len(times) else at + 6
        for later in draw(st.sets(st.integers(at + 1, max(stop - 1, at + 1)), max_size=2)):
            if later < stop:
                out.append({"as_of": later * DAY, ARRIVALS_SINCE: at * DAY, **ends})
    return out


def _read_until(meta: dict) -> int:
    selected = meta["selected_until"]
    own = meta["trained_until"] if selected is None else max(meta["trained_until"], selected)
    return max(own, meta.get(ALIGNED_READ_UNTIL, own))


@settings(max_examples=150, deadline=None)
@given(_snapshot_metas())
def test_fit_from_is_where_no_example_reads_an_encoder_that_read_past_it(
    snapshot, tiny_graph, metas
):
    """By brute force over every time where the answer can change: an example at `x` reads
    the latest full snapshot at or before `x` and that snapshot's arrival snapshots up to
    `x`; it is clean when it reads some snapshot and none whose encoder read at or past
    `x` (its own training and checkpoint selection, and for an aligned snapshot the
    encoders it was aligned through). `fit_from` is the start of the clean tail."""
    snapshots = [dataclasses.replace(snapshot, meta={**snapshot.meta, **m}) for m in metas]
    lookup = HirLookup(tiny_graph, snapshots)
    full = sorted(m["as_of"] for m in metas if ARRIVALS_SINCE not in m)

    def clean(x: int) -> bool:
        bases = [f for f in full if f <= x]
        if not bases:
            return False
        read = [
            m for m in metas if m["as_of"] <= x and m.get(ARRIVALS_SINCE, m["as_of"]) == bases[-1]
        ]
        return all(_read_until(m) <= x for m in read)

    points = sorted({m["as_of"] for m in metas} | {_read_until(m) for m in metas})
    points.append(points[-1] + 1)
    tail = len(points)
    while tail > 0 and clean(points[tail - 1]):
        tail -= 1
    assert tail < len(points)  # the end of the log is clean
    assert lookup.fit_from == points[tail]


def test_rows_are_found_as_the_dense_row_map_found_them(snapshot, tiny_graph):
    """The per-snapshot row search against the former (N,) int64 map of every node's row,
    on a full snapshot, a small one (an arrival's size) with a repeated node, and every
    node of the graph plus out-of-snapshot ones."""
    g = tiny_graph
    small = dataclasses.replace(
        snapshot, table=snapshot.table[[5, 9, 2, 9, 40]], meta={**snapshot.meta}
    )
    empty = dataclasses.replace(snapshot, table=snapshot.table[:0], meta={**snapshot.meta})
    nodes = np.concatenate([np.arange(g.num_nodes), [0, g.num_nodes - 1, 3]])
    for snap in (snapshot, small, empty):
        dense = snapshot_rows(snap, g)
        np.testing.assert_array_equal(_RowIndex(snapshot_nodes(snap, g))(nodes), dense[nodes])
    # and whole lookups, against the same lookup reading dense maps
    later = dataclasses.replace(
        snapshot,
        table=snapshot.table[::3],
        meta={**snapshot.meta, "as_of": snapshot.as_of + 2 * DAY, ARRIVALS_SINCE: snapshot.as_of},
    )
    lookup = HirLookup(g, [snapshot, later])
    dense_lookup = HirLookup(g, [snapshot, later])
    dense_maps = [snapshot_rows(s, g) for s in dense_lookup.snapshots]
    dense_lookup._rows = [rows.__getitem__ for rows in dense_maps]
    rng = np.random.default_rng(0)
    q = rng.integers(0, g.num_nodes, 500)
    t = snapshot.as_of + rng.integers(-DAY, 4 * DAY, 500)
    got, want = lookup.lookup(q, t), dense_lookup.lookup(q, t)
    for field in ("z", "clusters", "tokens", "found"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    assert got.found.sum() > 100


def test_snapshots_need_an_exposure_edge_type_to_know_who_is_ranked(write_dataset):
    """The users and the ranked types come from the exposure edges, not from type names:
    a dataset without any is refused with that reason, before any encoder is read."""
    import dataclasses

    from hir_sdk.errors import InputError
    from hir_sdk.graph import build_graph_from_dir
    from hir_sdk.ranking.hir_snapshots import build_hir_lookup
    from tests.conftest import mini_manifest

    manifest = mini_manifest()
    no_exposures = dataclasses.replace(
        manifest,
        edge_types=tuple(
            dataclasses.replace(e, role="click") if e.role == "exposure" else e
            for e in manifest.edge_types
        ),
    )
    assert no_exposures.exposed_types == ((), ())
    assert manifest.exposed_types == (("user",), ("ad",))
    data = write_dataset(no_exposures.to_toml())
    graph = build_graph_from_dir(data)
    with pytest.raises(InputError, match="declares no exposure edge type"):
        build_hir_lookup("no_such_run", data, graph)
