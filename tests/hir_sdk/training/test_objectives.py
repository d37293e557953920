"""The engagement loss: binary terms plus the in-batch softmax, checked against a direct
per-row computation with its masks."""

from __future__ import annotations

import math

import numpy as np
import torch

from hir_sdk.training.objectives import EngagementScorer, engagement_loss


def _scorer() -> EngagementScorer:
    torch.manual_seed(0)
    scorer = EngagementScorer(num_edge_types=2, dim=4)
    with torch.no_grad():
        scorer.relation.uniform_(0.5, 1.5)
        scorer.bias.copy_(torch.tensor([0.3, -0.2]))
    return scorer.requires_grad_(False)  # values only


def _blocks(count: int) -> torch.Tensor:
    torch.manual_seed(1)
    return torch.nn.functional.normalize(torch.randn(4 * count, 4), dim=1)


def test_without_in_batch_it_is_the_binary_loss():
    scorer, z, etype = _scorer(), _blocks(3), torch.tensor([0, 1, 0])
    loss, pos, neg = engagement_loss(scorer, z, etype, 3)
    zu, zv, zr, zh = z.split(3)
    want_pos = [float(scorer(zu[i : i + 1], etype[i : i + 1], zv[i : i + 1])) for i in range(3)]
    torch.testing.assert_close(pos, torch.tensor(want_pos))
    bce = [math.log1p(math.exp(-p)) for p in want_pos]
    bce_neg = [math.log1p(math.exp(float(n))) for n in neg]
    assert math.isclose(float(loss), (sum(bce) / 3 + sum(bce_neg) / 6) / 2, rel_tol=1e-5)


def test_in_batch_softmax_masks_other_types_and_shared_destinations():
    scorer, z, etype = _scorer(), _blocks(4), torch.tensor([0, 1, 0, 0])
    dst = torch.tensor([10, 11, 12, 10])  # rows 0 and 3 share a destination
    dst_type = torch.tensor([1, 2, 1, 1])  # row 1's destination is of another type
    base, _, neg = engagement_loss(scorer, z, etype, 4)
    loss, _, _ = engagement_loss(scorer, z, etype, 4, dst=dst, dst_type=dst_type, in_batch=0.5)
    zu, zv, _, _ = z.split(4)
    negs = neg.view(2, 4)
    terms = []
    for i in range(4):
        candidates = [
            j for j in range(4) if dst_type[j] == dst_type[i] and (j == i or dst[j] != dst[i])
        ]
        assert candidates == [[0, 2], [1], [0, 2, 3], [2, 3]][i]  # the masks, by hand
        scores = {
            j: float(scorer(zu[i : i + 1], etype[i : i + 1], zv[j : j + 1])) for j in candidates
        }
        others = [float(negs[0, i]), float(negs[1, i])]
        log_total = math.log(sum(math.exp(s) for s in [*scores.values(), *others]))
        terms.append(log_total - scores[i])
    assert math.isclose(float(loss), float(base) + 0.5 * sum(terms) / 4, rel_tol=1e-5)


def test_sampler_negatives_exist_at_the_edge_time_and_hard_ones_share_the_owner(tiny_graph):
    from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf, owner_of_nodes
    from hir_sdk.training.objectives import EngagementSampler

    g = tiny_graph
    owners = owner_of_nodes(g)
    roles = ("click", "engagement", "conversion")
    hard = EngagementSampler(g, OwnersAsOf(g), "train", roles).sample(256, seed=3, step=7)
    kind = g.node_type_of
    for neg in (hard.random_neg, hard.hard_neg):
        assert (kind(neg) == kind(hard.dst)).all()
        assert (g.created_ts[neg] < hard.ts).all()
    owned = hard.hard_neg != hard.random_neg
    assert owned.mean() > 0.1  # else no same-type node of that owner existed yet
    assert (owners[hard.hard_neg[owned]] == owners[hard.dst[owned]]).all()
    assert (owners[hard.dst[owned]] != NO_OWNER).all()
    assert (hard.hard_neg[owned] != hard.dst[owned]).all()

    plain = EngagementSampler(g, OwnersAsOf(g), "train", roles, hard_negatives=False)
    soft = plain.sample(256, seed=3, step=7)
    for name in ("src", "dst", "etype", "ts", "random_neg"):  # the same draws before
        np.testing.assert_array_equal(getattr(soft, name), getattr(hard, name))
    assert (kind(soft.hard_neg) == kind(soft.dst)).all()
    assert (g.created_ts[soft.hard_neg] < soft.ts).all()
    same_owner = owners[soft.hard_neg] == owners[soft.dst]
    assert same_owner.mean() < owned.mean() / 2  # a random node, not the owner's


