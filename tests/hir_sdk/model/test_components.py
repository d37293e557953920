"""Deep hash embedding, node features as of the cutoff, prototype hierarchy."""

from __future__ import annotations

import numpy as np
import torch

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.model import EncoderConfig, HierarchicalEncoder, PrototypeConfig
from hir_sdk.model.heads import ProjectionHead, PrototypeHeads
from hir_sdk.model.inputs import random_inputs
from hir_sdk.model.node_encoder import DeepHashEmbedding, neighbour_content
from hir_sdk.sampling.node_features import NodeFeaturizer, stable_node_hashes


def _param_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_parameter_count_does_not_grow_with_the_vocabulary(tiny_graph, tmp_path):
    """Same config for a graph of 2k nodes and one of 40k: same number of parameters."""
    from hir_sdk.synth import SCALES, generate_world, write_world

    small = build_graph_from_dir(write_world(generate_world(SCALES["small"], 0), tmp_path / "s"))
    counts = []
    for graph in (tiny_graph, small):
        f = NodeFeaturizer(graph)
        config = EncoderConfig(
            len(graph.node_types), len(graph.edge_types), f.stats_dim, f.content_dim
        )
        counts.append(_param_count(HierarchicalEncoder(config)))
    assert small.num_nodes > 10 * tiny_graph.num_nodes
    assert counts[0] == counts[1]


def test_deep_hash_handles_unseen_ids(tiny_graph):
    featurizer = NodeFeaturizer(tiny_graph, min_degree=0)
    cutoff = np.int64(tiny_graph.manifest.time.end)
    nodes = np.arange(50)
    codes = featurizer.features(nodes, np.full(50, cutoff)).dhe
    assert codes.shape == (50, 32) and (np.abs(codes) <= 1).all()
    assert len({tuple(c) for c in codes.round(6).tolist()}) == 50  # distinct ids, codes
    dhe = DeepHashEmbedding(32, 16, 8)
    unseen = torch.rand(3, 32) * 2 - 1  # any id hashes to some code: it still embeds
    out = dhe(torch.cat([torch.from_numpy(codes[:2]), unseen, torch.zeros(1, 32)]))
    assert out.shape == (6, 8)
    assert (out[:5].abs().sum(dim=1) > 0).all() and (out[5] == 0).all()  # rare -> zero


def test_stable_hashes_do_not_depend_on_the_graph_build(tiny_graph, tiny_world):
    again = build_graph_from_dir(tiny_world)
    assert np.array_equal(stable_node_hashes(tiny_graph), stable_node_hashes(again))
    assert len(np.unique(stable_node_hashes(tiny_graph))) == tiny_graph.num_nodes


def test_node_statistics_are_as_of_the_cutoff(tiny_graph):
    graph = tiny_graph
    featurizer = NodeFeaturizer(graph)
    rng = np.random.default_rng(0)
    nodes = rng.integers(0, graph.num_nodes, 30)
    cutoffs = rng.integers(graph.manifest.time.start, graph.manifest.time.end, 30)
    f = featurizer.features(nodes, cutoffs)
    for row, (node, cutoff) in enumerate(zip(nodes.tolist(), cutoffs.tolist(), strict=True)):
        seen = graph.at(cutoff).neighbors(node, direction="both")
        degree = np.bincount(seen.etype, minlength=len(graph.edge_types))
        np.testing.assert_allclose(f.stats[row, :-1], np.log1p(degree), rtol=1e-6)
        if len(seen):
            days = (cutoff - seen.ts.max()) / 86_400
            np.testing.assert_allclose(f.stats[row, -1], np.log1p(days), rtol=1e-5)
            assert (f.dhe[row] != 0).any() == (len(seen) >= featurizer.min_degree)
        else:
            assert f.stats[row, -1] == -1 and not f.dhe[row].any()


def test_fine_prototypes_are_tied_to_their_parents():
    heads = PrototypeHeads(8, PrototypeConfig(sizes=(4, 16, 64), temperature=0.5))
    with torch.no_grad():
        for r in heads.residuals:
            r.zero_()
    levels = heads.prototypes()
    assert [len(p) for p in levels] == [4, 16, 64]
    for level in (1, 2):
        parent = heads.parents(level)
        torch.testing.assert_close(levels[level], levels[level - 1][parent])
        assert torch.allclose(levels[level].norm(dim=1), torch.ones(len(levels[level])))
    z = torch.nn.functional.normalize(torch.randn(5, 8), dim=-1)
    logits = heads(z)
    assert [tuple(lg.shape) for lg in logits] == [(5, 4), (5, 16), (5, 64)]
    assert logits[0].abs().max().item() <= 1 / 0.5 + 1e-5


def test_neighbour_content_is_the_normalized_mean_over_direct_edges():
    config = EncoderConfig(num_node_types=3, num_edge_types=2, stats_dim=4, content_dim=6)
    x = random_inputs([5, 7, 4], config, seed=3)
    got = neighbour_content(x).numpy()
    content = (x.content * x.has_content[:, None]).numpy().astype(np.float64)
    want = np.zeros_like(content)
    for q, k in zip(x.edge_q.tolist(), x.edge_k.tolist(), strict=True):
        want[q] += content[k]
        want[k] += content[q]
    norm = np.linalg.norm(want, axis=1, keepdims=True)
    want = np.divide(want, norm, out=np.zeros_like(want), where=norm > 1e-12)
    np.testing.assert_allclose(got, want, atol=1e-6)
    lonely = ~np.isin(np.arange(x.length), np.r_[x.edge_q.numpy(), x.edge_k.numpy()])
    assert (got[lonely] == 0).all()


def test_projection_is_centred_per_node_type():
    torch.manual_seed(0)
    head = ProjectionHead(8, 4, num_types=3, center_momentum=0.5)
    h = torch.randn(12, 8)
    types = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0])
    y = head.proj(h).detach()
    untracked = head(h, types)  # no tracking: centres still zero, plain normalization
    torch.testing.assert_close(untracked, torch.nn.functional.normalize(y, dim=-1))
    head(h, types, track=True)  # first batch of a type: its centre is that batch's mean
    torch.testing.assert_close(head.centers[0], y[types == 0].mean(0))
    torch.testing.assert_close(head.centers[1], y[types == 1].mean(0))
    assert head.centers[2].abs().sum() == 0 and head.seen.tolist() == [True, True, False]
    head(h[:4] * 0, types[:4], track=True)  # momentum 0.5 toward the new batch mean
    new = head.proj(h[:4] * 0).detach().mean(0)
    torch.testing.assert_close(head.centers[0], 0.5 * y[types == 0].mean(0) + 0.5 * new)
    torch.testing.assert_close(head.centers[1], y[types == 1].mean(0))  # absent: unchanged
    z = head(h, types)
    torch.testing.assert_close(z, torch.nn.functional.normalize(y - head.centers[types], dim=-1))
