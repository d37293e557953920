"""The edge checks' lookups over many blocks: endpoints to node indices, and (src type,
relation, dst type) triples to edge-type codes, against plain per-row references."""

from __future__ import annotations

import numpy as np

from hir_sdk.schema import category_codes, node_index
from hir_sdk.schema.node_index import MISSING, dense_table, lookup_dense


def test_dense_lookup_over_many_blocks() -> None:
    rng = np.random.default_rng(0)
    # three types; ids sorted within each type, with gaps (the table has holes)
    per_type = [np.sort(rng.choice(1_000, 600, replace=False)) + low for low in (0, -50, 10**6)]
    all_ids = np.concatenate(per_type).astype(np.int64)
    offsets = np.cumsum([0] + [len(ids) for ids in per_type])
    dense = dense_table(all_ids, offsets, np.arange(3))
    assert dense is not None
    rows = 3 * node_index._BLOCK + 17  # several blocks and a short last one
    codes = rng.integers(0, 3, rows).astype(np.int32)
    wanted = rng.integers(-100, 1_000, rows) + np.where(codes == 2, 10**6, 0)
    wanted[:5] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 10**6 - 1, 10**6 + 999]
    found = lookup_dense(*dense, codes, wanted)
    where = {
        (c, int(i)): offsets[c] + k for c, ids in enumerate(per_type) for k, i in enumerate(ids)
    }
    expected = [where.get((int(c), int(w)), MISSING) for c, w in zip(codes, wanted, strict=True)]
    assert found.tolist() == expected
    assert (found >= 0).sum() > rows // 3  # most ids exist, some do not


def test_triple_lookup_over_many_blocks() -> None:
    """`edge_type_codes` (both paths' edge-type lookup) over several blocks and pieces,
    with the keys of a direct table: `table[(src * rels + rel) * types + dst]`."""
    rng = np.random.default_rng(1)
    rels, types = 5, 7
    table = rng.integers(-1, 30, types * rels * types).astype(np.int16)
    rows = 2 * category_codes.BLOCK + 3
    src = rng.integers(0, types, rows).astype(np.int32)
    rel = rng.integers(0, rels, rows).astype(np.int32)
    dst = rng.integers(0, types, rows).astype(np.int32)
    parts = (
        np.arange(types, dtype=np.int32) * rels * types,
        np.arange(rels, dtype=np.int32) * types,
        np.arange(types, dtype=np.int32),
    )
    cut = category_codes.BLOCK + 5  # a piece that ends inside a block
    pieces = [(src[:cut], rel[:cut], dst[:cut]), (src[cut:], rel[cut:], dst[cut:])]
    got = category_codes.edge_type_codes((parts, table), pieces)
    assert got.dtype == np.int16
    expected = table[(src.astype(np.int64) * rels + rel) * types + dst]
    np.testing.assert_array_equal(got, expected)
