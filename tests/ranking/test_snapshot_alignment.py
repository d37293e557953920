"""Aligning a refreshed encoder's snapshots onto the first encoder's space: Procrustes
recovers a rotation, and a rotated snapshot is brought back, clusters included."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.ranking.hir_lookup import ALIGNED_READ_UNTIL, HirLookup, read_until
from hir_sdk.ranking.snapshot_alignment import ALIGNED_TO, Space, procrustes
from hir_sdk.schema.manifest import DAY
from tests.hir_sdk.interests.conftest import snapshot  # noqa: F401


def _rotation(dim: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return q * np.sign(np.diag(r))  # (D, D) orthogonal, a uniform draw


def test_procrustes_recovers_a_rotation():
    rng = np.random.default_rng(0)
    b = rng.normal(size=(200, 16))
    q = _rotation(16, 1)
    r = procrustes(b @ q, b)  # the new space is the old one turned by q
    np.testing.assert_allclose(r, q.T, atol=1e-10)
    np.testing.assert_allclose(r @ r.T, np.eye(16), atol=1e-10)
    # with noise, the best rotation still beats leaving the space as it is
    noisy = b @ q + 0.1 * rng.normal(size=b.shape)
    fitted = procrustes(noisy, b)
    assert np.linalg.norm(noisy @ fitted - b) < 0.1 * np.linalg.norm(noisy - b)
    with pytest.raises(ValueError, match="must be equal"):
        procrustes(b, b[:10])


def _rotated(snap, q: np.ndarray):
    """`snap` as an encoder whose space is `snap`'s turned by `q` would embed it: its
    embeddings and prototypes rotated, its clusters numbered its own way (shuffled)."""
    z = snap.embeddings().astype(np.float64) @ q
    columns = {"embedding": pl.Series(z.astype(np.float32), dtype=pl.Array(pl.Float32, z.shape[1]))}
    prototypes = []
    for level, p in enumerate(snap.prototypes):
        order = np.random.default_rng(level).permutation(len(p))
        prototypes.append((p @ q)[order])
        renumber = np.argsort(order)  # old cluster c is new cluster renumber[c]
        columns[f"cluster_l{level}"] = pl.Series(renumber[snap.clusters(level)], dtype=pl.Int32)
    return dataclasses.replace(
        snap, table=snap.table.with_columns(**columns), prototypes=prototypes, meta={**snap.meta}
    )


def test_a_rotated_snapshot_is_brought_back(snapshot):  # noqa: F811
    z = snapshot.embeddings()
    q = _rotation(z.shape[1], 2)
    new = _rotated(snapshot, q)
    assert not np.allclose(new.embeddings(), z, atol=1e-3)
    changed = [(new.clusters(lv) != snapshot.clusters(lv)).mean() for lv in range(new.levels)]
    assert min(changed) > 0.5  # the new encoder numbers its clusters its own way
    first = Space.of(snapshot, read_until(snapshot.meta))
    later = read_until(snapshot.meta) + 3 * DAY  # past what the first encoder read
    space = first.refreshed(new.embeddings(), z, read_until=later)
    back = space.apply(new)
    np.testing.assert_allclose(back.embeddings(), z, atol=1e-5)
    own = [(z @ p.T).argmax(axis=1) for p in snapshot.prototypes]
    for level in range(snapshot.levels):
        np.testing.assert_array_equal(back.clusters(level), own[level])
        np.testing.assert_array_equal(back.prototypes[level], snapshot.prototypes[level])
    # the snapshot's own clusters are those of its prototypes: alignment keeps them
    for level in range(snapshot.levels):
        assert (own[level] == snapshot.clusters(level)).mean() > 0.99
    # tokens and row times stay the snapshot's own; what the chain read is recorded
    assert back.table["bom"].equals(new.table["bom"]) and back.as_of == new.as_of
    assert back.meta[ALIGNED_TO] == snapshot.meta["run"]
    assert back.meta[ALIGNED_READ_UNTIL] == later == read_until(back.meta)


def test_the_lookup_counts_what_an_alignment_read(snapshot, tiny_graph):  # noqa: F811
    """An aligned snapshot whose alignment chain read past its own time moves the fit
    window like its own encoder would."""
    at = snapshot.as_of
    clean = HirLookup(tiny_graph, [snapshot])
    own_end = read_until(snapshot.meta)
    assert clean.fit_from == max(at, own_end) and not clean.aligned
    space = Space.of(snapshot, own_end)
    later = max(at, own_end) + 2 * DAY
    aligned = space.refreshed(snapshot.embeddings(), snapshot.embeddings(), later)
    lookup = HirLookup(tiny_graph, [aligned.apply(snapshot)])
    assert lookup.aligned and lookup.fit_from == later
