"""The vectorised graph equals the naive reference on tiny data."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.graph import build_graph_from_dir
from tests.hir_sdk.graph.reference import ReferenceGraph


@pytest.fixture(scope="module")
def pair(tiny_world):
    return build_graph_from_dir(tiny_world), ReferenceGraph(tiny_world)


def test_edges_in_canonical_time_order(pair):
    graph, ref = pair
    assert graph.num_edges == len(ref.edges)
    assert graph.ts.tolist() == [e[0] for e in ref.edges]
    assert graph.src.tolist() == [e[2] for e in ref.edges]
    assert graph.dst.tolist() == [e[3] for e in ref.edges]
    assert graph.etype.tolist() == [e[4] for e in ref.edges]
    assert np.allclose(graph.weight, [e[5] for e in ref.edges])


def test_index_matches_reference(pair):
    graph, ref = pair
    for (node_type, node_id), index in list(ref.index.items())[::37]:
        assert graph.index(node_type, [node_id])[0] == index
        assert graph.node_id(index) == (node_type, node_id)
    offsets = graph.type_offsets.tolist()
    assert offsets[0] == 0 and offsets[-1] == graph.num_nodes == len(ref.index)


def test_neighbors_match_reference(pair):
    graph, ref = pair
    rng = np.random.default_rng(0)
    t = graph.manifest.time
    nodes = np.concatenate(
        [rng.integers(0, graph.num_nodes, 60), graph.type_offsets[1:-1]]
    )  # first node of each type
    for node in nodes.tolist():
        for direction in ("out", "in", "both"):
            before = int(rng.integers(t.start, t.end)) if rng.random() < 0.7 else None
            etypes = None
            if rng.random() < 0.4:
                etypes = {int(x) for x in rng.choice(len(graph.edge_types), 2, replace=False)}
            got = graph.neighbors(
                node,
                before=before,
                direction=direction,
                edge_types=None if etypes is None else sorted(etypes),
            )
            want = ref.neighbors(node, before, etypes, direction)
            assert (
                list(
                    zip(
                        got.edge.tolist(),
                        got.node.tolist(),
                        got.etype.tolist(),
                        got.ts.tolist(),
                        strict=True,
                    )
                )
                == want
            ), (node, direction)


def test_csr_degrees_match_reference(pair):
    graph, ref = pair
    out_deg = np.zeros(graph.num_nodes, dtype=np.int64)
    in_deg = np.zeros(graph.num_nodes, dtype=np.int64)
    for _, _, src, dst, _, _ in ref.edges:
        out_deg[src] += 1
        in_deg[dst] += 1
    assert np.array_equal(np.diff(graph.out_ptr), out_deg)
    assert np.array_equal(np.diff(graph.in_ptr), in_deg)


def test_edge_types_by_name_and_triple(pair):
    graph, _ = pair
    user = int(graph.index("user", [0])[0])
    by_name = graph.neighbors(user, edge_types="click")
    by_triple = graph.neighbors(user, edge_types=("user", "click", "ad"))
    assert by_name.edge.tolist() == by_triple.edge.tolist()
    assert set(by_name.etype.tolist()) <= {graph.edge_type_code("click")}


def test_role_codes_are_the_manifest_edge_types_of_those_roles(pair):
    graph, _ = pair
    manifest = graph.manifest
    for roles in (("click",), ("exposure", "conversion"), ("structural",)):
        expected = [
            graph.edge_type_code(spec.key)
            for role in roles
            for spec in manifest.edge_types_with_role(role)
        ]
        assert graph.role_codes(*roles).tolist() == expected
        assert len(expected) > 0
    assert graph.role_codes().tolist() == []
    conversions = graph.role_codes("conversion")
    assert {graph.edge_types[c][1] for c in conversions.tolist()} == {"purchase", "pixel_fire"}


def test_decay_weights_halve_per_half_life(pair):
    graph, _ = pair
    code = graph.edge_type_code("impression")
    edge = int(np.flatnonzero(graph.etype == code)[0])
    half_life = graph.half_life_s[code]
    at = int(graph.ts[edge] + half_life)
    assert graph.decay_weights(np.array([edge]), at)[0] == pytest.approx(graph.weight[edge] / 2)
    assert graph.decay_weights(np.array([edge]), int(graph.ts[edge]))[0] == pytest.approx(
        graph.weight[edge]
    )
    with pytest.raises(ValueError, match="dated after"):
        graph.decay_weights(np.array([edge]), int(graph.ts[edge]) - 1)


def test_windows_partition_edges(pair):
    graph, _ = pair
    windows = [graph.window(w) for w in ("train", "validation", "test")]
    assert windows[0].start == 0 and windows[-1].stop == graph.num_edges
    assert windows[0].stop == windows[1].start and windows[1].stop == windows[2].start
    t = graph.manifest.time
    assert (graph.ts[windows[1]] >= t.validation_start).all()
    assert (graph.ts[windows[1]] < t.test_start).all()


def test_unknown_ids_and_types_raise_input_error(pair):
    from hir_sdk.errors import InputError

    graph, _ = pair
    with pytest.raises(InputError, match="unknown user ids"):
        graph.index("user", [10**9])
    with pytest.raises(InputError, match="unknown node type"):
        graph.index("store", [0])
    with pytest.raises(InputError, match="unknown edge type"):
        graph.neighbors(0, edge_types="view")
