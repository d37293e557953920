"""Thousands of edge types: codes come from one lookup of a key per edge (a direct table,
or a sorted search when the table would be too large), not a loop over types.

The edge-type table used to be a dense (node type x relation x node type) array filled
with `list.index` per declared type, and graph lookups scanned every type per call, so the
work grew with types squared. These tests check values on a few thousand types (no
timing): each edge gets the code of its own declared triple.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hir_sdk.graph import build_graph
from hir_sdk.schema import (
    Dataset,
    DatasetManifest,
    EdgeTypeSpec,
    TimeSplits,
    category_codes,
)
from hir_sdk.schema.columns import ROW
from hir_sdk.schema.tables import validate_edges, validate_nodes
from tests.conftest import DAY, T0

NODE_TYPES = tuple(f"t{i}" for i in range(40))
RELATIONS = 150
ROLES = ("exposure", "click", "engagement", "conversion", "structural")


def _manifest() -> DatasetManifest:
    """40 node types and 150 relation names, each joining 20 (src, dst) pairs: 3,000 edge
    types, declared in a shuffled order so that codes are not sorted by name."""
    rng = np.random.default_rng(0)
    specs = [
        EdgeTypeSpec(NODE_TYPES[s], f"rel{r}", NODE_TYPES[(s + 1 + r) % 40], ROLES[r % 5])
        for r in range(RELATIONS)
        for s in range(0, 40, 2)
    ]
    order = rng.permutation(len(specs))
    return DatasetManifest(
        name="many-types",
        node_types=NODE_TYPES,
        edge_types=tuple(specs[i] for i in order),
        time=TimeSplits(T0, T0 + 6 * DAY, T0 + 8 * DAY, T0 + 10 * DAY),
    )


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("table", [True, False])
def test_each_edge_gets_the_code_of_its_declared_triple(categorical, table, monkeypatch):
    if not table:  # every key too many for a direct table: the sorted search
        monkeypatch.setattr(category_codes, "MAX_TRIPLES", 0)  # on both paths
    manifest = _manifest()
    keys = manifest.edge_type_keys
    assert len(keys) == 3_000
    nodes = pl.DataFrame({"node_type": list(NODE_TYPES), "node_id": [0] * len(NODE_TYPES)})
    nodes = validate_nodes(nodes.with_row_index(ROW), manifest, Path("nodes.parquet"))
    rng = np.random.default_rng(1)
    expected = np.concatenate([np.arange(len(keys)), rng.integers(0, len(keys), 3_000)])
    edges = pl.DataFrame(
        {
            "src_type": [keys[c][0] for c in expected],
            "src_id": np.zeros(len(expected), dtype=np.int64),
            "dst_type": [keys[c][2] for c in expected],
            "dst_id": np.zeros(len(expected), dtype=np.int64),
            "edge_type": [keys[c][1] for c in expected],
            "ts": T0 + np.arange(len(expected)),  # distinct times: the rows keep their order
        }
    )
    if categorical:  # parquet dictionary columns take the categorical path
        edges = edges.with_columns(pl.col("src_type", "dst_type", "edge_type").cast(pl.Categorical))
    out = validate_edges(edges.with_row_index(ROW), manifest, nodes, Path("edges.parquet"))
    assert out["etype"].to_numpy().tolist() == expected.tolist()
    node_code = {t: i for i, t in enumerate(NODE_TYPES)}
    assert out["src"].to_list() == [node_code[keys[c][0]] for c in expected]
    assert out["dst"].to_list() == [node_code[keys[c][2]] for c in expected]

    graph = build_graph(
        Dataset(Path("."), manifest, nodes, out, content=None, fingerprint="many-types")
    )
    assert [graph.edge_type_code(key) for key in keys] == list(range(len(keys)))
    for role in ROLES:
        codes = graph.role_codes(role).tolist()
        assert codes == [c for c, spec in enumerate(manifest.edge_types) if spec.role == role]
    assert graph.edge_type_codes(list(keys[::7])).tolist() == list(range(0, len(keys), 7))


@pytest.mark.parametrize("table", [True, False])
def test_an_undeclared_triple_among_thousands_is_named(table, monkeypatch):
    from hir_sdk.errors import InputError

    if not table:
        monkeypatch.setattr(category_codes, "MAX_TRIPLES", 0)
    manifest = _manifest()
    nodes = pl.DataFrame({"node_type": list(NODE_TYPES), "node_id": [0] * len(NODE_TYPES)})
    nodes = validate_nodes(nodes.with_row_index(ROW), manifest, Path("nodes.parquet"))
    declared = set(manifest.edge_type_keys)
    missing = next(
        (s, "rel0", d) for s in NODE_TYPES for d in NODE_TYPES if (s, "rel0", d) not in declared
    )
    edges = pl.DataFrame(
        {
            "src_type": [missing[0]],
            "src_id": [0],
            "dst_type": [missing[2]],
            "dst_id": [0],
            "edge_type": ["rel0"],
            "ts": [T0],
        }
    )
    with pytest.raises(InputError, match="undeclared edge types") as caught:
        validate_edges(edges.with_row_index(ROW), manifest, nodes, Path("edges.parquet"))
    assert "(2,990 more)" in str(caught.value)  # the declared list is cut, not 3,000 long
    assert len(str(caught.value)) < 2_000
