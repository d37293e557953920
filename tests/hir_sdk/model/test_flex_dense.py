"""FLEX and DENSE compute the same function: forward on CPU (random and real batches),
forward and backward on a GPU when one is present."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from hir_sdk.model import EncoderConfig, EncoderInputs, Impl, attention, choose_impl
from hir_sdk.model.inputs import random_inputs as make_random_inputs
from tests.hir_sdk.model.conftest import randomized

pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")


def random_inputs(
    sizes: list[int], config: EncoderConfig, seed: int = 0, length: int = 128
) -> EncoderInputs:
    """Random packed subgraphs, padded to `length` so padding tokens are exercised too."""
    return make_random_inputs(sizes, config, seed=seed, length=length)


CONFIG = EncoderConfig(
    num_node_types=3,
    num_edge_types=4,
    stats_dim=5,
    content_dim=6,
    dim=32,
    heads=4,
    layers=2,
    out_dim=8,
)


@pytest.mark.parametrize("sizes", [[5, 1, 9], [17, 3, 3, 30, 1], [64]])
def test_forward_agrees_on_random_batches(sizes):
    model = randomized(CONFIG, seed=len(sizes))
    x = random_inputs(sizes, CONFIG, seed=sum(sizes))
    with torch.no_grad():
        dense, flex = model(x, Impl.DENSE, every_token=True), model(x, Impl.FLEX, every_token=True)
    n = sum(sizes)
    torch.testing.assert_close(flex.tokens[:n], dense.tokens[:n], atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(flex.embedding, dense.embedding, atol=2e-5, rtol=1e-4)
    assert dense.impl is Impl.DENSE and flex.impl is Impl.FLEX


def test_forward_agrees_on_a_real_batch(real_batch, real_inputs):
    _, batch, config = real_batch
    model = randomized(config, seed=1)
    with torch.no_grad():
        dense = model(real_inputs, Impl.DENSE, every_token=True)
        flex = model(real_inputs, Impl.FLEX, every_token=True)
    n = batch.teacher.num_tokens
    torch.testing.assert_close(flex.tokens[:n], dense.tokens[:n], atol=2e-5, rtol=1e-4)
    for a, b in zip(flex.logits, dense.logits, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_bias_changes_the_output():
    """The biases matter: zeroing them changes the result (so the parity above is not
    two paths ignoring them)."""
    model = randomized(CONFIG, seed=3)
    x = random_inputs([7, 9], CONFIG, seed=5)
    with torch.no_grad():
        before = model(x, Impl.DENSE).embedding
        for p in model.bias.parameters():
            p.zero_()
        after = model(x, Impl.DENSE).embedding
    assert (before - after).abs().max() > 1e-3


def test_auto_choice_and_no_silent_fallback(caplog, monkeypatch):
    monkeypatch.setattr(attention, "_logged", set())  # each choice is logged once a process
    cpu = torch.device("cpu")
    with caplog.at_level("INFO", logger="hir_sdk.model"):
        assert choose_impl(Impl.AUTO, cpu, grad=True) is Impl.DENSE
        assert choose_impl(Impl.AUTO, cpu, grad=False) is Impl.FLEX
        assert choose_impl(Impl.AUTO, torch.device("cuda"), grad=True) is Impl.FLEX
    assert "auto -> dense" in caplog.text
    with pytest.raises(RuntimeError, match="no CPU backward"):
        choose_impl(Impl.FLEX, cpu, grad=True)
    assert choose_impl(Impl.DENSE, torch.device("cuda"), grad=True) is Impl.DENSE


def test_training_on_cpu_runs_dense_and_learns():
    model = randomized(CONFIG, seed=4).train()
    x = random_inputs([6, 8, 4], CONFIG, seed=9)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    target = torch.nn.functional.normalize(torch.ones(3, CONFIG.out_dim), dim=-1)
    losses = []
    for _ in range(20):
        out = model(x)
        loss = (1 - (out.embedding * target).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert out.impl is Impl.DENSE
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_forward_and_backward_parity():
    device = torch.device("cuda")
    config = dataclasses.replace(CONFIG, dim=64)  # compiled FLEX needs 16 dims per head
    x = random_inputs([40, 7, 81], config, seed=11, length=256).to(device)
    grads = {}
    outs = {}
    for impl in (Impl.DENSE, Impl.FLEX):
        model = randomized(config, seed=12).to(device).train()
        out = model(x, impl, compile_flex=impl is Impl.FLEX)
        out.embedding.square().sum().backward()
        outs[impl] = out.embedding.detach()
        grads[impl] = {
            n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None
        }
    torch.testing.assert_close(outs[Impl.FLEX], outs[Impl.DENSE], atol=1e-4, rtol=1e-3)
    assert grads[Impl.FLEX].keys() == grads[Impl.DENSE].keys()
    for name, g in grads[Impl.DENSE].items():
        torch.testing.assert_close(grads[Impl.FLEX][name], g, atol=1e-3, rtol=1e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_flex_is_compiled_by_default_and_agrees_as_shapes_change():
    """On CUDA the encoder compiles FLEX by itself; batch after batch the packed length,
    the pair blocks and the edges change shape, and every batch still matches DENSE,
    forward and backward, without a compile per batch."""
    from torch._dynamo.utils import counters

    device = torch.device("cuda")
    config = dataclasses.replace(CONFIG, dim=64)
    model = randomized(config, seed=3).to(device).train()
    before = counters["stats"]["unique_graphs"]
    batches = [([40, 7, 81], 256), ([12, 90], 128), ([5, 5, 5, 60, 33], 256), ([100, 3], 128)]
    batches += [([9, 21, 14], 128), ([70, 70, 20], 256)]
    for i, (sizes, length) in enumerate(batches):
        x = random_inputs(sizes, config, seed=20 + i, length=length).to(device)
        outs, grads = {}, {}
        for impl in (Impl.DENSE, Impl.FLEX):
            model.zero_grad()
            out = model(x, impl)  # compile_flex left to the default
            out.embedding.square().sum().backward()
            outs[impl] = out.embedding.detach()
            grads[impl] = {
                n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
            }
        torch.testing.assert_close(outs[Impl.FLEX], outs[Impl.DENSE], atol=1e-4, rtol=1e-3)
        for name, g in grads[Impl.DENSE].items():
            torch.testing.assert_close(grads[Impl.FLEX][name], g, atol=1e-3, rtol=1e-2)
    compiled = counters["stats"]["unique_graphs"] - before
    assert 1 <= compiled < len(batches)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_flex_refuses_narrow_heads_on_gpu():
    """Compiled FlexAttention has no CUDA kernel below 16 dimensions per head: one clear
    error instead of an inductor lowering failure."""
    device = torch.device("cuda")
    x = random_inputs([5, 9], CONFIG, seed=2).to(device)
    model = randomized(CONFIG, seed=2).to(device)  # 32 dims over 4 heads: 8 per head
    with pytest.raises(ValueError, match="at least 16 dimensions per head"):
        model(x, Impl.FLEX, compile_flex=True)


@pytest.mark.parametrize(
    ("sizes", "length"),
    [
        ([5, 1, 9], 128),
        ([17, 3, 3, 30, 1, 200, 90], 384),
        ([128, 128], 256),
        ([300], 384),
        ([100] * 10, 1024),
    ],
)
def test_block_mask_equals_the_reference_mask(sizes, length):
    """The analytic block mask (no L x L tensor) equals FlexAttention's own, built by
    evaluating the mask on every token pair."""
    from torch.nn.attention.flex_attention import create_block_mask

    from hir_sdk.model.attention import flex_block_mask
    from hir_sdk.model.attention_bias import StructuralBias, mask_mod

    x = random_inputs(sizes, CONFIG, length=length)
    ctx = StructuralBias(CONFIG).context(x)
    ours = flex_block_mask(ctx, length, torch.device("cpu"))
    reference = create_block_mask(mask_mod(ctx), None, None, length, length, device="cpu")
    assert torch.equal(ours.to_dense(), reference.to_dense())
    assert torch.equal(ours.full_kv_num_blocks, reference.full_kv_num_blocks)
