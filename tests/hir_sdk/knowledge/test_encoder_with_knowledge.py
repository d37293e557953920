"""World knowledge flows into the encoder: content vectors in the batch, through both
attention paths."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hir_sdk.model import EncoderConfig, HierarchicalEncoder, Impl, inputs_from_packed
from hir_sdk.sampling.loader import BatchBuilder, anchors_from_events
from hir_sdk.sampling.node_features import NodeFeaturizer


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_content_vectors_reach_the_encoder(tiny, tiny_kb):
    _, graph = tiny
    featurizer = NodeFeaturizer(graph, tiny_kb)
    anchors, cutoffs = anchors_from_events(graph, "train")
    batch = BatchBuilder(graph, featurizer=featurizer).build(anchors[:8], cutoffs[:8]).teacher
    f = batch.features
    tokens = batch.num_tokens
    kinds = [graph.node_types[t] for t in graph.node_type_of(batch.node[:tokens])]
    has = f.has_content[:tokens]
    # own text: ads, products, advertisers; users have none, and campaigns (pooled from every
    # edge, so not as of any cutoff) are left out
    assert all(has[i] == (kinds[i] in ("ad", "product", "advertiser")) for i in range(tokens))
    norms = np.linalg.norm(f.content[:tokens][has][:, :384], axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)
    config = EncoderConfig(
        len(graph.node_types),
        len(graph.edge_types),
        featurizer.stats_dim,
        featurizer.content_dim,
        dim=32,
        out_dim=16,
    )
    assert featurizer.content_dim == tiny_kb.dim == 384
    torch.manual_seed(0)
    model = HierarchicalEncoder(config).eval()
    x = inputs_from_packed(batch)
    with torch.no_grad():
        dense, flex = model(x, Impl.DENSE), model(x, Impl.FLEX)
        torch.testing.assert_close(flex.embedding, dense.embedding, atol=2e-5, rtol=1e-4)
        blank = model(type(x)(**{**x.__dict__, "content": torch.zeros_like(x.content)}), Impl.DENSE)
    assert (blank.embedding - dense.embedding).abs().max() > 1e-4  # content matters
