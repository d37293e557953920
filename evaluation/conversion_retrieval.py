"""Retrieval of the ads users go on to convert on: recall@K of BoM retrieval from a HIR
snapshot, side by side with exact k-NN on the embeddings and a popularity list.

```
truth     (user, ad) pairs with a conversion label in the test window (labels as `hir ab`),
          for users and ads in the snapshot
BoM       the user's tokens query an inverted index over the snapshot's ads (weighted token
          overlap), candidates re-scored by embedding similarity
probe     the same index queried with each codebook's `probes` nearest codewords of the
          user's embedding that some ad holds (multi-probe), re-scored
exact     exact inner-product k-NN of the user's embedding over the ads
prior     with `prior_weight` > 0: exact k-NN of the embedding score plus that weight times
          each ad's engagement prior (`hir_sdk.ranking.retrieval.engagement_prior`: the
          log of its time-decayed engagement before the window); the BoM rows re-score by
          the same blend; `prior_half_life_scale` stretches the prior's half-lives (infinity:
          plain counts). `cold_prior_weight` is the weight for users without a history
          (default the same): their embedding holds none of their engagement, only what
          the encoder makes of their attributes, which a log may not have
popular   the ads most engaged with (any edge into them) before the test start, one list
trending  the same ranked by the engagement prior alone (the time-decayed engagement, at
          `prior_half_life_scale`)
fallback  without the prior, where some users have no history (no edge of their own
          before the test start): exact k-NN for users with one, the popular list for
          those without (their embedding holds none of their engagement yet, only what the
          encoder makes of their attributes and an empty neighbourhood); with the prior,
          the blend at `cold_prior_weight` ranks their lists and there is no fallback
recall@K  share of truth pairs whose ad is in the user's top K, over all pairs and
          separately over the pairs of users with and without a history
```
A time split can hold many users who arrive during the window; where their pairs are
most of the truth, the overall recall mostly measures what a method ranks for an empty
history, and the split says which part a method wins.
The snapshot must be as of the test start or earlier, so nothing of the test window is
in the queries or the index. With `exclude_seen`, each user's lists skip the ads they
already had an edge to before the test start (the usual protocol for rating data, where
a user rates a movie once; in ads logs users do convert on ads they have seen).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import pair_keys, split_pair_keys
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.interests.hierarchy import snapshot_nodes, snapshot_rows
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, exact_knn, probe_queries
from hir_sdk.ranking.retrieval.engagement_prior import engagement_prior, with_prior
from hir_sdk.ranking.retrieval.multi_probe import DEFAULT_PROBES
from hir_sdk.ranking.retrieval.ordered_topk import PAD_KEY, decode_rows, encode_keys, ordered_topk
from hir_sdk.ranking.retrieval.rescoring import exact_ip
from hir_sdk.schema.node_index import MISSING, search_sorted

K_VALUES = (20, 100)
PROBES = DEFAULT_PROBES
EXACT = "exact k-NN on embeddings"
EXACT_PRIOR = "exact k-NN + engagement prior"
FALLBACK = "exact k-NN, popularity without a history"
POPULAR = "popularity (engagement before test)"
TRENDING = "popularity, time-decayed (the prior alone)"


@dataclass(frozen=True)
class ConversionRecall:
    users: int
    pairs: int
    ads: int
    k_values: tuple[int, ...]
    recall: dict[str, list[float]]  # method -> recall at each K
    # the same over the pairs of users with a history before the window, and without
    pairs_with_history: int = 0
    with_history: dict[str, list[float]] = field(default_factory=dict)
    without_history: dict[str, list[float]] = field(default_factory=dict)
    window: str = "test"
    prior_weight: float = 0.0
    cold_prior_weight: float | None = None  # users without a history; None: prior_weight
    prior_half_life_scale: float = 1.0  # the prior's half-lives times this (inf: no decay)

    def render(self) -> list[str]:
        """A Markdown table, one row per method; where some pairs are by users without a
        history, recall over those with one and over those without too."""
        ks, cold = self.k_values, self.pairs - self.pairs_with_history
        split = cold > 0
        head = (
            f"{self.users:,} users who convert on {self.pairs:,} (user, ad) pairs in the "
            f"{self.window} window"
        )
        if split:
            head += (
                f" ({self.pairs_with_history:,} by users with an edge before it, {cold:,} by "
                "users without)"
            )
        columns = [f"recall@{k}" for k in ks]
        if split:
            columns += [f"@{k}, with a history" for k in ks] + [f"@{k}, without" for k in ks]
        lines = [f"{head}; {self.ads:,} ads in the index"]
        cold = self.prior_weight if self.cold_prior_weight is None else self.cold_prior_weight
        if self.prior_weight or cold:
            weights = f"{self.prior_weight:g}"
            if cold != self.prior_weight:
                weights += f" ({cold:g} for users without a history)"
            decay = (
                "engagement into the ad, undecayed"
                if np.isinf(self.prior_half_life_scale)
                else "time-decayed engagement into the ad"
                + (
                    f", half-lives x {self.prior_half_life_scale:g}"
                    if self.prior_half_life_scale != 1
                    else ""
                )
            )
            lines.append(
                f"The engagement prior's weight is {weights}: score = embedding "
                f"inner product + weight x log(1 + {decay})."
            )
        lines += [
            "",
            "| method | " + " | ".join(columns) + " |",
            "|---|" + "---:|" * len(columns),
        ]
        for name, values in self.recall.items():
            parts = [values]
            if split:
                parts += [self.with_history.get(name, []), self.without_history.get(name, [])]
            cells = [f"{r:.3f}" for part in parts for r in (part or [np.nan] * len(ks))]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return lines


@dataclass(frozen=True)
class RankedLists:
    """Each query user's ranked ads, by method, for the test window's conversions.

    Attributes:
        users: (U,) graph node ids of the users who convert in the test window, sorted.
        truth: their (user, ad) conversion pairs, unique, sorted.
        ads: (A,) graph node ids of the candidate ads (those in the snapshot).
        seen: sorted keys `pair_keys(user, ad, num_nodes)` left out of every list (empty unless
            `exclude_seen`).
        lists: method -> (U, L) ad node ids, best first; -1 pads.
        history: (U,) whether each user has an edge of their own before the window.
    """

    users: np.ndarray
    truth: pl.DataFrame
    ads: np.ndarray
    seen: np.ndarray
    num_nodes: int
    lists: dict[str, np.ndarray]
    history: np.ndarray

    def rank(self, scores: np.ndarray, top: int) -> np.ndarray:
        """(U, top) ads by descending `scores` (U, A) over `ads` (ties: lower column
        first), each user's seen ads left out: how another model's scores join the table."""
        keys = pair_keys(self.users[:, None], self.ads[None, :], self.num_nodes)
        masked = np.where(np.isin(keys, self.seen), -np.inf, scores)
        order = np.argsort(-masked, axis=1, kind="stable")[:, :top]
        return np.where(np.take_along_axis(masked, order, axis=1) > -np.inf, self.ads[order], -1)

    def relevant(self) -> list[np.ndarray]:
        """Per query user (in `users` order), the ads they convert on."""
        ads = self.truth["ad"].to_numpy()
        cuts = np.searchsorted(self.truth["user"].to_numpy(), self.users, side="right")
        return np.split(ads, cuts[:-1])


def ranked_lists(
    graph: TemporalGraph,
    snapshot: EntityEmbeddings,
    *,
    top: int = max(K_VALUES),
    probes: int = PROBES,
    exclude_seen: bool = False,
    window: str = "test",
    prior_weight: float = 0.0,
    cold_prior_weight: float | None = None,
    prior_half_life_scale: float = 1.0,
    index: bool = True,
) -> RankedLists:
    """The top `top` ads of each method (see the module) for each user who converts in
    `window` ("test", or "validation" to choose settings without reading the test window),
    ranked as of the window's start; `index=False` leaves out the BoM rows (the prior's
    choice reads only the exact ones)."""
    queries = _WindowQueries.build(graph, snapshot, window, exclude_seen, top)
    prior = engagement_prior(graph, queries.ad_nodes, queries.cutoff, prior_half_life_scale)
    return queries.lists(snapshot, prior, prior_weight, cold_prior_weight, probes, index)


@dataclass(frozen=True)
class _WindowQueries:
    """What every list of one window shares, whatever the prior's weight and decay: the
    query users, their truth, the candidate ads, the seen pairs and the histories."""

    graph: TemporalGraph
    cutoff: int
    top: int
    exclude_seen: bool
    users: np.ndarray  # graph node ids, sorted
    truth: pl.DataFrame
    ads: np.ndarray  # snapshot rows of the candidate ads
    ad_nodes: np.ndarray
    queries: np.ndarray  # snapshot rows of the users
    z: np.ndarray
    seen: np.ndarray
    wanted: int  # list length before the seen ads are moved out
    popular: np.ndarray
    history: np.ndarray
    exact: np.ndarray  # (U, wanted) the embedding's own exact k-NN lists

    @classmethod
    def build(
        cls,
        graph: TemporalGraph,
        snapshot: EntityEmbeddings,
        window: str,
        exclude_seen: bool,
        top: int,
    ) -> _WindowQueries:
        cutoff = _window_start(graph, window)
        if snapshot.as_of > cutoff:
            raise InputError(
                f"the snapshot is newer than the {window} start: it would see the {window} window"
            )
        nodes = snapshot_nodes(snapshot, graph)
        row_of = snapshot_rows(snapshot, graph)
        ads = snapshot.of_type(*graph.manifest.exposed_types[1])  # what users are shown
        ad_nodes = nodes[ads]
        test = build_examples(graph, window).frame.filter(pl.col("label") == 1)
        truth = test.filter(pl.col("ad").is_in(ad_nodes) & pl.col("user").is_in(nodes))
        truth = truth.unique(["user", "ad"]).sort(["user", "ad"]).select("user", "ad")
        users = np.unique(truth["user"].to_numpy())
        if len(users) == 0:
            raise InputError(f"no conversions in the {window} window by users of the snapshot")
        seen = (
            _seen_pairs(graph, users, ad_nodes, cutoff) if exclude_seen else np.zeros(0, np.int64)
        )
        seen_users = split_pair_keys(seen, graph.num_nodes)[0]
        most_seen = int(np.unique(seen_users, return_counts=True)[1].max(initial=0))
        wanted = min(top + most_seen, len(ads))  # enough left after the seen ones go
        engaged = np.bincount(graph.dst[: graph.edges_before(cutoff)], minlength=graph.num_nodes)
        popular = ad_nodes[np.lexsort((ad_nodes, -engaged[ad_nodes]))][:wanted]
        history = users_with_history(graph, users, cutoff)
        z = snapshot.embeddings()
        exact = np.asarray(exact_knn(z[row_of[users]], z[ads], wanted, item_ids=ad_nodes).ids)
        return cls(
            graph=graph,
            cutoff=cutoff,
            top=top,
            exclude_seen=exclude_seen,
            users=users,
            truth=truth,
            ads=ads,
            ad_nodes=ad_nodes,
            queries=row_of[users],
            z=z,
            seen=seen,
            wanted=wanted,
            popular=popular,
            history=history,
            exact=exact,
        )

    def lists(
        self,
        snapshot: EntityEmbeddings,
        prior: np.ndarray,
        prior_weight: float,
        cold_prior_weight: float | None,
        probes: int,
        index: bool,
        exact_only: bool = False,
    ) -> RankedLists:
        """Every method's lists with the (A,) `prior` of the candidate ads at these weights
        (`exact_only`: only the list the prior's choice reads, exact k-NN with the prior
        where a weight is not 0, without it otherwise)."""
        cold = prior_weight if cold_prior_weight is None else cold_prior_weight
        z, queries, ads, ad_nodes, users = self.z, self.queries, self.ads, self.ad_nodes, self.users
        blended = bool(prior_weight or cold)
        if blended:  # `[z_u, weight_u]` . `[z_a, prior_a]`: the blend
            weights = np.where(self.history, prior_weight, cold)
            zq, za = with_prior(z[queries], z[ads], prior, weights)
        if exact_only:
            if not blended:
                return self._ranked({EXACT: self.exact})
            return self._ranked(
                {EXACT_PRIOR: np.asarray(exact_knn(zq, za, self.wanted, item_ids=ad_nodes).ids)}
            )
        trending = ad_nodes[np.lexsort((ad_nodes, -prior))][: self.wanted]
        lists = {}
        if index:
            lists = _index_lists(snapshot, ads, ad_nodes, queries, self.wanted, probes)
        lists[EXACT] = self.exact
        if blended:  # the index's candidates join the prior's own top list, re-scored by it
            lists = {
                name: _rescored(
                    np.hstack([ids, np.tile(trending, (len(users), 1))]), zq, za, ad_nodes
                )
                for name, ids in lists.items()
                if name != EXACT
            } | {EXACT: lists[EXACT]}
            lists[EXACT_PRIOR] = np.asarray(exact_knn(zq, za, self.wanted, item_ids=ad_nodes).ids)
        elif not self.history.all():  # with the prior, or where all have a history, no fallback
            popular_ids = np.tile(self.popular, (len(users), 1))
            lists[FALLBACK] = np.where(self.history[:, None], lists[EXACT], popular_ids)
        lists[POPULAR] = np.tile(self.popular, (len(users), 1))
        lists[TRENDING] = np.tile(trending, (len(users), 1))
        return self._ranked(lists)

    def _ranked(self, lists: dict[str, np.ndarray]) -> RankedLists:
        """The lists, each user's seen ads moved out (with `exclude_seen`), cut to `top`."""
        num_nodes = self.graph.num_nodes
        if self.exclude_seen:
            lists = {
                name: _unseen_first(ids, self.users, self.seen, num_nodes)
                for name, ids in lists.items()
            }
        lists = {name: ids[:, : self.top] for name, ids in lists.items()}
        return RankedLists(
            self.users, self.truth, self.ad_nodes, self.seen, num_nodes, lists, self.history
        )


