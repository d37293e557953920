"""Deep-funnel labels: equal a naive reference, censor instead of guessing, never look
past the window's horizon."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import build_graph
from hir_sdk.graph.owners import owner_of_nodes
from hir_sdk.schema import DatasetManifest, EdgeTypeSpec, TimeSplits, load_dataset
from tests.conftest import DAY, T0


@pytest.fixture(scope="module")
def dataset(tiny_world):
    return load_dataset(tiny_world)


@pytest.fixture(scope="module")
def graph(dataset):
    return build_graph(dataset)


def test_owners_follow_structural_paths(graph):
    owners = owner_of_nodes(graph)
    campaign_of = {}
    for eid in np.flatnonzero(graph.etype == graph.edge_type_code("contains")):
        campaign_of[int(graph.dst[eid])] = int(graph.src[eid])
    advertiser_of = {}
    for eid in np.flatnonzero(graph.etype == graph.edge_type_code("creates")):
        advertiser_of[int(graph.dst[eid])] = int(graph.src[eid])
    ads = range(int(graph.type_offsets[1]), int(graph.type_offsets[2]))
    for ad in ads:
        assert owners[ad] == advertiser_of[campaign_of[ad]]
    users = range(int(graph.type_offsets[0]), int(graph.type_offsets[1]))
    assert (owners[list(users)] == -1).all()
    advertisers = np.arange(graph.type_offsets[2], graph.type_offsets[3])
    assert (owners[advertisers] == advertisers).all()


def _reference_labels(graph, window, attribution_s):
    """Loop over exposures and conversions: slow, obviously right."""
    owners = owner_of_nodes(graph)
    lo, hi = graph.manifest.time.window(window)
    conv = set(graph.edge_type_codes(["purchase", "pixel_fire"]).tolist())
    conversions: dict[tuple[int, int], list[int]] = {}
    for src, dst, et, ts in zip(
        graph.src.tolist(), graph.dst.tolist(), graph.etype.tolist(), graph.ts.tolist(), strict=True
    ):
        if et in conv:
            conversions.setdefault((src, int(owners[dst])), []).append(ts)
    imp = graph.edge_type_code("impression")
    rows, censored = [], 0
    for src, dst, et, ts in zip(
        graph.src.tolist(), graph.dst.tolist(), graph.etype.tolist(), graph.ts.tolist(), strict=True
    ):
        if et != imp or not lo <= ts < hi:
            continue
        if ts + attribution_s >= hi:  # the window must end before the horizon
            censored += 1
            continue
        times = conversions.get((src, int(owners[dst])), [])
        rows.append((src, dst, ts, int(any(ts < c <= ts + attribution_s for c in times))))
    return rows, censored


@pytest.mark.parametrize("window", ["train", "validation", "test"])
def test_labels_equal_reference(graph, window):
    ex = build_examples(graph, window)
    rows, censored = _reference_labels(graph, window, 7 * DAY)
    got = list(ex.frame.select("user", "ad", "ts", "label").iter_rows())
    assert got == rows
    assert ex.censored == censored > 0
    assert 0 < ex.positives < ex.size


def test_attribution_window_is_configurable(graph):
    short = build_examples(graph, "train", attribution_days=1)
    long = build_examples(graph, "train", attribution_days=7)
    assert short.attribution_window_s == DAY
    assert short.size > long.size  # fewer censored
    rows, censored = _reference_labels(graph, "train", DAY)
    assert list(short.frame.select("user", "ad", "ts", "label").iter_rows()) == rows
    assert short.censored == censored


def test_labels_never_read_past_the_horizon(dataset):
    """Deleting every edge at or after the train horizon leaves the train labels unchanged."""
    full = build_examples(build_graph(dataset), "train")
    horizon = dataset.manifest.time.validation_start
    cut = dataclasses.replace(dataset, edges=dataset.edges.filter(pl.col("ts") < horizon))
    truncated = build_examples(build_graph(cut), "train")
    assert truncated.frame.equals(full.frame)
    assert truncated.censored == full.censored


def test_no_conversion_types_is_an_input_error(write_dataset):
    graph = build_graph(load_dataset(write_dataset()))
    with pytest.raises(InputError, match="no conversion edge type"):
        build_examples(graph, "train")


def test_window_names_are_checked(graph):
    with pytest.raises(ValueError, match="window must be one of"):
        build_examples(graph, "future")


def test_mini_labels_by_hand(write_dataset):
    """Hand-checked, 2-day attribution, train window [day 0, day 6):
    - impression of ad 1 (advertiser 1) at day 2: purchase of product 1 (advertiser 1) at
      day 3 -> label 1;
    - impression of ad 2 (advertiser 2) at day 3: the day-3 purchase is on advertiser 1, and
      advertiser 2's purchase comes at day 5 + 60 s, just past the window -> label 0;
    - impression at day 5: its window ends at day 7 > day 6 -> censored."""
    manifest = DatasetManifest(
        name="hand",
        node_types=("user", "ad", "advertiser", "product"),
        edge_types=(
            EdgeTypeSpec("user", "impression", "ad", "exposure"),
            EdgeTypeSpec("user", "purchase", "product", "conversion"),
            EdgeTypeSpec("advertiser", "runs", "ad", "structural"),
            EdgeTypeSpec("advertiser", "sells", "product", "structural"),
        ),
        time=TimeSplits(T0, T0 + 6 * DAY, T0 + 8 * DAY, T0 + 10 * DAY),
        attribution_window_days=2.0,
        owner_type="advertiser",
    ).to_toml()
    nodes = pl.DataFrame(
        {
            "node_type": ["user", "ad", "ad", "advertiser", "advertiser", "product", "product"],
            "node_id": [1, 1, 2, 1, 2, 1, 2],
        }
    )
    edges = pl.DataFrame(
        {
            "src_type": [
                "advertiser",
                "advertiser",
                "advertiser",
                "advertiser",
                "user",
                "user",
                "user",
                "user",
                "user",
            ],
            "src_id": [1, 2, 1, 2, 1, 1, 1, 1, 1],
            "dst_type": ["ad", "ad", "product", "product", "ad", "product", "ad", "ad", "product"],
            "dst_id": [1, 2, 1, 2, 1, 1, 2, 1, 2],
            "edge_type": [
                "runs",
                "runs",
                "sells",
                "sells",
                "impression",
                "purchase",
                "impression",
                "impression",
                "purchase",
            ],
            "ts": [
                T0,
                T0,
                T0,
                T0,
                T0 + 2 * DAY,
                T0 + 3 * DAY,
                T0 + 3 * DAY,
                T0 + 5 * DAY,
                T0 + 5 * DAY + 60,
            ],
        }
    )
    graph = build_graph(
        load_dataset(write_dataset(manifest=manifest, nodes=nodes, edges=edges, content=None))
    )
    ex = build_examples(graph, "train")
    assert ex.frame["label"].to_list() == [1, 0]
    assert ex.frame["ts"].to_list() == [T0 + 2 * DAY, T0 + 3 * DAY]
    assert ex.censored == 1


def test_labels_read_the_conversions_the_caller_passes(tiny_graph):
    from hir_sdk.graph.event_index import EventIndex
    from hir_sdk.graph.owners import OwnersAsOf, conversion_index

    owners = OwnersAsOf(tiny_graph)
    own = build_examples(tiny_graph, "train")
    shared = build_examples(
        tiny_graph, "train", owners=owners, conversions=conversion_index(tiny_graph, owners)
    )
    assert shared.frame.equals(own.frame) and own.frame["label"].sum() > 0
    empty = EventIndex(np.zeros(0, np.int64), np.zeros(0, np.int64))
    none = build_examples(tiny_graph, "train", owners=owners, conversions=empty)
    assert none.frame["label"].sum() == 0 and none.frame.height == own.frame.height
