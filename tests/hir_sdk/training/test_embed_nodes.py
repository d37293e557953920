"""embed_nodes leaves torch's thread count as it found it, even when two calls overlap."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import torch

from hir_sdk.sampling import SamplerConfig
from hir_sdk.sampling.loader import BatchBuilder, anchors_from_events
from hir_sdk.sampling.node_features import NodeFeaturizer
from hir_sdk.training.embed_nodes import embed_nodes
from tests.thread_settings import thread_settings


class _Encoder(torch.nn.Module):
    """Stands in for the encoder: zero embeddings and logits, after `before_output()`."""

    def __init__(self, before_output=lambda: None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.before_output = before_output

    def forward(self, x, impl):
        self.before_output()
        views = len(x.offsets) - 1
        return SimpleNamespace(embedding=torch.zeros(views, 4), logits=[torch.zeros(views, 3)])


@pytest.fixture(scope="module")
def embed_inputs(tiny_graph):
    config = SamplerConfig()
    anchors, cutoffs = anchors_from_events(tiny_graph, "train")
    builder = BatchBuilder(tiny_graph, config, featurizer=NodeFeaturizer(tiny_graph))
    return builder, config.student, anchors[:6], cutoffs[:6]


@pytest.fixture
def two_torch_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # one to give up while the sampler runs
    yield
    torch.set_num_threads(threads)


def test_embedding_leaves_the_thread_settings_as_they_were(embed_inputs, two_torch_threads):
    builder, view, nodes, cutoffs = embed_inputs
    seen = []
    model = _Encoder(lambda: seen.append(torch.get_num_threads()))
    before = thread_settings()
    z, logits = embed_nodes(model, builder, view, nodes, cutoffs, batch_size=4)
    assert z.shape == (6, 4) and logits[0].shape == (6, 3)
    assert seen == [1, 1]  # the model gave the sampler thread a core
    assert thread_settings() == before


def test_overlapping_calls_leave_the_thread_count_as_it_was(embed_inputs, two_torch_threads):
    """Call B starts while call A is inside its model: A ends first, then B."""
    builder, view, nodes, cutoffs = embed_inputs
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    met = []  # each wait ended because the other call got there (the timeout: a hang guard)
    before = thread_settings()

    def a_model():
        a_in.set()
        met.append(b_in.wait(timeout=120))

    def b_model():
        b_in.set()
        met.append(a_out.wait(timeout=120))

    def a():
        try:
            embed_nodes(_Encoder(a_model), builder, view, nodes, cutoffs)
        finally:
            a_out.set()

    def b():
        met.append(a_in.wait(timeout=120))
        embed_nodes(_Encoder(b_model), builder, view, nodes, cutoffs)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert met == [True, True, True]
    assert thread_settings() == before
