"""The exported graphs, run eagerly in torch, compute what the trained models compute."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, ResidualQuantizer
from hir_sdk.export.encoder_graph import PackedEncoder, encoder_feeds, encoder_input_names
from hir_sdk.export.quantizer_graph import QuantizerGraph
from hir_sdk.export.ranker_graph import RankerGraph, ranker_feeds, ranker_input_names
from hir_sdk.model import HierarchicalEncoder, Impl
from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.inputs import random_inputs
from hir_sdk.ranking.calibration import PlattScaling
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs, OnlineRanker, OnlineRankerConfig
from hir_sdk.ranking.sequence.random_inputs import random_candidates, random_events
from hir_sdk.ranking.sequence.tokenizer import AGE_THRESHOLDS, _log_bucket, event_age_buckets


def _encoder(content_dim: int, stats_dim: int) -> HierarchicalEncoder:
    torch.manual_seed(0)
    config = EncoderConfig(
        num_node_types=6,
        num_edge_types=5,
        stats_dim=stats_dim,
        content_dim=content_dim,
        dim=32,
        heads=4,
        out_dim=16,
        center_types=True,
    )
    encoder = HierarchicalEncoder(config).eval()
    with torch.no_grad():  # the bias tables start at zero: give them values to check
        for p in encoder.bias.parameters():
            p.normal_()
        encoder.project.centers.normal_()
    return encoder


@pytest.mark.parametrize(("content_dim", "stats_dim"), [(12, 7), (0, 0)])
@pytest.mark.parametrize("sizes", [[5, 3, 9, 1], [2], [17, 4]])
def test_the_export_graph_equals_the_packed_encoder(content_dim, stats_dim, sizes):
    encoder = _encoder(content_dim, stats_dim)
    x = random_inputs(sizes, encoder.config, seed=len(sizes), length=sum(sizes) + 3)
    names = encoder_input_names(encoder)
    feeds = encoder_feeds(x, names)
    assert list(feeds) == names
    assert ("content" in names) == bool(content_dim) and ("stats" in names) == bool(stats_dim)
    assert feeds["valid"].shape == (len(sizes), max(sizes))
    assert len(feeds["node_type"]) == sum(sizes)  # the packed sequence's padding is dropped
    with torch.no_grad():
        ref = encoder(x, Impl.DENSE)
        out = PackedEncoder(encoder)(*(torch.from_numpy(feeds[n]) for n in names))
    np.testing.assert_allclose(out[0].numpy(), ref.embedding.numpy(), atol=1e-5)
    for level, logits in enumerate(ref.logits):
        np.testing.assert_allclose(out[2 + level].numpy(), logits.numpy(), atol=1e-4)
        np.testing.assert_array_equal(out[1][:, level].numpy(), logits.argmax(dim=1).numpy())


def test_edge_index_follows_the_packed_edge_rule():
    """Each pair gets the edge `StructuralBias.context` gives it (own direction first)."""
    encoder = _encoder(12, 7)
    x = random_inputs([6, 4], encoder.config, seed=3)
    ctx = encoder.bias.context(x)
    feeds = encoder_feeds(x, encoder_input_names(encoder))
    sizes = np.diff(x.offsets.numpy())
    for b, size in enumerate(sizes):
        block = ctx.edge_code[x.spd_offsets[b] : x.spd_offsets[b + 1]].numpy()
        np.testing.assert_array_equal(feeds["edge_index"][b, :size, :size].ravel(), block)
        assert (feeds["edge_index"][b, size:, :] == len(x.edge_q)).all()
    assert feeds["neighbours"].shape == (sum(sizes), encoder.config.content_dim)
    token, slot = feeds["token"], feeds["slot"]
    assert (token.reshape(-1)[slot] == np.arange(len(slot))).all()  # slot inverts token


def test_a_batch_without_edges_exports_and_matches():
    """Subgraphs with no edge between their nodes (a log whose edges all weigh 0: the
    views never sample them) still give the encoder's output through the export graph."""
    encoder = _encoder(12, 7)
    x = random_inputs([3, 5], encoder.config, seed=4)
    none = {f: getattr(x, f)[:0] for f in ("edge_q", "edge_k", "edge_type", "edge_weight")}
    x = dataclasses.replace(x, edge_age=x.edge_age[:0], **none)
    names = encoder_input_names(encoder)
    feeds = encoder_feeds(x, names)
    assert (feeds["edge_index"] == 0).all()  # every cell: "no edge" (index E = 0)
    with torch.no_grad():
        ref = encoder(x, Impl.DENSE)
        out = PackedEncoder(encoder)(*(torch.from_numpy(feeds[n]) for n in names))
    np.testing.assert_allclose(out[0].numpy(), ref.embedding.numpy(), atol=1e-5)


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(30, dim))
    x = centers[rng.integers(0, 30, n)] + 0.3 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize(
    "quantizer",
    [
        AdditiveQuantizer(4, 32),
        AdditiveQuantizer(3, 16, beam_size=1, icm_passes=2),
        ResidualQuantizer(4, 32),
        ResidualQuantizer(4, 32, beam_size=3),
        ProductQuantizer(4, 32),
    ],
    ids=repr,
)
def test_quantizer_graph_gives_the_numpy_tokens(quantizer):
    x = _clustered(1_500, 24, seed=1)
    quantizer.fit(x[:1_000], seed=0)
    with torch.no_grad():
        tokens = QuantizerGraph(quantizer)(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(tokens, quantizer.tokens(quantizer.encode(x)))


def test_quantizer_graph_needs_a_fitted_quantizer():
    with pytest.raises(ValueError, match="fitted"):
        QuantizerGraph(AdditiveQuantizer(2, 4))


def test_age_buckets_by_thresholds_equal_the_log_definition():
    ages = torch.cat(
        [
            torch.arange(-5, 100_000),
            AGE_THRESHOLDS,
            AGE_THRESHOLDS - 1,
            torch.randint(0, 2**40, (50_000,), generator=torch.Generator().manual_seed(0)),
        ]
    )
    np.testing.assert_array_equal(event_age_buckets(ages).numpy(), _log_bucket(ages).numpy())
    assert event_age_buckets(torch.tensor([59, 60, 61])).tolist() == [1, 2, 2]  # 1 min: bucket 2


@pytest.mark.parametrize("hir_dim", [16, 0])
def test_ranker_graph_equals_the_online_ranker(hir_dim):
    torch.manual_seed(0)
    sizes = dict(num_actions=5, user_dim=8, hir_dim=hir_dim, dense_dim=7, bom_vocab=4 * 32)
    ranker = OnlineRanker(OnlineRankerConfig(dim=16, heads=2), **sizes, routes=6).eval()
    g = torch.Generator().manual_seed(1)
    recent = random_events(40, 16, hir_dim=hir_dim, num_actions=5, generator=g, fill=0.5)
    cand = random_candidates(
        40, hir_dim=hir_dim, dense_dim=7, codebooks=4, codewords=32, routes=6, generator=g
    )
    bom = torch.where(torch.rand(40, 4, generator=g) < 0.3, -1, cand.bom)  # ragged bags
    found = cand.hir_found if hir_dim else torch.zeros(40, dtype=torch.bool)  # as served
    cand = CandidateInputs(**{**vars(cand), "bom": bom, "hir_found": found})
    user = torch.randn(40, 8, generator=g)
    if not hir_dim:
        recent = (*recent[:4], None, None)
    calibration = PlattScaling(0.7, -0.4)
    names = ranker_input_names(ranker)
    assert ("event_hir" in names) == bool(hir_dim)
    feeds = ranker_feeds(names, user, recent, cand)
    with torch.no_grad():
        ref = ranker(user, recent, cand)
        logits, p = RankerGraph(ranker, calibration)(*(torch.from_numpy(feeds[n]) for n in names))
    np.testing.assert_allclose(logits.numpy(), ref.numpy(), atol=1e-5)
    expected = calibration(ref[:, 1].double().numpy())
    np.testing.assert_allclose(p.numpy(), expected, atol=1e-6)
