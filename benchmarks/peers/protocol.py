"""The protocol every method of the MovieLens-100K table shares, read from the graph.

- ratings: every `rate` (exposure) edge `user -> ad` with its time, and whether the user
  also liked it (a conversion edge to the same ad: on MovieLens the like lands one second
  after the rating); a window's ratings labelled as HIR's examples are (`window_likes`:
  in the attribution window, read before the window ends) for choosing on it;
- query lists without HIR (`--peers-only`): the same users, candidates, truth and seen
  pairs as `ranked_lists` builds from a HIR snapshot as of the test start (a snapshot holds
  the users and ads created before it), so the peers' rows do not depend on HIR being
  trained; the full run checks that both agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.evaluation.conversion_retrieval import RankedLists, users_with_history
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import pair_keys


@dataclass(frozen=True)
class Ratings:
    """Every rating in time order: graph node ids of the user and the movie, its time,
    whether it was liked."""

    user: np.ndarray
    ad: np.ndarray
    ts: np.ndarray
    liked: np.ndarray

    def before(self, cutoff: int) -> Ratings:
        keep = self.ts < cutoff
        return Ratings(self.user[keep], self.ad[keep], self.ts[keep], self.liked[keep])

    def between(self, lo: int, hi: int) -> Ratings:
        keep = (self.ts >= lo) & (self.ts < hi)
        return Ratings(self.user[keep], self.ad[keep], self.ts[keep], self.liked[keep])


def ratings(graph: TemporalGraph) -> Ratings:
    """The rating (exposure) edges of the graph, each with its like."""
    exposure = np.isin(graph.etype, graph.role_codes("exposure"))
    conversion = np.isin(graph.etype, graph.role_codes("conversion"))
    n = graph.num_nodes
    liked_keys = np.unique(pair_keys(graph.src[conversion], graph.dst[conversion], n))
    user, ad = graph.src[exposure], graph.dst[exposure]
    liked = np.isin(pair_keys(user, ad, n), liked_keys)
    return Ratings(user, ad, graph.ts[exposure], liked)


def window_likes(graph: TemporalGraph, window: str) -> Ratings:
    """`window`'s ratings labelled as HIR's examples label them (`build_examples`: a like
    within the attribution window, read before the window's end; a rating whose label is
    not known by then is censored, left out), so choosing a peer's settings on the window
    reads what choosing HIR's reads and nothing after it. (`ratings` marks a rating liked
    by a like at any time: fine for training rows, which ignore it.)"""
    frame = build_examples(graph, window).frame
    return Ratings(
        frame["user"].to_numpy(),
        frame["ad"].to_numpy(),
        frame["ts"].to_numpy(),
        frame["label"].to_numpy().astype(bool),
    )


def _created_before(graph: TemporalGraph, node_type: str, cutoff: int) -> np.ndarray:
    code = graph.type_code(node_type)
    nodes = np.arange(graph.type_offsets[code], graph.type_offsets[code + 1])
    return nodes[graph.created_ts[nodes] < cutoff]


def query_lists(graph: TemporalGraph, window: str = "test") -> RankedLists:
    """`window`'s query users, truth, candidates and seen pairs, as `ranked_lists` defines
    them for a snapshot as of the window's start, with no method's lists yet."""
    cutoff = graph.manifest.time.window(window)[0]
    users_known = _created_before(graph, "user", cutoff)
    ads = _created_before(graph, "ad", cutoff)
    test = build_examples(graph, window).frame.filter(pl.col("label") == 1)
    truth = test.filter(pl.col("ad").is_in(ads) & pl.col("user").is_in(users_known))
    truth = truth.unique(["user", "ad"]).sort(["user", "ad"]).select("user", "ad")
    users = np.unique(truth["user"].to_numpy())
    k = graph.edges_before(cutoff)
    src, dst = graph.src[:k], graph.dst[:k]
    keep = np.isin(src, users) & np.isin(dst, ads)
    seen = np.unique(pair_keys(src[keep], dst[keep], graph.num_nodes))
    history = users_with_history(graph, users, cutoff)
    return RankedLists(users, truth, ads, seen, graph.num_nodes, {}, history)


def same_queries(a: RankedLists, b: RankedLists) -> bool:
    """Whether two query sets have the same users, candidates, truth and seen pairs."""
    return (
        np.array_equal(a.users, b.users)
        and np.array_equal(a.ads, b.ads)
        and np.array_equal(a.seen, b.seen)
        and np.array_equal(a.history, b.history)
        and a.truth.equals(b.truth)
    )


def popularity_scores(graph: TemporalGraph, ranked: RankedLists) -> np.ndarray:
    """(U, A) engagement (any edge into the ad) before the test start, the same for every
    user: `ranked_lists`' popularity list (ties to the lower node id)."""
    k = graph.edges_before(graph.manifest.time.test_start)
    engaged = np.bincount(graph.dst[:k], minlength=graph.num_nodes)
    return np.tile(engaged[ranked.ads].astype(np.float64), (len(ranked.users), 1))
