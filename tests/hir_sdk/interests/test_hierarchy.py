"""The interest hierarchy against loop references on the tiny snapshot."""

from __future__ import annotations

from collections import Counter
from xml.etree import ElementTree

import numpy as np
import polars as pl
import pytest

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.graph.owners import owner_of_nodes
from hir_sdk.interests.hierarchy import (
    cluster_affinity,
    nearest,
    parents,
    primitive_affinity,
    primitive_sizes,
    proximity,
    served_primitives,
    snapshot_nodes,
    snapshot_rows,
    super_graph,
)
from hir_sdk.interests.hierarchy_svg import hierarchy_svg
from hir_sdk.interests.labels import label_primitives
from hir_sdk.schema import load_dataset


@pytest.fixture(scope="module")
def graph(tiny_world):
    return build_graph_from_dir(tiny_world)


def test_snapshot_rows_map_to_their_nodes(snapshot, graph):
    nodes = snapshot_nodes(snapshot, graph)
    types = np.asarray(graph.node_types)[graph.node_type_of(nodes)]
    assert (types == snapshot.table["node_type"].cast(pl.String).to_numpy()).all()
    assert (graph.node_ids_of(nodes) == snapshot.table["node_id"].to_numpy()).all()
    rows = snapshot_rows(snapshot, graph)
    assert (rows[nodes] == np.arange(len(nodes))).all()
    assert (rows >= 0).sum() == len(nodes) and rows.min() == -1


