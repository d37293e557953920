"""Collaborative targets: rows for exactly the nodes reached before the cutoff, the
neighbourhoods of the exact SVD, audiences told apart, and the trainer's term."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from hir_sdk.graph.event_index import pair_keys, split_pair_keys
from hir_sdk.training.collaborative_targets import collaborative_targets

ROLES = ("exposure", "click")


def _reached(graph, as_of: int, roles=ROLES) -> tuple[np.ndarray, np.ndarray]:
    k = graph.edges_before(as_of)
    keep = np.isin(graph.etype[:k], graph.role_codes(*roles))
    pairs = np.unique(pair_keys(graph.dst[:k][keep], graph.src[:k][keep], graph.num_nodes))
    return split_pair_keys(pairs, graph.num_nodes)


class _Edges:
    """The graph fields `collaborative_targets` reads, over hand-made (src, dst) edges all
    before any cutoff and all of a counted role."""

    def __init__(self, graph, src: np.ndarray, dst: np.ndarray) -> None:
        self.num_nodes = graph.num_nodes
        self.src, self.dst = np.asarray(src), np.asarray(dst)
        self.etype = np.zeros(len(self.src), dtype=np.int64)

    def edges_before(self, as_of: int) -> int:
        return len(self.src)

    def role_codes(self, *roles: str) -> np.ndarray:
        return np.array([0])


def _users_and_ads(graph, users: int, ads: int) -> tuple[np.ndarray, np.ndarray]:
    kinds = graph.node_type_of(np.arange(graph.num_nodes))
    return (
        np.flatnonzero(kinds == graph.manifest.node_types.index("user"))[:users],
        np.flatnonzero(kinds == graph.manifest.node_types.index("ad"))[:ads],
    )


def test_rows_are_the_nodes_reached_before_the_cutoff(tiny_graph):
    g = tiny_graph
    as_of = g.manifest.time.validation_start
    t, _ = collaborative_targets(g, as_of=as_of, roles=ROLES, dim=4, seed=0)
    dst, _ = _reached(g, as_of)
    items = np.unique(dst)
    np.testing.assert_array_equal(np.flatnonzero(t.row_of >= 0), items)
    assert t.vectors.shape == (len(items), 4) and t.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t.vectors, axis=1), 1.0, rtol=1e-5)
    # a later cutoff reads the edges in between; the same cutoff and seed, the same rows
    later, _ = collaborative_targets(
        g, as_of=g.manifest.time.test_start, roles=ROLES, dim=4, seed=0
    )
    assert (later.row_of >= 0).sum() > len(items)
    again, _ = collaborative_targets(g, as_of=as_of, roles=ROLES, dim=4, seed=0)
    np.testing.assert_array_equal(again.vectors, t.vectors)
    # other roles, other pairs
    clicks, _ = collaborative_targets(g, as_of=as_of, roles=("click",), dim=4, seed=0)
    np.testing.assert_array_equal(
        np.flatnonzero(clicks.row_of >= 0), np.unique(_reached(g, as_of, ("click",))[0])
    )


def test_the_neighbourhoods_are_the_exact_svds(tiny_graph):
    """Three audiences of different sizes, each reaching its own items, plus scattered
    edges: the rank-3 rows have the cosines of the exact SVD's (a clear spectral gap)."""
    users, ads = _users_and_ads(tiny_graph, 60, 30)
    rng = np.random.default_rng(0)
    src, dst = [], []
    for group, (lo, hi, size) in enumerate(((0, 30, 12), (30, 50, 10), (50, 60, 8))):
        for u in users[lo:hi]:
            mine = ads[sum((12, 10, 8)[:group]) :][:size]
            picked = mine[rng.random(size) < 0.7]
            src += [u] * len(picked)
            dst += list(picked)
    noise = rng.integers(0, 60, 40), rng.integers(0, 30, 40)
    src += list(users[noise[0]])
    dst += list(ads[noise[1]])
    edges = _Edges(tiny_graph, src, dst)
    t, _ = collaborative_targets(edges, as_of=0, roles=ROLES, dim=3, seed=0)
    items, sources = np.unique(dst), np.unique(src)
    a = np.zeros((len(items), len(sources)))
    a[np.searchsorted(items, dst), np.searchsorted(sources, src)] = 1.0
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    assert s[2] > 1.5 * s[3]  # the gap that makes the rank-3 subspace well defined
    exact = u[:, :3] * s[:3]
    exact /= np.linalg.norm(exact, axis=1, keepdims=True)
    got = t.vectors[t.row_of[items]]
    np.testing.assert_allclose(got @ got.T, exact @ exact.T, atol=1e-4)


