"""Training objectives: self-distillation onto balanced clusters, and engagement
prediction.

Self-distillation, per prototype level l (coarse to fine):

    q_l = SinkhornKnopp(teacher cosines to P_l, eps)     balanced targets, no gradient
          (within each node type, over the batch plus a queue: `cluster_queue`)
    p_l = softmax(student cosines to P_l / tau_s)
    L_distill = mean_l  CE(q_l, p_l)

Engagement prediction: for a timed edge (u, type r, v, t), both endpoints embedded as of
t; `logit = s * <z_u * w_r, z_v> + b_r` (DistMult with a learned scale); positives are
real training-window edges, negatives keep u and r and swap v for a random node of v's
type (random) and a second one: another node of the same owner as v (`hard_negatives`:
same advertiser), or a node of v's type that u was exposed to in the window without acting
on it (`exposed_negatives`: the funnel's own negatives, an impression without a
conversion), or else a second random one (which leaves one advertiser's ads free to sit
together, as their shared interest wants). Binary
cross-entropy on each, plus (`in_batch`) a softmax of each positive against the other
pairs' destinations of its type: many negatives per step, as in two-tower training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from hir_sdk.errors import InputError
from hir_sdk.graph.event_index import EventIndex, pair_keys, split_pair_keys
from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf
from hir_sdk.graph.temporal_graph import TemporalGraph


def distillation_loss(
    student_sims: list[torch.Tensor],
    targets: list[torch.Tensor],
    *,
    student_temperature: float,
) -> torch.Tensor:
    """Mean over levels of the cross-entropy from balanced targets `q_l` (B, K_l) to the
    student's cluster distribution."""
    losses = []
    for s, q in zip(student_sims, targets, strict=True):
        log_p = F.log_softmax(s / student_temperature, dim=1)
        losses.append(-(q * log_p).sum(dim=1).mean())
    return torch.stack(losses).mean()


class EngagementScorer(nn.Module):
    """DistMult score of (z_u, edge type, z_v)."""

    def __init__(self, num_edge_types: int, dim: int, scale: float = 5.0) -> None:
        super().__init__()
        self.relation = nn.Parameter(torch.ones(num_edge_types, dim))
        self.bias = nn.Parameter(torch.zeros(num_edge_types))
        self.scale = nn.Parameter(torch.tensor(float(scale)))  # learned from this start

    def forward(self, zu: torch.Tensor, etype: torch.Tensor, zv: torch.Tensor) -> torch.Tensor:
        return self.scale * (zu * self.relation[etype] * zv).sum(dim=-1) + self.bias[etype]

    def pairwise(self, zu: torch.Tensor, etype: torch.Tensor, zv: torch.Tensor) -> torch.Tensor:
        """(P, P) scores of every source `i` (with its edge type) against every `zv[j]`;
        the diagonal is `forward`."""
        return self.scale * (zu * self.relation[etype]) @ zv.T + self.bias[etype][:, None]


@dataclass(frozen=True)
class EngagementSample:
    """Positive edges and their negatives; every endpoint is embedded as of `ts`."""

    src: np.ndarray  # (P,)
    dst: np.ndarray  # (P,)
    etype: np.ndarray  # (P,)
    ts: np.ndarray  # (P,)
    random_neg: np.ndarray  # (P,)
    hard_neg: np.ndarray  # (P,)
    # log of the probability that each candidate was drawn: the destinations (P,) as
    # positives of the window's edges, the two negatives (2, P) from their pools
    dst_log_q: np.ndarray | None = None
    neg_log_q: np.ndarray | None = None


