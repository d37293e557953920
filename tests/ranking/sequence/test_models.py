"""Stage-1 and stage-2 modules: candidate independence, padding invariance, MoE routing,
and the candidate KeyedJaggedTensor layout."""

from __future__ import annotations

import torch

from hir_sdk.ranking.sequence import OnlineRanker, OnlineRankerConfig, UserModel, UserModelConfig
from hir_sdk.ranking.sequence.moe import MoEHeads
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs, candidate_kjt
from hir_sdk.ranking.sequence.tokenizer import event_age_buckets, hash_ids


def _events(B, L, hir_dim, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(B, L, generator=g) < 0.7
    mask[0] = False  # a user with no history
    item = torch.where(mask, torch.randint(0, 500, (B, L), generator=g), -1)
    action = torch.where(mask, torch.randint(0, 3, (B, L), generator=g), -1)
    age = torch.where(mask, torch.randint(1, 10**6, (B, L), generator=g), 0)
    hir = torch.randn(B, L, hir_dim, generator=g) * mask[..., None]
    return item, action, age, mask, hir, mask.clone()


def _pad(x, value):
    """Three more padding columns on the left (windows are right-aligned)."""
    return torch.cat([torch.full_like(x[:, :3], value), x], dim=1)


def test_user_model_ignores_padding_and_handles_empty_histories():
    torch.manual_seed(0)
    model = UserModel(UserModelConfig(dim=16, heads=2, layers=2, out_dim=8), 3, 4).eval()
    item, action, age, mask, hir, found = _events(5, 6, 4)
    with torch.no_grad():
        u = model(item, action, age, mask, hir, found)
        hir_pad = torch.cat([torch.zeros(5, 3, 4), hir], dim=1)
        u_pad = model(
            _pad(item, -1),
            _pad(action, -1),
            _pad(age, 0),
            _pad(mask, False),
            hir_pad,
            _pad(found, False),
        )
    assert u.shape == (5, 8) and torch.isfinite(u).all()
    torch.testing.assert_close(u, u_pad, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(u[1], u[2])  # different histories, different users


def _candidates(B, hir_dim, route):
    g = torch.Generator().manual_seed(1)
    return CandidateInputs(
        ad=torch.randint(0, 100, (B,), generator=g),
        owner=torch.tensor([3, -1, 4, 5][:B]),
        bom=torch.tensor([[1, 9, 17, 25], [-1, -1, -1, -1], [2, 10, 18, 26], [0, 8, 16, 24]][:B]),
        hir=torch.randn(B, hir_dim, generator=g),
        hir_found=torch.tensor([True, False, True, True][:B]),
        route=route,
        dense=torch.randn(B, 5, generator=g),
    )


def _ranker():
    torch.manual_seed(0)
    return OnlineRanker(
        OnlineRankerConfig(dim=16, heads=2, recent=4, hidden=16, experts=3, top_k=2),
        num_actions=3,
        user_dim=8,
        hir_dim=4,
        dense_dim=5,
        bom_vocab=32,
        routes=4,
    ).eval()


def test_online_ranker_scores_each_candidate_against_the_same_user_state():
    ranker = _ranker()
    recent = _events(4, 4, 4, seed=2)
    user = torch.randn(4, 8)
    cand = _candidates(4, 4, torch.tensor([0, 1, -1, 3]))
    with torch.no_grad():
        logits = ranker(user, recent, cand)
        # the same request with candidates reordered: each row's score moves with it
        perm = torch.tensor([2, 0, 3, 1])
        shuffled = CandidateInputs(*(getattr(cand, f)[perm] for f in cand.__dataclass_fields__))
        again = ranker(user[perm], tuple(x[perm] for x in recent), shuffled)
    assert logits.shape == (4, 2) and torch.isfinite(logits).all()
    torch.testing.assert_close(again, logits[perm], atol=1e-5, rtol=1e-5)
    # target-aware: the same user and history, another candidate, another score
    other = CandidateInputs(**{**cand.__dict__, "ad": cand.ad + 1})
    with torch.no_grad():
        assert not torch.allclose(ranker(user, recent, other), logits)


def test_moe_gates_route_by_super_interest():
    torch.manual_seed(0)
    heads = MoEHeads(in_dim=6, hidden=5, experts=4, routes=3, tasks=2, top_k=2)
    gate = heads.gate(torch.tensor([-1, 0, 1, 2, 2]))
    torch.testing.assert_close(gate.sum(dim=1), torch.ones(5))
    assert ((gate > 0).sum(dim=1) == 2).all()  # top-2 of 4 experts
    torch.testing.assert_close(gate[3], gate[4])  # one route, one gate
    torch.testing.assert_close(gate[0], heads.gate(torch.tensor([-5]))[0])  # unknown: row 0
    h = torch.randn(5, 6)
    y = heads(h, torch.tensor([-1, 0, 1, 2, 2]))
    # the mixture equals the gate-weighted sum of each expert's own output
    a = torch.relu(torch.einsum("bi,eih->beh", h, heads.hidden) + heads.hidden_bias)
    per_expert = torch.einsum("beh,eht->bet", a, heads.head) + heads.head_bias
    torch.testing.assert_close(y, (gate[..., None] * per_expert).sum(dim=1))


def test_candidate_kjt_layout():
    kjt = candidate_kjt(
        torch.tensor([7, 8]), torch.tensor([-1, 4]), torch.tensor([[1, 5], [-1, -1]]), 1000
    )
    assert kjt.keys() == ["ad_id", "owner_id", "bom"]
    assert kjt.lengths().tolist() == [1, 1, 0, 1, 2, 0]
    assert kjt.values().tolist() == [
        int(hash_ids(torch.tensor(7), 1000)),
        int(hash_ids(torch.tensor(8), 1000)),
        int(hash_ids(torch.tensor(4), 1000)),
        1,
        5,
    ]


def test_age_buckets_are_log_scale():
    minute = 60
    b = event_age_buckets(torch.tensor([0, minute, 3 * minute, 7 * minute, 10**12]))
    assert b.tolist() == [0, 2, 4, 6, 47]
