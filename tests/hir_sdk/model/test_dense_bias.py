"""The DENSE path's bias without gradients (`_inference_bias`: one summed table, the
edges added apart) equals the differentiable one bit for bit, wherever a query is a real
token; padded keys are -inf in both."""

from __future__ import annotations

import pytest
import torch

from hir_sdk.model.attention_bias import dense_bias, padded_tokens
from tests.hir_sdk.model.conftest import randomized
from tests.hir_sdk.model.test_flex_dense import CONFIG, random_inputs


def _both(model, inputs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        ctx = model.bias.context(inputs)
        fast = dense_bias(ctx)
    with torch.enable_grad():
        slow = dense_bias(model.bias.context(inputs))
    _, valid = padded_tokens(ctx)
    return fast, slow.detach(), valid


def _assert_same(fast, slow, valid) -> None:
    assert fast.shape == slow.shape
    rows_fast, rows_slow = fast.permute(0, 2, 1, 3)[valid], slow.permute(0, 2, 1, 3)[valid]
    assert torch.equal(rows_fast, rows_slow)  # bit for bit, -inf included
    assert torch.isneginf(rows_fast).any() or bool(valid.all())
    assert torch.isfinite(rows_fast).sum() > 0


def test_inference_bias_equals_the_differentiable_one_on_a_real_batch(real_batch, real_inputs):
    _, _, config = real_batch
    fast, slow, valid = _both(randomized(config, seed=3), real_inputs)
    assert len(real_inputs.edge_q) > 0  # edges add their own bias rows
    _assert_same(fast, slow, valid)


@pytest.mark.parametrize("sizes", [[5, 1, 9], [17, 3, 3, 30, 1]])
def test_inference_bias_equals_the_differentiable_one_on_random_batches(sizes):
    inputs = random_inputs(sizes, CONFIG, seed=len(sizes))
    fast, slow, valid = _both(randomized(CONFIG, seed=4), inputs)
    _assert_same(fast, slow, valid)