def test_items_with_one_audience_sit_together_and_apart_from_another(tiny_graph):
    """Two audiences reaching two disjoint sets of items: items of one set are parallel,
    across sets orthogonal."""
    users, ads = _users_and_ads(tiny_graph, 20, 10)
    src = np.concatenate([np.repeat(users[:10], 5), np.repeat(users[10:], 5)])
    dst = np.concatenate([np.tile(ads[:5], 10), np.tile(ads[5:], 10)])
    t, _ = collaborative_targets(_Edges(tiny_graph, src, dst), as_of=0, roles=ROLES, dim=2, seed=0)
    z = t.vectors[t.row_of[ads]]
    cos = z @ z.T
    same = np.kron(np.eye(2), np.ones((5, 5))).astype(bool)
    assert cos[same].min() > 0.99 and np.abs(cos[~same]).max() < 1e-3


def test_too_few_reached_nodes_give_no_targets(tiny_graph):
    g = tiny_graph
    t, _ = collaborative_targets(g, as_of=g.manifest.time.start, roles=ROLES, dim=4, seed=0)
    assert t is None


@pytest.mark.parametrize("weight", [0.0, 3.0])
def test_the_trainer_adds_the_term_with_its_weight(tiny_world, tmp_path, weight):
    """The term is logged as `collaborative` and weighted into the step's loss; its
    gradient reaches the encoder; at weight 0 no targets are built. No content needed."""
    from hir_sdk.sampling.loader import make_loader
    from hir_sdk.training import Trainer
    from tests.hir_sdk.training.test_trainer import CONFIG

    config = dataclasses.replace(
        CONFIG,
        use_content=False,
        objectives="as_configured",  # "auto" takes the engagement settings' weight here
        collaborative=dataclasses.replace(CONFIG.collaborative, weight=weight),
    )
    trainer = Trainer(tiny_world, tmp_path / "run", config)
    assert (trainer.similarity.collaborative is not None) == (weight > 0)
    batch = next(iter(make_loader(trainer.builder, trainer.schedule, epoch=0, start_batch=0)))
    pairs = trainer._engagement(trainer.student, trainer.engage_train, config.seed, 0)
    term = float(pairs.collaborative.detach())
    with_term, metrics = trainer._losses(batch, config.seed, 0, trainer.engage_train)
    assert metrics["collaborative"] == pytest.approx(term)
    if weight == 0:
        assert term == 0.0
        return
    assert term > 0
    trainer.student.zero_grad()
    pairs.collaborative.backward()
    moved = sum(
        float(p.grad.abs().sum()) for p in trainer.student.parameters() if p.grad is not None
    )
    assert moved > 0
    assert torch.isfinite(with_term)


def test_the_engagement_settings_turn_the_term_on():
    from hir_sdk.training import TrainConfig
    from hir_sdk.training.content_agreement import COLLABORATIVE_WEIGHT, engagement_settings

    assert TrainConfig().collaborative.weight == 0.0
    assert engagement_settings(TrainConfig()).collaborative.weight == COLLABORATIVE_WEIGHT > 0


def test_bad_settings_are_config_errors():
    from hir_sdk.training.config import CollaborativeConfig, ConfigError

    with pytest.raises(ConfigError, match="weight >= 0"):
        CollaborativeConfig(weight=-1.0)
    with pytest.raises(ConfigError, match="not funnel roles"):
        CollaborativeConfig(roles=("purchase",))
    with pytest.raises(ConfigError, match="pairs must be one of"):
        CollaborativeConfig(pairs="liked")


def test_auto_takes_the_converted_pairs_when_they_reach_enough_items(tiny_graph, monkeypatch):
    """`pairs`: "converted" factorises the exposures that converted, "reached" the roles'
    edges, and "auto" the converted ones from `MIN_COVERAGE` of the reached items on."""
    from hir_sdk.graph.converted_pairs import converted_pairs
    from hir_sdk.training import collaborative_targets as module

    g = tiny_graph
    as_of = g.manifest.time.test_start
    item, _ = converted_pairs(g, as_of=as_of)
    coverage = len(np.unique(item)) / len(np.unique(_reached(g, as_of)[0]))
    assert 0 < coverage < 1
    converted, choice = collaborative_targets(
        g, as_of=as_of, roles=ROLES, dim=4, seed=0, pairs="converted"
    )
    np.testing.assert_array_equal(np.flatnonzero(converted.row_of >= 0), np.unique(item))
    assert choice == module.PairChoice("converted", pytest.approx(coverage))
    reached, choice = collaborative_targets(g, as_of=as_of, roles=ROLES, dim=4, seed=0)
    assert choice.pairs == "reached" and np.isnan(choice.coverage)
    for threshold, expected in ((coverage, converted), (coverage + 1e-9, reached)):
        monkeypatch.setattr(module, "MIN_COVERAGE", threshold)
        auto, choice = collaborative_targets(
            g, as_of=as_of, roles=ROLES, dim=4, seed=0, pairs="auto"
        )
        assert choice.pairs == ("converted" if expected is converted else "reached")
        assert choice.coverage == pytest.approx(coverage)
        np.testing.assert_array_equal(auto.row_of, expected.row_of)
        np.testing.assert_array_equal(auto.vectors, expected.vectors)


