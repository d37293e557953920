"""Sinkhorn-Knopp balances skewed inputs; diagnostics read collapse correctly."""

from __future__ import annotations

import math

import pytest
import torch

from hir_sdk.training.diagnostics import cluster_usage
from hir_sdk.training.sinkhorn import sinkhorn_knopp


def test_balances_a_skewed_batch():
    torch.manual_seed(0)
    scores = torch.randn(512, 16) * 0.1
    scores[:, 0] += 1.0  # everyone prefers cluster 0
    naive = torch.softmax(scores / 0.05, dim=1)
    q = sinkhorn_knopp(scores, epsilon=0.05, iterations=10)
    assert naive.sum(dim=0)[0] > 0.9 * 512  # collapsed without balancing
    torch.testing.assert_close(q.sum(dim=1), torch.ones(512), atol=1e-5, rtol=0)
    torch.testing.assert_close(q.sum(dim=0), torch.full((16,), 512 / 16), atol=0.5, rtol=0)
    assert cluster_usage(q)["usage_entropy"] > 0.99
    assert cluster_usage(naive)["usage_entropy"] < 0.2


def test_keeps_preferences_among_balanced_choices():
    scores = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [0.2, 0.8]])
    q = sinkhorn_knopp(scores, epsilon=0.1, iterations=20)
    assert q.argmax(dim=1).tolist() == [0, 1, 0, 1]


def test_diagnostics_literals():
    one_hot = torch.eye(4)[[0, 0, 1, 1]]
    usage = cluster_usage(one_hot)
    assert usage["empty_share"] == 0.5
    assert usage["usage_entropy"] == pytest.approx(math.log(2) / math.log(4))


def test_input_checks():
    with pytest.raises(ValueError, match=r"\(B, K\)"):
        sinkhorn_knopp(torch.zeros(3))