def test_levels_nest_and_sizes_add_up(snapshot):
    assert parents(snapshot, 1).tolist() == [k // 4 for k in range(16)]
    assert parents(snapshot, 2).tolist() == [k // 4 for k in range(64)]
    sizes = primitive_sizes(snapshot, 1)
    assert sizes.drop("primitive").sum_horizontal().sum() == len(snapshot.table)


def test_super_graph_counts_equal_a_loop(snapshot, graph):
    level = 1
    sg = super_graph(snapshot, graph, level)
    nodes = snapshot_nodes(snapshot, graph)
    row = {int(n): i for i, n in enumerate(nodes)}
    roles = {"exposure", "click", "engagement", "conversion"}
    codes = {i for i, s in enumerate(graph.manifest.edge_types) if s.role in roles}
    cluster = snapshot.clusters(level)
    types = snapshot.table["node_type"].cast(pl.String).to_list()
    edges, pairs = Counter(), {}
    for e in range(graph.num_edges):
        if graph.ts[e] >= snapshot.as_of or int(graph.etype[e]) not in codes:
            continue
        s, d = row.get(int(graph.src[e])), row.get(int(graph.dst[e]))
        if s is None or d is None:
            continue
        key = (types[s], types[d], int(cluster[s]), int(cluster[d]))
        edges[key] += 1
        pairs.setdefault(key, set()).add((s, d))
    got = {
        (r["src_type"], r["dst_type"], r["src_primitive"], r["dst_primitive"]): (
            r["edges"],
            r["pairs"],
        )
        for r in sg.edges.iter_rows(named=True)
    }
    assert got == {k: (edges[k], len(pairs[k])) for k in edges}
    click = sg.density.filter(pl.col("src_type") == "user", pl.col("dst_type") == "ad")
    assert len(click) == 1
    r = click.row(0, named=True)
    assert r["raw_density"] == pytest.approx(r["raw_pairs"] / (r["sources"] * r["destinations"]))
    assert r["primitive_density"] > r["raw_density"]  # aggregation densifies
    assert r["primitive_pairs"] <= 16 * 16


def test_affinities_and_proximity(snapshot, graph):
    sg = super_graph(snapshot, graph, 0)
    a = primitive_affinity(sg, 4)
    assert np.allclose(a, a.T) and a.min() >= 0 and a.max() <= 1 + 1e-12
    c = cluster_affinity(snapshot, 2)
    assert np.allclose(np.diag(c), 1.0, atol=1e-5)
    users = snapshot.of_type("user")[:10]
    p = proximity(snapshot, users, 1)
    assert p.shape == (10, 16)
    assert np.allclose(p.sum(axis=1), 1.0)
    # the most proximate primitive is the entity's own cluster (argmax of the same cosines)
    assert (p.argmax(axis=1) == snapshot.clusters(1)[users]).all()


def test_served_primitives_equal_a_loop(snapshot, graph):
    served = served_primitives(snapshot, graph, 0)
    nodes = snapshot_nodes(snapshot, graph)
    owners = owner_of_nodes(graph)[nodes]
    cluster = snapshot.clusters(0)
    want = Counter()
    for i, o in enumerate(owners):
        if o >= 0 and o != nodes[i]:
            want[(graph.node_ids_of(np.array([o]))[0], int(cluster[i]))] += 1
    got = {(r["owner_id"], r["primitive"]): r["entities"] for r in served.iter_rows(named=True)}
    assert got == dict(want)
    shares = served.group_by("owner_id").agg(pl.col("share").sum())["share"].to_numpy()
    assert np.allclose(shares, 1.0)


def test_served_primitives_read_owners_as_of_the_rows(snapshot, graph):
    """Rows dated before every structural edge have no owner yet: nothing is served."""
    import dataclasses

    from hir_sdk.errors import InputError

    early = snapshot.table.with_columns(pl.lit(graph.manifest.time.start).alias("as_of"))
    with pytest.raises(InputError, match="no entity in the snapshot has an owner"):
        served_primitives(dataclasses.replace(snapshot, table=early), graph, 0)


def test_nearest_equals_brute_force(snapshot):
    z = snapshot.embeddings()
    row = int(snapshot.of_type("ad")[0])
    got = nearest(snapshot, row, 5, node_type="user")
    users = snapshot.of_type("user")
    scores = z[users] @ z[row]
    want = users[np.lexsort((users, -scores))[:5]]
    assert got["node_id"].to_list() == snapshot.table["node_id"].to_numpy()[want].tolist()
    assert (got["node_type"].cast(pl.String) == "user").all()
    anywhere = nearest(snapshot, row, 3)  # every type, the entity itself left out
    scores = z @ z[row]
    scores[row] = -np.inf
    want = np.lexsort((np.arange(len(z)), -scores))[:3]
    assert anywhere["node_id"].to_list() == snapshot.table["node_id"].to_numpy()[want].tolist()


def test_labels_come_from_member_texts(snapshot, tiny_world):
    content = load_dataset(tiny_world).content
    labels = label_primitives(snapshot, content, 1, keywords=4, entities=2)
    assert labels["size"].sum() == len(snapshot.table)
    texts = content.select(
        pl.col("node_type").cast(pl.String), pl.col("node_id").cast(pl.String), "text"
    )
    table = snapshot.table.select(
        pl.col("node_type").cast(pl.String), pl.col("node_id").cast(pl.String), "cluster_l1"
    )
    members = table.join(texts, on=["node_type", "node_id"])
    labelled = 0
    for r in labels.iter_rows(named=True):
        words = " ".join(
            members.filter(pl.col("cluster_l1") == r["primitive"])["text"].to_list()
        ).lower()
        assert all(w in words for w in r["keywords"])
        assert 1 <= len(r["top_entities"]) <= 2
        labelled += bool(r["keywords"])
    assert labelled >= 1
    again = label_primitives(snapshot, content, 1, keywords=4, entities=2)
    assert again.equals(labels)
    plain = label_primitives(snapshot, None, 1)
    assert (plain["label"] == "").all()


def test_hierarchy_picture_is_valid_svg_with_every_coarse_primitive(snapshot, tiny_world):
    content = load_dataset(tiny_world).content
    coarse = label_primitives(snapshot, content, 0)
    fine = label_primitives(snapshot, content, 1)
    svg = hierarchy_svg(coarse, fine, parents(snapshot, 1).tolist(), children=3)
    root = ElementTree.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    for row in coarse.iter_rows(named=True):
        assert f"#{row['primitive']} ({row['size']:,})" in texts
    boxes = list(root.iter("{http://www.w3.org/2000/svg}rect"))
    per_column = fine.with_columns(parent=pl.col("primitive") // 4).group_by("parent").len()
    shown = per_column["len"].clip(upper_bound=3).sum()
    assert len(boxes) == 1 + len(coarse) + shown  # background + coarse + children
