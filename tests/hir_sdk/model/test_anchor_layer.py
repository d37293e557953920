"""The last layer runs on the anchors alone: the same embeddings, cluster logits and
gradients as running it on every token (up to float rounding), on both attention paths,
with the last MLP seeing B rows instead of L."""

from __future__ import annotations

import pytest
import torch

from hir_sdk.model import Impl
from tests.hir_sdk.model.conftest import randomized
from tests.hir_sdk.model.test_flex_dense import CONFIG, random_inputs

pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")

CLOSE = {"atol": 2e-5, "rtol": 1e-4}


@pytest.mark.parametrize("impl", [Impl.DENSE, Impl.FLEX])
@pytest.mark.parametrize("sizes", [[5, 1, 9], [17, 3, 3, 30, 1], [64]])
def test_anchor_only_last_layer_gives_the_same_outputs(impl, sizes):
    model = randomized(CONFIG, seed=len(sizes))
    x = random_inputs(sizes, CONFIG, seed=sum(sizes))
    with torch.no_grad():
        fast, full = model(x, impl), model(x, impl, every_token=True)
    assert fast.tokens is None and full.tokens.shape == (x.length, CONFIG.dim)
    torch.testing.assert_close(fast.anchors, full.tokens[x.offsets[:-1]], **CLOSE)
    torch.testing.assert_close(fast.embedding, full.embedding, **CLOSE)
    for a, b in zip(fast.logits, full.logits, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_the_last_mlp_runs_on_the_anchors_alone():
    model = randomized(CONFIG, seed=3)
    x = random_inputs([6, 2, 11], CONFIG, seed=5)
    rows = []
    for block in model.blocks:
        block.mlp.register_forward_hook(lambda _m, args, _out: rows.append(len(args[0])))
    with torch.no_grad():
        model(x)
    assert rows == [x.length, 3]  # every token in the first layer, the 3 anchors in the last


def test_training_gradients_agree_with_the_every_token_layer():
    model = randomized(CONFIG, seed=7).train()
    x = random_inputs([9, 4, 1, 12], CONFIG, seed=2)
    target = torch.nn.functional.normalize(torch.arange(1.0, 1 + CONFIG.out_dim), dim=0)

    def gradients(every_token: bool) -> dict[str, torch.Tensor]:
        model.zero_grad()
        out = model(x, every_token=every_token, track_centers=False)
        assert out.impl is Impl.DENSE
        loss = (1 - out.embedding @ target).mean() + sum(
            lg.logsumexp(1).mean() for lg in out.logits
        )
        loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    fast, full = gradients(False), gradients(True)
    assert fast.keys() == full.keys() and len(fast) > 20
    for name in fast:
        torch.testing.assert_close(fast[name], full[name], atol=1e-5, rtol=1e-4, msg=name)