def test_log_q_correction_subtracts_each_candidates_draw_log_probability():
    scorer, z, etype = _scorer(), _blocks(3), torch.tensor([0, 1, 0])
    dst, dst_type = torch.tensor([10, 11, 12]), torch.tensor([1, 1, 1])
    dst_log_q = torch.tensor([-1.0, -4.0, -2.5])
    neg_log_q = torch.tensor([[-3.0, -3.0, -3.0], [-0.5, -3.0, -1.0]])
    base, _, neg = engagement_loss(scorer, z, etype, 3, dst=dst, dst_type=dst_type)
    loss, _, _ = engagement_loss(
        scorer, z, etype, 3, dst=dst, dst_type=dst_type, in_batch=1.0, log_q=(dst_log_q, neg_log_q)
    )
    zu, zv, _, _ = z.split(3)
    negs = neg.view(2, 3)
    terms = []
    for i in range(3):
        logits = [
            float(scorer(zu[i : i + 1], etype[i : i + 1], zv[j : j + 1])) - float(dst_log_q[j])
            for j in range(3)
        ]
        logits += [float(negs[k, i]) - float(neg_log_q[k, i]) for k in range(2)]
        terms.append(math.log(sum(math.exp(s) for s in logits)) - logits[i])
    assert math.isclose(float(loss), float(base) + sum(terms) / 3, rel_tol=1e-5)
    # a popular destination (high draw probability) gains less from the correction
    plain, _, _ = engagement_loss(scorer, z, etype, 3, dst=dst, dst_type=dst_type, in_batch=1.0)
    assert float(loss) != float(plain)


def test_sampler_reports_each_draws_log_probability(tiny_graph):
    from hir_sdk.graph.owners import OwnersAsOf
    from hir_sdk.training.objectives import EngagementSampler

    g = tiny_graph
    roles = ("click", "engagement", "conversion")
    for hard in (False, True):
        sampler = EngagementSampler(g, OwnersAsOf(g), "train", roles, hard_negatives=hard)
        s = sampler.sample(512, seed=5, step=2)
        hits = np.bincount(g.dst[sampler.edges], minlength=g.num_nodes)
        np.testing.assert_allclose(s.dst_log_q, np.log(hits[s.dst] / len(sampler.edges)))
        # a random negative: uniform over the nodes of the destination's type born before t
        kind = g.node_type_of(s.dst)
        alive = [
            ((g.node_type_of(np.arange(g.num_nodes)) == k) & (g.created_ts < t)).sum()
            for k, t in zip(kind, s.ts, strict=True)
        ]
        np.testing.assert_allclose(s.neg_log_q[0], -np.log(np.maximum(alive, 1)))
        assert s.neg_log_q.shape == (2, 512) and (s.neg_log_q <= 0).all()
        if not hard:
            np.testing.assert_allclose(s.neg_log_q[1], s.neg_log_q[0])


def test_exposed_negatives_are_shown_to_the_source_and_not_acted_on(tiny_graph):
    from hir_sdk.graph.owners import OwnersAsOf
    from hir_sdk.training.objectives import EngagementSampler

    g = tiny_graph
    roles = ("click", "engagement", "conversion")
    sampler = EngagementSampler(g, OwnersAsOf(g), "train", roles, exposed_negatives=True)
    s = sampler.sample(512, seed=4, step=1)
    window = np.arange(g.window("train").start, g.window("train").stop)
    shown = window[np.isin(g.etype[window], g.role_codes("exposure"))]
    shown_pairs = set(zip(g.src[shown].tolist(), g.dst[shown].tolist(), strict=True))
    acted = set(zip(g.src[sampler.edges].tolist(), g.dst[sampler.edges].tolist(), strict=True))
    unacted = {}
    for pair in shown_pairs - acted:
        unacted.setdefault(pair[0], set()).add(pair[1])
    drawn = s.hard_neg != s.random_neg
    assert drawn.mean() > 0.2  # most sources were shown something of that type
    kind = g.node_type_of
    for i in np.flatnonzero(drawn):
        u, v = int(s.src[i]), int(s.hard_neg[i])
        assert v in unacted[u] and kind(v) == kind(s.dst[i]) and v != s.dst[i]
        assert g.created_ts[v] < s.ts[i]
        # drawn uniformly among everything the source was shown and left, of any type
        assert math.isclose(s.neg_log_q[1, i], -math.log(len(unacted[u])))
    # the other draws keep the plain sampler's positives and random negatives
    plain = EngagementSampler(g, OwnersAsOf(g), "train", roles).sample(512, seed=4, step=1)
    for name in ("src", "dst", "ts", "random_neg"):
        np.testing.assert_array_equal(getattr(s, name), getattr(plain, name))


def test_the_scorer_starts_at_its_configured_scale():
    """`engagement.scale`: the logit scale the scorer starts from; a score is that scale
    times the relation-weighted inner product, plus the edge type's bias."""
    zu, zv = _blocks(1)[:2].split(1)
    etype = torch.tensor([1])
    base, wide = EngagementScorer(2, 4), EngagementScorer(2, 4, scale=20.0)
    assert float(base.scale) == 5.0 and float(wide.scale) == 20.0
    inner = float((zu * zv).sum())
    assert math.isclose(float(wide(zu, etype, zv)), 20.0 * inner, rel_tol=1e-5)
    assert math.isclose(float(wide(zu, etype, zv)), 4 * float(base(zu, etype, zv)), rel_tol=1e-5)
