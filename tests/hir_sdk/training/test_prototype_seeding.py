"""Hierarchical k-means seeding recovers a planted two-level hierarchy and sets the
prototype heads to exactly those centres."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import normalized_mutual_info_score

from hir_sdk.model.config import PrototypeConfig
from hir_sdk.model.heads import PrototypeHeads
from hir_sdk.training.prototype_seeding import hierarchical_centres, seed_prototypes


def _planted(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """4 coarse axes e_c, each with 4 sub-directions e_c + 0.5 e_(4 + 4c + s), 50 noisy
    rows per sub-direction (20 dims)."""
    fine = np.arange(16).repeat(50)
    basis = np.eye(20)
    sub = basis[np.arange(16) // 4] + 0.5 * basis[4 + np.arange(16)]  # (16, 20)
    rows = sub[fine] + 0.05 * rng.standard_normal((800, 20))
    return rows.astype(np.float32), fine // 4, fine


def test_recovers_a_planted_hierarchy_and_nests():
    rows, coarse, fine = _planted(np.random.default_rng(0))
    levels = hierarchical_centres(rows, (4, 16), seed=0)
    assert [c.shape for c in levels] == [(4, 20), (16, 20)]
    for c in levels:
        np.testing.assert_allclose(np.linalg.norm(c, axis=1), 1.0, atol=1e-5)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    top = (unit @ levels[0].T).argmax(axis=1)
    assert normalized_mutual_info_score(coarse, top) == pytest.approx(1.0)
    # each row's best child among its own parent's children is its planted sub-direction
    children = (unit @ levels[1].T).reshape(800, 4, 4)[np.arange(800), top].argmax(axis=1)
    assert normalized_mutual_info_score(fine, top * 4 + children) == pytest.approx(1.0)


def test_deterministic_and_seed_dependent():
    rows, _, _ = _planted(np.random.default_rng(1))
    a = hierarchical_centres(rows, (4, 16), seed=3)
    b = hierarchical_centres(rows, (4, 16), seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_children_of_a_nearly_empty_parent_are_jittered_copies():
    rows = np.eye(3, dtype=np.float32).repeat([5, 5, 1], axis=0)  # parent 2 holds one row
    levels = hierarchical_centres(rows, (3, 9), seed=0)
    parent = int((levels[0] @ np.eye(3, dtype=np.float32)[2]).argmax())
    kids = levels[1][parent * 3 : parent * 3 + 3]
    assert len({tuple(np.round(k, 6)) for k in kids}) == 3  # distinct
    assert (kids @ levels[0][parent] > 0.99).all()  # all near the parent


def test_seed_prototypes_sets_the_heads():
    rows, _, _ = _planted(np.random.default_rng(2))
    heads = PrototypeHeads(20, PrototypeConfig(sizes=(4, 16)))
    seed_prototypes(heads, rows, seed=0)
    want = hierarchical_centres(rows, (4, 16), seed=0)
    for got, expected in zip(heads.prototypes(), want, strict=True):
        torch.testing.assert_close(got, torch.from_numpy(expected), atol=1e-5, rtol=0)


def test_too_few_rows():
    with pytest.raises(ValueError, match="at least as many rows"):
        hierarchical_centres(np.ones((3, 4), dtype=np.float32), (4, 16))