def _index_lists(
    snapshot: EntityEmbeddings,
    ads: np.ndarray,
    ad_nodes: np.ndarray,
    queries: np.ndarray,
    wanted: int,
    probes: int,
) -> dict[str, np.ndarray]:
    """The BoM rows: the users' own tokens and the multi-probe query over an inverted index
    of the snapshot's ads, candidates re-scored by embedding inner product."""
    z = snapshot.embeddings()
    size = int(snapshot.meta["bom"]["codewords"])
    probes = min(probes, size - 1)  # codewords probed per codebook: fewer than K
    codes = snapshot.quantizer.codes(snapshot.tokens())
    index = InvertedIndex.build(ad_nodes, codes[ads], size, z[ads])
    wide = 4 * wanted
    bom = index.search(
        TokenBags.from_codes(codes[queries], size),
        wanted,
        query_embeddings=z[queries],
        num_candidates=wide,
    )
    probed = index.search(
        probe_queries(z[queries], snapshot.quantizer.codebooks, probes, occupied=index.occupied()),
        wanted,
        query_embeddings=z[queries],
        num_candidates=wide,
    )
    return {
        "BoM inverted index, re-scored": np.asarray(bom.ids),
        f"BoM index, {probes}-probe query, re-scored": np.asarray(probed.ids),
    }


