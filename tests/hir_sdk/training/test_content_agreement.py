"""Content agreement: high when the text names the interest users engage by, about 0.5
when the same texts are dealt out at random."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hir_sdk.knowledge.knowledge_base import CONTENT, KnowledgeBase
from hir_sdk.synth import TRUTH_DIR
from hir_sdk.training.content_agreement import CONTENT_AGREES, content_agreement


def _interest_content(tiny_world, graph, *, shuffle: bool, level: str = "mid") -> KnowledgeBase:
    """Each ad's content: a one-hot of its planted interest (`level`) plus a little noise
    (dealt out to random ads with `shuffle`); no other node has content."""
    truth = pl.read_parquet(tiny_world / TRUTH_DIR / "entities.parquet").filter(
        pl.col("node_type") == "ad"
    )
    ads = graph.type_offsets[graph.type_code("ad")] + truth["node_id"].to_numpy()
    leaf = truth[level].to_numpy()
    rng = np.random.default_rng(0)
    if shuffle:
        leaf = rng.permutation(leaf)
    vectors = np.eye(leaf.max() + 1, dtype=np.float32)[leaf]
    vectors += 0.05 * rng.standard_normal(vectors.shape).astype(np.float32)
    row_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    row_of[ads] = np.arange(len(ads))
    source = np.zeros(graph.num_nodes, dtype=np.int8)
    source[ads] = CONTENT
    return KnowledgeBase(vectors, row_of, source, parts=(("text", vectors.shape[1]),))


def test_agreement_separates_telling_text_from_shuffled(tiny_world, tiny_graph):
    telling = content_agreement(
        tiny_graph, _interest_content(tiny_world, tiny_graph, shuffle=False)
    )
    shuffled = content_agreement(
        tiny_graph, _interest_content(tiny_world, tiny_graph, shuffle=True)
    )
    assert telling.pairs == shuffled.pairs > 100
    assert telling.auc > CONTENT_AGREES and telling.agrees
    assert abs(shuffled.auc - 0.5) < 0.1 and not shuffled.agrees


def test_agreement_is_seeded_and_reads_only_its_window(tiny_world, tiny_graph):
    kb = _interest_content(tiny_world, tiny_graph, shuffle=False)
    a, b = content_agreement(tiny_graph, kb, seed=1), content_agreement(tiny_graph, kb, seed=1)
    assert a == b
    assert content_agreement(tiny_graph, kb, pairs=50).pairs == 50
    # a window with no engagement edge of the roles: no pair, the neutral value
    none = content_agreement(tiny_graph, kb, roles=("engagement",))
    assert none.pairs == 0 and none.auc == pytest.approx(0.5) and not none.agrees


def test_agreement_reads_no_text_of_nodes_created_after_its_window(tiny_world, tiny_graph):
    # the random items the profiles are compared with exist before the window's end: the
    # text of an ad created later (it exists only then) does not move the statistic
    kb = _interest_content(tiny_world, tiny_graph, shuffle=False)
    end = tiny_graph.manifest.time.validation_start
    late = kb.row_of[(tiny_graph.created_ts >= end) & (kb.row_of >= 0)]
    assert len(late) > 0
    vectors = kb.vectors.copy()
    vectors[late] = np.random.default_rng(1).standard_normal((len(late), vectors.shape[1]))
    changed = KnowledgeBase(vectors, kb.row_of, kb.source, parts=kb.parts)
    assert content_agreement(tiny_graph, changed) == content_agreement(tiny_graph, kb)
