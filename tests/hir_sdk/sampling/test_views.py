"""Views: no future leakage, student within teacher, batch-independent, weight-faithful."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.errors import InputError
from hir_sdk.sampling import SamplerConfig, ViewConfig, ViewSampler
from hir_sdk.sampling import views as view_module
from tests.hir_sdk.sampling.conftest import valid_anchors

CONFIGS = {
    "importance": SamplerConfig(),
    "rwr": SamplerConfig(
        teacher=ViewConfig(strategy="rwr", max_nodes=64),
        student=ViewConfig(strategy="rwr", walks=8, walk_length=3, max_nodes=16),
    ),
    "uniform": SamplerConfig(
        teacher=ViewConfig(strategy="uniform", fanout=(10, 5), max_nodes=64),
        student=ViewConfig(strategy="uniform", fanout=(6,), max_nodes=16),
    ),
    "mixed": SamplerConfig(
        teacher=ViewConfig(fanout=(12, 6, 3), max_nodes=80),
        student=ViewConfig(strategy="rwr", walks=6, max_nodes=12),
    ),
}


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(sorted(CONFIGS)))
def test_views_never_see_the_future_and_student_is_within_teacher(tiny_graph, seed, kind):
    graph = tiny_graph
    anchors, cutoffs = valid_anchors(graph, 24, seed)
    views = ViewSampler(graph, CONFIGS[kind]).views(anchors, cutoffs)
    for sub in (views.teacher, views.student):
        slot = np.repeat(np.arange(sub.batch_size), np.diff(sub.edge_offsets))
        assert (graph.ts[sub.edge_id] < cutoffs[slot]).all()
        assert (sub.edge_ts == graph.ts[sub.edge_id]).all()
        node_slot = np.repeat(np.arange(sub.batch_size), sub.sizes())
        assert (graph.created_ts[sub.nodes] < cutoffs[node_slot]).all()
        assert (sub.nodes[sub.offsets[:-1]] == anchors).all()  # anchor first
        for b in range(sub.batch_size):
            nodes = sub.nodes_of(b)
            assert len(set(nodes.tolist())) == len(nodes)
            src, dst, eid = sub.edges_of(b)
            assert (nodes[src] == graph.src[eid]).all() and (nodes[dst] == graph.dst[eid]).all()
    for b in range(len(anchors)):
        assert set(views.student.nodes_of(b).tolist()) <= set(views.teacher.nodes_of(b).tolist())
    assert views.teacher.sizes().max() <= CONFIGS[kind].teacher.max_nodes


def test_a_view_does_not_depend_on_its_batch(tiny_graph):
    anchors, cutoffs = valid_anchors(tiny_graph, 16, seed=3)
    sampler = ViewSampler(tiny_graph)
    together = sampler.sample(anchors, cutoffs, sampler.config.teacher)
    for b in (0, 7, 15):
        alone = sampler.sample(anchors[b : b + 1], cutoffs[b : b + 1], sampler.config.teacher)
        assert alone.nodes.tolist() == together.nodes_of(b).tolist()
        assert sorted(alone.edge_id.tolist()) == sorted(together.edges_of(b)[2].tolist())


def test_seed_changes_the_sample(tiny_graph):
    anchors, cutoffs = valid_anchors(tiny_graph, 32, seed=4)
    a = ViewSampler(tiny_graph, SamplerConfig(seed=1)).views(anchors, cutoffs).teacher
    b = ViewSampler(tiny_graph, SamplerConfig(seed=2)).views(anchors, cutoffs).teacher
    assert a.nodes.tolist() != b.nodes.tolist()


def test_edge_type_filter(tiny_graph):
    anchors, cutoffs = valid_anchors(tiny_graph, 32, seed=5)
    view = ViewConfig(edge_types=("click", "purchase"))
    sub = ViewSampler(tiny_graph).sample(anchors, cutoffs, view)
    allowed = set(tiny_graph.edge_type_codes(["click", "purchase"]).tolist())
    assert set(sub.edge_type.tolist()) <= allowed and len(sub.edge_id) > 0


def test_importance_sampling_follows_decayed_weights(tiny_graph):
    """Fan-out 1, one hop: the kept edge is drawn with probability proportional to its
    time-decayed weight (checked over many seeds against the exact distribution)."""
    graph = tiny_graph
    user = int(graph.index("user", [0])[0])
    cutoff = int(graph.manifest.time.end)
    view = ViewConfig(fanout=(1,), direction="out", max_candidates=10**6, max_nodes=2)
    visible = graph.at(cutoff).neighbors(user)
    weights = graph.decay_weights(visible.edge, cutoff)
    probs = weights / weights.sum()
    counts = dict.fromkeys(visible.edge.tolist(), 0)
    trials = 3000
    for seed in range(trials):
        sub = ViewSampler(graph, SamplerConfig(seed=seed)).sample(
            np.array([user]), np.array([cutoff]), view
        )
        counts[int(sub.edge_id[0])] += 1
    observed = np.array([counts[e] for e in visible.edge.tolist()]) / trials
    assert np.abs(observed - probs).max() < 4 * np.sqrt(probs.max() / trials) + 0.01
    assert np.corrcoef(observed, probs)[0, 1] > 0.8


def test_anchor_created_after_its_cutoff_is_refused(tiny_graph):
    late = np.flatnonzero(tiny_graph.created_ts > tiny_graph.manifest.time.start)[0]
    with pytest.raises(InputError, match="not before its cutoff"):
        ViewSampler(tiny_graph).views(np.array([late]), np.array([tiny_graph.manifest.time.start]))


def test_config_validation():
    with pytest.raises(ValueError, match="strategy"):
        ViewConfig(strategy="bfs")
    with pytest.raises(ValueError, match="larger than the teacher"):
        SamplerConfig(teacher=ViewConfig(max_nodes=8), student=ViewConfig(max_nodes=9))


def _pools_made(monkeypatch) -> list[int]:
    """The thread counts of the pools `ViewSampler.sample` makes from now on."""
    pools: list[int] = []
    real = view_module.ThreadPoolExecutor
    monkeypatch.setattr(view_module, "ThreadPoolExecutor", lambda n: pools.append(n) or real(n))
    return pools


@pytest.mark.parametrize("strategy", ["importance", "rwr", "uniform"])
def test_threads_split_a_batch_without_changing_it(tiny_graph, strategy, monkeypatch):
    pools = _pools_made(monkeypatch)
    anchors, cutoffs = valid_anchors(tiny_graph, 300, seed=11)
    # a uniform view is split only when it filters edge types (it then lists candidates)
    rels = sorted({spec.rel for spec in tiny_graph.manifest.edge_types})
    types = tuple(rels[1:]) if strategy == "uniform" else None
    view = ViewConfig(strategy=strategy, fanout=(6, 3), max_nodes=32, edge_types=types)
    one = ViewSampler(tiny_graph, threads=1).sample(anchors, cutoffs, view)
    assert pools == []
    two = ViewSampler(tiny_graph, threads=2).sample(anchors, cutoffs, view)
    assert pools == [2]  # split into two parts
    for name in one.__dataclass_fields__:
        assert np.array_equal(getattr(one, name), getattr(two, name)), name


def test_an_unfiltered_uniform_view_is_not_split(tiny_graph, monkeypatch):
    pools = _pools_made(monkeypatch)
    anchors, cutoffs = valid_anchors(tiny_graph, 300, seed=11)
    ViewSampler(tiny_graph, threads=2).sample(anchors, cutoffs, ViewConfig(strategy="uniform"))
    assert pools == []