def _rescored(
    candidates: np.ndarray, zq: np.ndarray, za: np.ndarray, ad_nodes: np.ndarray
) -> np.ndarray:
    """(U, C) ad node ids (-1 pads, repeats allowed) ordered by `zq[u] . za[ad]`, each ad
    once, best first (ties: lower node id); -1 pads the end. Chunks of users bound the
    gathered (chunk, C, D) embeddings."""
    chunk = 1024
    return np.concatenate(
        [
            _rescored_chunk(candidates[i : i + chunk], zq[i : i + chunk], za, ad_nodes)
            for i in range(0, len(candidates), chunk)
        ]
    )


def _rescored_chunk(
    candidates: np.ndarray, zq: np.ndarray, za: np.ndarray, ad_nodes: np.ndarray
) -> np.ndarray:
    """The index's own ordering (`ranking.retrieval.rescoring`): exact inner products packed
    with the node id into keys (score desc, id asc), a repeated candidate giving an equal
    key next to its twin."""
    order = np.argsort(ad_nodes)
    rows = order[np.searchsorted(ad_nodes, candidates, sorter=order).clip(0, len(ad_nodes) - 1)]
    ip = exact_ip(za[rows], zq[:, None, :])
    keys = np.where(candidates >= 0, encode_keys(ip, candidates), PAD_KEY)
    keys = ordered_topk(keys, keys.shape[1])
    keys[:, 1:][keys[:, 1:] == keys[:, :-1]] = PAD_KEY  # each ad once
    return decode_rows(ordered_topk(keys, keys.shape[1]))