class EngagementSampler:
    """Deterministic positive / negative draws from one window's engagement edges."""

    def __init__(
        self,
        graph: TemporalGraph,
        owners: OwnersAsOf,
        window: str,
        roles: tuple[str, ...],
        *,
        hard_negatives: bool = True,
        exposed_negatives: bool = False,
    ) -> None:
        self.graph = graph
        self.hard_negatives = hard_negatives
        self.exposed_negatives = exposed_negatives
        # each node's owner as of the window's end: hard negatives read no structural edge
        # after the window (training reads nothing after its own)
        end = graph.manifest.time.window(window)[1]
        self.owners = owners.at(np.arange(graph.num_nodes), end)
        codes = graph.role_codes(*roles)
        edges = np.arange(graph.window(window).start, graph.window(window).stop)
        edges = edges[np.isin(graph.etype[edges], codes)]
        ts = graph.ts[edges]
        alive = (graph.created_ts[graph.src[edges]] < ts) & (
            graph.created_ts[graph.dst[edges]] < ts
        )
        self.edges = edges[alive]
        if len(self.edges) == 0:
            raise InputError(
                f"the {window} window has no engagement edges with roles "
                f"{list(roles)} to learn or validate engagement prediction on"
            )
        # how often each node is drawn as a destination (edges are drawn uniformly)
        hits = np.bincount(graph.dst[self.edges], minlength=graph.num_nodes)
        with np.errstate(divide="ignore"):
            self._dst_log_q = np.log(hits / len(self.edges))
        if exposed_negatives:
            self._exposed = self._unconverted_exposures(window)
        # nodes grouped by owner, for hard negatives
        order = np.argsort(self.owners, kind="stable")
        self._by_owner = order
        self._owner_sorted = self.owners[order]
        # nodes by (type, creation time), for random negatives that exist at t (a fixed
        # radix of 2^40 s let times past it run into the next type: millisecond data)
        born = np.maximum(graph.created_ts, 0)  # unknown: always existed
        self._born = EventIndex(graph.node_type_of(np.arange(graph.num_nodes)), born)
        self._by_type = self._born.order

    def __len__(self) -> int:
        return len(self.edges)

    def _unconverted_exposures(self, window: str) -> tuple[np.ndarray, np.ndarray]:
        """The distinct (src, dst) pairs of the window's exposure edges with no positive
        edge in the window, sorted by source: what a user was shown and did not act on."""
        g = self.graph
        edges = np.arange(g.window(window).start, g.window(window).stop)
        edges = edges[np.isin(g.etype[edges], g.role_codes("exposure"))]
        shown = np.unique(pair_keys(g.src[edges], g.dst[edges], g.num_nodes))  # sorted
        acted = pair_keys(g.src[self.edges], g.dst[self.edges], g.num_nodes)
        return split_pair_keys(shown[~np.isin(shown, acted)], g.num_nodes)

    def sample(self, count: int, seed: int, step: int) -> EngagementSample:
        g = self.graph
        rng = np.random.default_rng([seed, step, 0xE6])
        edges = self.edges[rng.integers(0, len(self.edges), count)]
        src, dst, ts = g.src[edges], g.dst[edges], g.ts[edges]
        dst_type = g.node_type_of(dst)
        lo, hi = self._born.rows_before(dst_type, ts)  # created before t
        hi = np.maximum(hi, lo + 1)
        random_neg = self._by_type[lo + (rng.random(count) * (hi - lo)).astype(np.int64)]
        uniform = -np.log(hi - lo)
        if self.exposed_negatives:
            hard_neg, hard_log_q = self._exposed_to(rng, src, dst, ts, random_neg, uniform)
        elif self.hard_negatives:
            hard_neg, hard_log_q = self._same_owner(rng, dst, dst_type, ts, random_neg, uniform)
        else:  # a second random negative
            hard_neg = self._by_type[lo + (rng.random(count) * (hi - lo)).astype(np.int64)]
            hard_log_q = uniform
        return EngagementSample(
            src=src,
            dst=dst,
            etype=g.etype[edges].astype(np.int64),
            ts=ts,
            random_neg=random_neg,
            hard_neg=hard_neg,
            dst_log_q=self._dst_log_q[dst],
            neg_log_q=np.stack([uniform, hard_log_q]),
        )

    def _exposed_to(
        self,
        rng: np.random.Generator,
        src: np.ndarray,
        dst: np.ndarray,
        ts: np.ndarray,
        fallback: np.ndarray,
        fallback_log_q: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A node of each destination's type that the source was exposed to in the window
        without acting on it and that exists at `ts` (the `fallback` where the draw finds
        none), and the log of its draw's probability."""
        g, (shown_src, shown_dst) = self.graph, self._exposed
        pick, size = _draw_in_group(rng, shown_src, shown_dst, src)
        usable = (
            (size > 0)
            & (g.node_type_of(pick) == g.node_type_of(dst))
            & (pick != dst)
            & (g.created_ts[pick] < ts)
        )
        log_q = -np.log(np.maximum(size, 1))
        return np.where(usable, pick, fallback), np.where(usable, log_q, fallback_log_q)

    def _same_owner(
        self,
        rng: np.random.Generator,
        dst: np.ndarray,
        dst_type: np.ndarray,
        ts: np.ndarray,
        fallback: np.ndarray,
        fallback_log_q: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Another node of each destination's owner and type that exists at `ts` (the
        `fallback` where there is none), and the log of its draw's probability."""
        g, owner = self.graph, self.owners[dst]
        pick, size = _draw_in_group(rng, self._owner_sorted, self._by_owner, owner)
        usable = (
            (g.node_type_of(pick) == dst_type)
            & (owner != NO_OWNER)
            & (pick != dst)
            & (g.created_ts[pick] < ts)
        )
        log_q = -np.log(np.maximum(size, 1))
        return np.where(usable, pick, fallback), np.where(usable, log_q, fallback_log_q)


def _draw_in_group(
    rng: np.random.Generator, sorted_keys: np.ndarray, members: np.ndarray, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each of `keys`, one of `members` drawn uniformly among those whose entry of
    `sorted_keys` (aligned with `members`) equals it, and that group's size; where the
    size is 0 the draw is meaningless and the caller must not use it."""
    first = np.searchsorted(sorted_keys, keys, side="left")
    size = np.searchsorted(sorted_keys, keys, side="right") - first
    if len(members) == 0:
        return np.zeros(len(keys), dtype=np.int64), size
    at = first + (rng.random(len(keys)) * size).astype(np.int64)
    return members[np.minimum(at, len(members) - 1)], size


def engagement_loss(
    scorer: EngagementScorer,
    z: torch.Tensor,
    etype: torch.Tensor,
    count: int,
    *,
    dst: torch.Tensor | None = None,
    dst_type: torch.Tensor | None = None,
    in_batch: float = 0.0,
    log_q: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`z` holds embeddings in blocks [src, dst, random_neg, hard_neg] of `count` rows.
    Returns (loss, positive logits, negative logits).

    With `in_batch > 0`, adds `in_batch` times a softmax over the batch: each source
    scores its own destination against every other pair's destination of the same node
    type (and its own two negatives), so one step contrasts `count` candidates, not two.
    `dst` (node ids) masks a destination that is another row's positive too.

    The batch's destinations are drawn as often as they are engaged with, so the plain
    softmax pushes popular destinations down (it learns how much more a user engages with
    an item than everyone does). `log_q` = (log-probability of each destination's draw
    (P,), of each negative's draw (2, P)) corrects that: each candidate's logit loses its
    log-probability (the sampling-bias correction of Yi et al., 2019), so the softmax
    estimates the one over all items, whose scores keep popularity.
    """
    zu, zv, zr, zh = z.split(count)
    pos = scorer(zu, etype, zv)
    neg = torch.cat([scorer(zu, etype, zr), scorer(zu, etype, zh)])
    loss = (
        F.binary_cross_entropy_with_logits(pos, torch.ones_like(pos))
        + F.binary_cross_entropy_with_logits(neg, torch.zeros_like(neg))
    ) / 2
    if in_batch > 0:
        loss = loss + in_batch * _in_batch_softmax(scorer, zu, etype, zv, dst, dst_type, neg, log_q)
    return loss, pos, neg


def _in_batch_softmax(
    scorer: EngagementScorer,
    zu: torch.Tensor,
    etype: torch.Tensor,
    zv: torch.Tensor,
    dst: torch.Tensor | None,
    dst_type: torch.Tensor | None,
    neg: torch.Tensor,
    log_q: tuple[torch.Tensor, torch.Tensor] | None,
) -> torch.Tensor:
    count = len(zu)
    scores = scorer.pairwise(zu, etype, zv)
    negs = neg.view(2, count).T  # (P, 2)
    if log_q is not None:
        scores = scores - log_q[0][None, :]
        negs = negs - log_q[1].T
    own = torch.eye(count, dtype=torch.bool, device=zu.device)
    drop = torch.zeros_like(own)
    if dst_type is not None:
        drop |= dst_type[:, None] != dst_type[None, :]
    if dst is not None:
        drop |= (dst[:, None] == dst[None, :]) & ~own
    scores = scores.masked_fill(drop, float("-inf"))
    logits = torch.cat([scores, negs], dim=1)  # (P, P + 2)
    target = torch.arange(count, device=zu.device)
    return F.cross_entropy(logits, target)
