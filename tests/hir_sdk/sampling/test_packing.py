"""Packing: flat jagged tokens, document ids, size buckets, and a consistent padded view."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.sampling import ViewSampler
from hir_sdk.sampling.encodings import EncodingConfig, encode
from hir_sdk.sampling.packing import NO_EDGE, bucket_length, pack
from tests.hir_sdk.sampling.conftest import valid_anchors


@pytest.mark.parametrize(
    ("total", "expected"),
    [(1, 128), (128, 128), (129, 256), (385, 512), (1025, 1280), (4154, 5120), (9000, 10240)],
)
def test_bucket_lengths(total, expected):
    assert bucket_length(total) == expected


def test_buckets_are_few_and_tight():
    sizes = {bucket_length(t) for t in range(1, 20_000)}
    assert len(sizes) <= 30
    assert all(bucket_length(t) < 1.26 * t for t in range(1025, 20_000, 97))


@pytest.fixture(scope="module")
def packed(tiny_graph):
    anchors, cutoffs = valid_anchors(tiny_graph, 12, seed=2)
    sampler = ViewSampler(tiny_graph)
    sub = sampler.sample(anchors, cutoffs, sampler.config.teacher)
    config = EncodingConfig()
    enc = encode(tiny_graph, sub, config)
    return sub, enc, pack(sub, enc, config.far)


def test_tokens_and_documents(packed):
    sub, _, batch = packed
    assert batch.length == bucket_length(batch.num_tokens) >= batch.num_tokens
    assert (batch.node[: batch.num_tokens] == sub.nodes).all()
    assert (batch.doc[batch.num_tokens :] == -1).all()
    docs = batch.doc[: batch.num_tokens]
    assert (np.diff(docs) >= 0).all() and (np.bincount(docs) == sub.sizes()).all()
    assert (batch.local[batch.offsets[:-1]] == 0).all()
    assert (batch.doc[batch.edge_q] == batch.doc[batch.edge_k]).all()


def test_padded_view_agrees_with_flat_lookups(packed):
    sub, enc, batch = packed
    dense = batch.padded()
    assert dense.mask.sum() == batch.num_tokens
    rng = np.random.default_rng(0)
    for _ in range(200):
        q, k = rng.integers(0, batch.num_tokens, 2)
        if batch.doc[q] != batch.doc[k]:
            continue
        b, n = batch.doc[q], int(sub.sizes()[batch.doc[q]])
        flat = batch.spd[batch.spd_offsets[b] + batch.local[q] * n + batch.local[k]]
        assert dense.spd[b, batch.local[q], batch.local[k]] == flat
    b, i, j = batch.doc[batch.edge_q], batch.local[batch.edge_q], batch.local[batch.edge_k]
    assert (dense.edge_type[b, i, j] == batch.edge_type).all()
    assert (dense.edge_type != NO_EDGE).sum() == len(batch.edge_type)
    assert (dense.node[dense.mask] == sub.nodes).all()
    assert (dense.hop[~dense.mask] == batch.far).all()