def users_with_history(graph: TemporalGraph, users: np.ndarray, cutoff: int) -> np.ndarray:
    """(U,) whether each of `users` has an edge out of them before `cutoff`."""
    return (
        np.bincount(graph.src[: graph.edges_before(cutoff)], minlength=graph.num_nodes)[users] > 0
    )


def repeats_conversions(graph: TemporalGraph, window: str = "train") -> bool:
    """Whether some user converts on the same ad more than once among `window`'s labels.

    Where none does (rating data: one rating per movie), an ad a user already had cannot be
    one they convert on later, so `exclude_seen` is the fair protocol; where users do (ads
    logs), leaving seen ads out would hide real conversions."""
    pairs = build_examples(graph, window).frame.filter(pl.col("label") == 1).select("user", "ad")
    return pairs.height > pairs.unique().height


def conversion_recall(
    graph: TemporalGraph,
    snapshot: EntityEmbeddings,
    *,
    k_values: tuple[int, ...] = K_VALUES,
    probes: int = PROBES,
    exclude_seen: bool = False,
    window: str = "test",
    prior_weight: float = 0.0,
    cold_prior_weight: float | None = None,
    prior_half_life_scale: float = 1.0,
    index: bool = True,
) -> ConversionRecall:
    """recall@K of each method (see the module) for `window`'s conversions: the share of
    conversion pairs whose ad is in the user's top K."""
    ranked = ranked_lists(
        graph,
        snapshot,
        top=max(k_values),
        probes=probes,
        exclude_seen=exclude_seen,
        window=window,
        prior_weight=prior_weight,
        cold_prior_weight=cold_prior_weight,
        prior_half_life_scale=prior_half_life_scale,
        index=index,
    )
    return _recall(ranked, k_values, window, prior_weight, cold_prior_weight, prior_half_life_scale)


