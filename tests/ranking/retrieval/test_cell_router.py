"""`CellRouter` learns which cells hold a query's nearest items when queries do not look
like items, is deterministic, and rejects bad input with one clear message."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import (
    CellRouter,
    InvertedIndex,
    exact_knn,
    neighbor_recall,
    probe_bags,
)

CELLS, DIM = 32, 16


def world(seed: int, queries: int):
    """Items in 32 cells around unit centres, every other cell tight (spread 0.05) or wide
    (0.5); queries are random unit directions, unlike any item. A query's nearest items
    sit mostly at the far ends of the wide cells, whose centroids rank no higher than the
    tight ones': the centroid order misses them, a learned order need not."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(CELLS, DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    cell = np.repeat(np.arange(CELLS), 40)
    spread = np.where(np.arange(CELLS) % 2 == 0, 0.05, 0.5)
    items = centres[cell] + spread[cell, None] * rng.normal(size=(len(cell), DIM))
    users = np.random.default_rng(seed).normal(size=(queries, DIM))
    users /= np.linalg.norm(users, axis=1, keepdims=True)
    return items.astype(np.float32), cell, users.astype(np.float32), centres.astype(np.float32)


def test_router_finds_the_cells_the_centroids_miss() -> None:
    items, cell, train, centres = world(1, 2000)
    _, _, test, _ = world(2, 300)  # other queries than the router learned from
    router = CellRouter.fit(train, items, cell, CELLS, k=20, steps=200)
    index = InvertedIndex.build(np.arange(len(items)), cell[:, None], CELLS, items)
    truth = exact_knn(test, items, 20).ids
    recall = {}
    for name, scores in (("centroid", test @ centres.T), ("router", router.scores(test))):
        bags = probe_bags(scores[:, None, :], 2)
        found = index.search(bags, 20, query_embeddings=test, gather_codebooks=1)
        recall[name] = neighbor_recall(found.ids, truth, 20)
    assert recall["router"] > 1.5 * recall["centroid"]
    assert recall["router"] > recall["centroid"] + 0.1


def test_router_is_deterministic() -> None:
    items, cell, train, _ = world(1, 500)
    first = CellRouter.fit(train, items, cell, CELLS, k=10, steps=20, batch_size=128)
    again = CellRouter.fit(train, items, cell, CELLS, k=10, steps=20, batch_size=128)
    assert np.array_equal(first.weights, again.weights)
    assert np.array_equal(first.bias, again.bias) and first.scale == again.scale
    other = CellRouter.fit(train, items, cell, CELLS, k=10, steps=20, batch_size=128, seed=1)
    assert not np.array_equal(first.weights, other.weights)
    assert first.scores(train[:3]).shape == (3, CELLS)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cells": np.full(1280, CELLS)}, "cells must lie in"),
        ({"cells": np.zeros(5, dtype=np.int64)}, "cells must be (1280,) integers"),
        ({"queries": np.full((4, DIM), np.nan, dtype=np.float32)}, "queries must be finite"),
        ({"queries": np.zeros((4, DIM + 1), dtype=np.float32)}, "queries must have dimension"),
        ({"num_cells": 0}, "num_cells must be a whole number"),
    ],
)
def test_router_rejects_bad_input(change, message) -> None:
    items, cell, train, _ = world(1, 50)
    args = {"queries": train, "embeddings": items, "cells": cell, "num_cells": CELLS} | change
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CellRouter.fit(**args, steps=1)


def test_router_saves_and_loads(tmp_path) -> None:
    items, cell, train, _ = world(1, 200)
    router = CellRouter.fit(train, items, cell, CELLS, k=10, steps=5)
    router.save(tmp_path / "router.npz")
    again = CellRouter.load(tmp_path / "router.npz")
    assert np.array_equal(again.scores(train), router.scores(train))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="cannot read a saved cell router"):
        CellRouter.load(tmp_path / "junk.npz")
    np.savez(tmp_path / "other.npz", weights=router.weights)
    with pytest.raises(InputError, match="not a saved hir-sdk/cell-router file"):
        CellRouter.load(tmp_path / "other.npz")
