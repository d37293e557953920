"""The cluster queue: FIFO order, per-type balanced targets, checkpoint round trip."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F  # noqa: N812

from hir_sdk.training.cluster_queue import EMPTY, ClusterQueue


def _sims(prototypes: torch.Tensor):
    return lambda z: [F.normalize(z, dim=1) @ prototypes.T]


def test_push_keeps_the_newest_rows_in_order() -> None:
    queue = ClusterQueue(5, 2)
    assert (queue.types == EMPTY).all()
    queue.push(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 2]))
    assert queue.types.tolist() == [EMPTY, EMPTY, 0, 1, 2]
    queue.push(torch.arange(6.0, 14.0).reshape(4, 2), torch.tensor([3, 4, 5, 6]))
    assert queue.types.tolist() == [2, 3, 4, 5, 6]
    assert queue.z[0].tolist() == [4.0, 5.0] and queue.z[-1].tolist() == [12.0, 13.0]
    queue.push(torch.arange(20.0).reshape(10, 2), torch.arange(10))  # more than it holds
    assert queue.types.tolist() == [5, 6, 7, 8, 9]


def test_targets_are_balanced_within_each_type() -> None:
    # two node types that sit in different halves of the space: a plain Sinkhorn over the
    # batch could give each type its own clusters; per-type balancing spreads both
    torch.manual_seed(0)
    prototypes = F.normalize(torch.randn(4, 8), dim=1)
    shift = torch.zeros(8)
    shift[0] = 3.0
    users = torch.randn(64, 8) + shift
    ads = torch.randn(64, 8) - shift
    z = torch.cat([users, ads])
    types = torch.cat([torch.zeros(64, dtype=torch.long), torch.ones(64, dtype=torch.long)])
    queue = ClusterQueue(0, 8)
    (q,) = queue.targets(_sims(prototypes), z, types, epsilon=0.05, iterations=50)
    assert torch.allclose(q.sum(dim=1), torch.ones(128), atol=1e-5)
    for t in (0, 1):
        share = q[types == t].sum(dim=0) / 64
        assert torch.allclose(share, torch.full((4,), 0.25), atol=0.02), share


def test_queue_rows_take_part_in_the_balance() -> None:
    # a batch that all prefers cluster 0: alone, balancing must split it evenly; with a
    # queue full of rows preferring cluster 1, the batch may keep cluster 0
    prototypes = torch.eye(2)
    batch = torch.tensor([[1.0, 0.0]]).repeat(8, 1)
    types = torch.zeros(8, dtype=torch.long)
    alone = ClusterQueue(0, 2).targets(_sims(prototypes), batch, types, epsilon=0.1, iterations=50)
    queue = ClusterQueue(8, 2)
    queue.push(torch.tensor([[0.0, 1.0]]).repeat(8, 1), types)
    helped = queue.targets(_sims(prototypes), batch, types, epsilon=0.1, iterations=50)
    assert alone[0][:, 0].mean() == pytest.approx(0.5, abs=0.01)
    assert helped[0][:, 0].mean() > 0.9


def test_state_round_trip_and_shape_check() -> None:
    queue = ClusterQueue(4, 3)
    queue.push(torch.randn(3, 3), torch.tensor([1, 2, 1]))
    other = ClusterQueue(4, 3)
    other.load_state_dict(queue.state_dict())
    assert torch.equal(other.z, queue.z) and torch.equal(other.types, queue.types)
    with pytest.raises(ValueError, match="does not fit"):
        ClusterQueue(5, 3).load_state_dict(queue.state_dict())