def prior_recall_grid(
    graph: TemporalGraph,
    snapshot: EntityEmbeddings,
    *,
    weights: tuple[float, ...],
    half_life_scales: tuple[float, ...],
    k_values: tuple[int, ...] = K_VALUES,
    exclude_seen: bool = False,
    window: str = "validation",
) -> dict[tuple[float, float], ConversionRecall]:
    """(scale, weight) -> `conversion_recall(..., prior_weight=weight,
    prior_half_life_scale=scale, index=False)` for every pair of the grid, restricted to
    the list the prior's choice reads (exact k-NN with the prior, or without it at weight
    0), with what the lists share (the window's examples, seen pairs, histories and the
    plain k-NN) built once and each scale's prior once: the choice ranks the window many
    times."""
    queries = _WindowQueries.build(graph, snapshot, window, exclude_seen, max(k_values))
    out = {}
    for scale in half_life_scales:
        prior = engagement_prior(graph, queries.ad_nodes, queries.cutoff, scale)
        for weight in weights:
            ranked = queries.lists(snapshot, prior, weight, None, PROBES, False, exact_only=True)
            out[scale, weight] = _recall(ranked, k_values, window, weight, None, scale)
    return out


def _recall(
    ranked: RankedLists,
    k_values: tuple[int, ...],
    window: str,
    prior_weight: float,
    cold_prior_weight: float | None,
    prior_half_life_scale: float,
) -> ConversionRecall:
    """recall@K of `ranked`'s lists: over all pairs, and over those of users with and
    without a history."""
    position = np.searchsorted(ranked.users, ranked.truth["user"].to_numpy())
    ad = ranked.truth["ad"].to_numpy()
    warm = ranked.history[position]

    def recall(pairs: np.ndarray) -> dict[str, list[float]]:
        if not pairs.any():
            return {}
        return {
            name: [
                float((top_ids[position[pairs], :k] == ad[pairs, None]).any(axis=1).mean())
                for k in k_values
            ]
            for name, top_ids in ranked.lists.items()
        }

    return ConversionRecall(
        len(ranked.users),
        ranked.truth.height,
        len(ranked.ads),
        tuple(k_values),
        recall(np.ones_like(warm)),
        int(warm.sum()),
        recall(warm),
        recall(~warm),
        window,
        prior_weight,
        cold_prior_weight,
        prior_half_life_scale,
    )


def _window_start(graph: TemporalGraph, window: str) -> int:
    """The start of the validation or test window: the time the lists are ranked at."""
    ranked = ("test", "validation")  # the train window starts with the data: no history
    if window not in ranked:
        raise InputError(f"window must be one of {sorted(ranked)}, got {window!r}")
    return graph.manifest.time.window(window)[0]


def _seen_pairs(
    graph: TemporalGraph, users: np.ndarray, ads: np.ndarray, cutoff: int
) -> np.ndarray:
    """Sorted `pair_keys(user, ad, N)` of the (user, ad) pairs with an edge before `cutoff`."""
    k = graph.edges_before(cutoff)
    src, dst = graph.src[:k], graph.dst[:k]
    keep = np.isin(src, users) & np.isin(dst, ads)
    return np.unique(pair_keys(src[keep], dst[keep], graph.num_nodes))


def _unseen_first(
    ids: np.ndarray, users: np.ndarray, seen_keys: np.ndarray, num_nodes: int
) -> np.ndarray:
    """Each row of `ids` (a query user's ranked list) with that user's seen ads moved to
    the end, the order of the rest kept; seen positions become -1."""
    seen = _seen(pair_keys(users[:, None], ids, num_nodes), seen_keys) & (ids >= 0)
    order = np.argsort(seen, axis=1, kind="stable")
    return np.where(
        np.take_along_axis(seen, order, axis=1), -1, np.take_along_axis(ids, order, axis=1)
    )


def _seen(keys: np.ndarray, seen_keys: np.ndarray) -> np.ndarray:
    """Whether each of `keys` (any shape) is among the sorted `seen_keys`: a binary search
    (`np.isin` would sort or hash both arrays on every call)."""
    return (search_sorted(seen_keys, keys.ravel()) != MISSING).reshape(keys.shape)
