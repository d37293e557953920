"""Content-similarity distillation: a direct per-row KL with its masks, its zero, and the
targets against a loop over the structural edges."""

from __future__ import annotations

import math

import numpy as np
import torch

from hir_sdk.knowledge.content_encoder import DIM
from hir_sdk.knowledge.knowledge_base import CONTENT, NONE, POOLED, KnowledgeBase
from hir_sdk.training.content_similarity import ContentTargets, content_similarity_loss


def _unit(rows: int, dim: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(rows, dim, generator=g), dim=1)


def test_loss_is_the_mean_kl_over_same_type_anchors_with_content():
    z, t = _unit(6, 5, 0), _unit(6, 7, 1)
    usable = torch.tensor([True, True, True, False, True, True])
    node_type = torch.tensor([0, 0, 0, 0, 1, 2])  # row 5 has no partner, row 3 no content
    loss = content_similarity_loss(
        z, t, usable, node_type, target_temperature=0.05, temperature=0.1
    )
    terms = []
    for i in range(6):
        same = [j for j in range(6) if node_type[j] == node_type[i]]
        partners = [j for j in same if j != i and usable[i] and usable[j]]
        assert partners == [[1, 2], [0, 2], [0, 1], [], [], []][i]  # the masks, by hand
        if not partners:
            continue
        tq = [float(t[i] @ t[j]) / 0.05 for j in partners]
        sp = [float(z[i] @ z[j]) / 0.1 for j in partners]
        lq = [x - math.log(sum(math.exp(y) for y in tq)) for x in tq]
        lp = [x - math.log(sum(math.exp(y) for y in sp)) for x in sp]
        terms.append(sum(math.exp(a) * (a - b) for a, b in zip(lq, lp, strict=True)))
    assert math.isclose(float(loss), sum(terms) / len(terms), rel_tol=1e-5)
    assert float(loss) > 0


def test_loss_is_zero_when_the_embedding_has_the_content_neighbourhoods():
    t = _unit(8, 4, 2)
    types, usable = torch.zeros(8, dtype=torch.long), torch.ones(8, dtype=torch.bool)
    same = content_similarity_loss(t, t, usable, types, target_temperature=0.1, temperature=0.1)
    assert abs(float(same)) < 1e-6
    moved = content_similarity_loss(
        t.roll(1, dims=0), t, usable, types, target_temperature=0.1, temperature=0.1
    )
    assert float(moved) > 0.01


def test_no_pairs_gives_zero_and_gradient_flows_otherwise():
    z = _unit(4, 3, 3).requires_grad_(True)
    t = _unit(4, 3, 4)
    none = content_similarity_loss(
        z,
        t,
        torch.tensor([True, False, True, False]),
        torch.tensor([0, 0, 1, 1]),
        target_temperature=0.05,
        temperature=0.1,
    )
    assert float(none) == 0.0
    loss = content_similarity_loss(
        z,
        t,
        torch.ones(4, dtype=torch.bool),
        torch.zeros(4, dtype=torch.long),
        target_temperature=0.05,
        temperature=0.1,
    )
    loss.backward()
    assert z.grad is not None and float(z.grad.abs().sum()) > 0


def test_targets_are_own_plus_structural_neighbour_content_before_the_cutoff(tiny_graph):
    g = tiny_graph
    rng = np.random.default_rng(0)
    n = g.num_nodes
    kinds = g.node_type_of(np.arange(n))
    with_text = np.isin(kinds, [g.type_code(t) for t in ("ad", "product", "advertiser")])
    pooled = kinds == g.type_code("campaign")
    source = np.where(with_text, CONTENT, np.where(pooled, POOLED, NONE)).astype(np.int8)
    row_of = np.full(n, -1, dtype=np.int64)
    has = np.flatnonzero(source > 0)
    row_of[has] = rng.permutation(len(has))
    vectors = rng.normal(size=(len(has), DIM)).astype(np.float32)
    knowledge = KnowledgeBase(vectors, row_of, source)
    cutoff = int(np.median(g.ts))
    targets = ContentTargets.build(g, knowledge, cutoff)

    structural = np.isin(g.etype, g.role_codes("structural")) & (g.ts < cutoff)
    neighbours: dict[int, set[int]] = {}
    for a, b in zip(g.src[structural].tolist(), g.dst[structural].tolist(), strict=True):
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    checked = with_neighbours = 0
    for v in rng.choice(np.flatnonzero(with_text), 200, replace=False).tolist():
        own = unit(vectors[row_of[v]].astype(np.float64))
        known = [w for w in neighbours.get(v, ()) if row_of[w] >= 0]
        around = [unit(vectors[row_of[w]].astype(np.float64)) for w in known]
        want = unit(own + unit(np.sum(around, axis=0))) if around else own
        got, usable = targets.gather(np.array([v]))
        assert bool(usable[0])
        np.testing.assert_allclose(got[0].numpy(), want, atol=1e-5)
        checked += 1
        with_neighbours += bool(around)
    assert checked == 200 and with_neighbours > 100
    users = np.flatnonzero(kinds == g.type_code("user"))[:5]
    campaigns = np.flatnonzero(pooled)[:5]
    rows, usable = targets.gather(np.concatenate([users, campaigns]))
    assert not usable.any() and float(rows.abs().sum()) == 0.0  # no content of their own