def test_the_trainer_records_which_pairs_it_factorised(tiny_world, tmp_path):
    """`auto` is written resolved into the run's config.toml (a refresh warm-started from
    it keeps the choice), the share into meta.json, and `hir fit` says both."""
    import json

    from hir_sdk.cli.fit import pairs_note
    from hir_sdk.training import Trainer
    from hir_sdk.training.collaborative_targets import MIN_COVERAGE, target_pairs
    from hir_sdk.training.config import load_config
    from tests.hir_sdk.training.test_trainer import CONFIG

    config = dataclasses.replace(
        CONFIG,
        use_content=False,
        steps=1,
        collaborative=dataclasses.replace(CONFIG.collaborative, weight=1.0, pairs="auto"),
    )
    trainer = Trainer(tiny_world, tmp_path / "run", config)
    trainer.fit(progress=False)
    choice = trainer.similarity.collaborative_pairs
    *_, expected = target_pairs(
        trainer.graph,
        as_of=trainer.graph.manifest.time.validation_start,
        roles=ROLES,
        pairs="auto",
    )
    assert choice == expected and 0 < choice.coverage < 1
    assert choice.pairs == ("converted" if choice.coverage >= MIN_COVERAGE else "reached")
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["collaborative_pairs"] == {"pairs": choice.pairs, "coverage": choice.coverage}
    assert load_config(tmp_path / "run" / "config.toml").collaborative.pairs == choice.pairs
    which = "who converted through" if choice.pairs == "converted" else "who reached"
    assert pairs_note(trainer) == (
        f"collaborative targets: {which} what (the converted pairs reach "
        f'{choice.coverage:.0%} of the reached items; "auto" takes them from 50%)'
    )


def test_auto_keeps_the_reached_pairs_when_too_few_converted_ones_factorise(
    tiny_graph, monkeypatch
):
    """Below two items or two users the converted pairs have no SVD: at any coverage
    `auto` takes the reached pairs, and the trainer's term is not lost."""
    from hir_sdk.graph.converted_pairs import converted_pairs
    from hir_sdk.training import collaborative_targets as module

    g = tiny_graph
    conversion = np.isin(g.etype, g.role_codes("conversion"))
    for when in np.unique(g.ts[conversion]):
        item, user = converted_pairs(g, as_of=int(when) + 1)
        if len(item):
            break
    assert len(np.unique(item)) < 2 or len(np.unique(user)) < 2
    monkeypatch.setattr(module, "MIN_COVERAGE", 0.0)
    targets, choice = collaborative_targets(
        g, as_of=int(when) + 1, roles=ROLES, dim=4, seed=0, pairs="auto"
    )
    assert choice.pairs == "reached" and choice.coverage > 0
    assert targets is not None


def test_a_warm_start_keeps_the_pairs_its_init_run_resolved(tmp_path):
    """A refresh chain keeps one kind of target: `auto` takes the init run's resolved
    pairs; pairs named in the settings, or an init run that left them `auto`, stay."""
    from hir_sdk.training import TrainConfig
    from hir_sdk.training.encoder_setup import keep_init_choices

    def config(pairs: str) -> TrainConfig:
        c = TrainConfig()
        return dataclasses.replace(
            c, collaborative=dataclasses.replace(c.collaborative, pairs=pairs)
        )

    run = tmp_path / "run"
    run.mkdir()
    assert keep_init_choices(config("auto"), run).collaborative.pairs == "auto"
    (run / "config.toml").write_text(config("converted").to_toml(), encoding="utf-8")
    assert keep_init_choices(config("auto"), run).collaborative.pairs == "converted"
    assert keep_init_choices(config("reached"), run).collaborative.pairs == "reached"
    (run / "config.toml").write_text(config("auto").to_toml(), encoding="utf-8")
    assert keep_init_choices(config("auto"), run).collaborative.pairs == "auto"
