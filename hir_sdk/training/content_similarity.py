"""Content-similarity distillation: the embeddings keep the neighbourhoods that the
entities' world-knowledge content gives them.

Self-distillation and engagement prediction alone let the embedding drift away from what
the content says. In the `small` world an ad's ten nearest ads share its fine-grained
interest (leaf) 67% of the time by its own text vector, 84% by its text plus its
structural neighbours' (the promoted product, the campaign and advertiser, whose rows are
pooled from their ads and products), and 57% by an embedding trained without this term.
Mixing in the content of what the same users reached (`co_engagement`: each ad's audience
also reaches other interests, but only the ad's own is common to all of it) raises the
targets' share to 97%. The term asks each node's similarity distribution over the other
nodes of its type in the batch to follow the one these content targets give:

    s_v   = normalize(normalize(c_v) + normalize(sum of c_w over structural neighbours w))
    t_v   = normalize(s_v + lambda * normalize(co-engaged content of s))     lambda >= 0
    q_ij  = softmax_j(t_i . t_j / tau_t)          j != i, same node type, both with content
    p_ij  = softmax_j(z_i . z_j / tau_s)
    L     = mean_i KL(q_i || p_i)

`t` is fixed before training, from the knowledge rows and the structural and engagement
edges of the training window only (`ContentTargets.build`); nodes without content of
their own (users) take no part. The mixed targets need a sharp `tau_t`: in 300-step runs
an encoder trained on them at 0.05 kept fewer same-leaf neighbours (72%) than one trained
on the plain targets (81%); at 0.005, 89% (width 64). At width 128, 0.005 gave 92.8%;
0.002 with the term's weight doubled (6, the defaults) 95.5% (`benchmarks/content_term.py`).
It is a relational target: the embedding is free to place the clusters anywhere and to
add what the engagement graph says, as long as content neighbours stay near.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F  # noqa: N812

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.knowledge.knowledge_base import (
    CONTENT,
    KnowledgeBase,
    structural_neighbour_sums,
)
from hir_sdk.training.co_engagement import ROLES as CO_ENGAGEMENT_ROLES
from hir_sdk.training.co_engagement import co_engaged_content


@dataclass(frozen=True, eq=False)
class ContentTargets:
    """Unit content targets of the nodes that have content of their own: `row_of` (N,)
    maps a global node index to its row of `vectors` (R, D), -1 for none."""

    row_of: np.ndarray
    vectors: np.ndarray

    @classmethod
    def build(
        cls,
        graph: TemporalGraph,
        knowledge: KnowledgeBase,
        as_of: int,
        *,
        co_engagement: float = 0.0,
        co_engagement_roles: tuple[str, ...] = CO_ENGAGEMENT_ROLES,
    ) -> ContentTargets:
        """Targets from the knowledge rows and the structural edges with `ts < as_of`;
        with `co_engagement > 0`, mixed with the co-engaged content (`co_engagement`
        module) of the edges of `co_engagement_roles` before `as_of`."""
        has_own = knowledge.source == CONTENT
        own = np.flatnonzero(has_own)
        row_of = np.full(graph.num_nodes, -1, dtype=np.int64)
        row_of[own] = np.arange(len(own))
        rows = _unit(knowledge.vectors)
        vectors = rows[knowledge.row_of[own]]
        firsts, around = structural_neighbour_sums(
            graph, has_own, knowledge.row_of, rows, as_of=as_of
        )
        vectors[row_of[firsts]] += _unit(around).astype(np.float32)
        vectors = _unit(vectors)
        if co_engagement > 0:
            co = co_engaged_content(graph, row_of, vectors, as_of=as_of, roles=co_engagement_roles)
            vectors = _unit(vectors + co_engagement * _unit(co).astype(np.float32))
        return cls(row_of, vectors)

    def gather(self, nodes: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """`(targets (n, D), usable (n,))` of global node indices; zero rows where unusable."""
        rows = self.row_of[np.asarray(nodes, dtype=np.int64)]
        usable = rows >= 0
        out = np.zeros((len(rows), self.vectors.shape[1]), dtype=np.float32)
        out[usable] = self.vectors[rows[usable]]
        return torch.from_numpy(out), torch.from_numpy(usable)


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def content_similarity_loss(
    z: torch.Tensor,
    targets: torch.Tensor,
    usable: torch.Tensor,
    node_type: torch.Tensor,
    *,
    target_temperature: float,
    temperature: float,
) -> torch.Tensor:
    """Mean KL from the content similarity distribution to the embedding's, per usable
    anchor with at least one usable same-type partner; zero when there is none."""
    pair = usable[:, None] & usable[None, :] & (node_type[:, None] == node_type[None, :])
    pair.fill_diagonal_(False)
    rows = pair.any(dim=1)
    if not bool(rows.any()):
        return z.new_zeros(())
    pair = pair[rows]
    zn = F.normalize(z.float(), dim=-1)
    t_logits = (targets[rows] @ targets.T / target_temperature).masked_fill(~pair, float("-inf"))
    s_logits = (zn[rows] @ zn.T / temperature).masked_fill(~pair, float("-inf"))
    q = torch.softmax(t_logits, dim=1)
    log_p = torch.log_softmax(s_logits, dim=1)
    log_q = torch.log_softmax(t_logits, dim=1)
    kl = torch.where(pair, q * (log_q - log_p), torch.zeros_like(q))
    return kl.sum(dim=1).mean()
