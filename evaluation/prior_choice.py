"""The engagement prior's weight for retrieval, chosen on a window before the one it serves.

The blend `q . z_a + weight * prior_a` (`hir_sdk.ranking.retrieval.engagement_prior`)
has one free number. How much popularity should count depends on the log (a time split
of ratings rewards it, a log of niche conversions may not), so no default suits every
data set. `choose_prior_weight` ranks the validation window's conversions from a snapshot
as of the validation start with each weight of a grid (0, the plain embedding score,
included) and keeps the one with the best mean recall over the K values, among the pairs
of users with a history before the window where there are some; ties go to the smaller
weight. The users without one get a weight of their own (`cold_weight`), chosen the same
way on their own pairs but never below the first: their embedding holds none of their
engagement, only what the encoder makes of their attributes, so it may count as much as
a user with a history's at most. Where a log gives users no attributes that vector is
noise the prior must outweigh; attributes that say something (age, occupation) keep it
a share. The prior's decay is chosen with them: for each scale of the edge types'
half-lives (`PRIOR_HALF_LIFE_SCALES`, infinity for plain counts) the weights are chosen
as above, and the scale whose lists, at its two weights, recall the most of the window's
conversions over all its pairs is kept (ties: the earlier scale, the graph's own half-lives
first). A log of months and one of decades need different notions of "popular now", and
the manifest's half-lives describe how fast a user's interest fades, not how long an item
stays popular. Nothing of the test window is read.
`choose_blend_weight` chooses the weight for a model that has no snapshot (a peer's (users,
ads) score matrix) and one prior, and `choose_blend_decay` its weight and decay, so a
comparison can give every model the prior.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.evaluation.conversion_retrieval import (
    EXACT,
    EXACT_PRIOR,
    K_VALUES,
    ConversionRecall,
    RankedLists,
    prior_recall_grid,
)
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.ranking.hir_lookup import read_until
from hir_sdk.ranking.retrieval.engagement_prior import engagement_prior

PRIOR_WEIGHTS = (0.0, 0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0)
# the prior's half-lives times these (the graph's own first: it wins ties)
PRIOR_HALF_LIFE_SCALES = (1.0, 0.25, 4.0, 16.0, math.inf)


@dataclass(frozen=True)
class PriorChoice:
    """The chosen weight and the score of every weight tried on `window`."""

    weight: float
    window: str
    scores: dict[float, float]  # weight -> mean recall over the K values
    with_history: bool  # the scores are over the pairs of users with a history
    # users without a history: their weight and scores (those of `weight` where the
    # window has no such pair, or the scores are already over all users)
    cold_weight: float | None = None
    cold_scores: dict[float, float] = field(default_factory=dict)
    # the prior's half-lives times this (inf: no decay), and each scale tried: the mean
    # recall over K of all the window's pairs at that scale's chosen weights
    half_life_scale: float = 1.0
    scale_scores: dict[float, float] = field(default_factory=dict)

    @property
    def weight_without_history(self) -> float:
        return self.weight if self.cold_weight is None else self.cold_weight

    def render(self) -> str:
        tried = ", ".join(f"{w:g}: {s:.3f}" for w, s in self.scores.items())
        over = "users with a history" if self.with_history else "all users"
        text = (
            f"engagement prior weight {self.weight:g}, chosen on the {self.window} window "
            f"(mean recall over K of {over}, by weight: {tried})"
        )
        if self.cold_scores:
            tried = ", ".join(f"{w:g}: {s:.3f}" for w, s in self.cold_scores.items())
            text += (
                f"; {self.cold_weight:g} for users without a history (at least the above; "
                f"by weight: {tried})"
            )
        if self.scale_scores:
            tried = ", ".join(f"{s:g}: {v:.3f}" for s, v in self.scale_scores.items())
            text += (
                f"; the prior's half-lives x {self.half_life_scale:g} (mean recall over K of "
                f"all users at each scale's weights: {tried})"
            )
        return text


def choose_prior_weight(
    graph: TemporalGraph,
    snapshot: EntityEmbeddings,
    *,
    exclude_seen: bool = False,
    weights: tuple[float, ...] = PRIOR_WEIGHTS,
    half_life_scales: tuple[float, ...] = PRIOR_HALF_LIFE_SCALES,
    k_values: tuple[int, ...] = K_VALUES,
    window: str = "validation",
) -> PriorChoice:
    """The prior's half-life scale of `half_life_scales` and weights of `weights` whose
    exact k-NN + prior lists recall the most of `window`'s conversions (see the module);
    `snapshot` must be as of `window`'s start or earlier, made by an encoder that read
    nothing of the window."""
    start = graph.manifest.time.window(window)[0]
    if read_until(snapshot.meta) > start:
        raise InputError(
            f"the snapshot's encoder read data after the {window} start (or does not record "
            f"what it read): choosing on the {window} window needs one trained before it"
        )
    if not half_life_scales:
        raise ValueError("half_life_scales is empty: no decay to choose the prior's from")
    grid = prior_recall_grid(
        graph,
        snapshot,
        weights=tuple(sorted(weights)),
        half_life_scales=half_life_scales,
        k_values=k_values,
        exclude_seen=exclude_seen,
        window=window,
    )
    return _best_scale(
        {
            scale: _choose_at_scale(
                {weight: grid[scale, weight] for weight in sorted(weights)}, window
            )
            for scale in half_life_scales
        }
    )


def _choose_at_scale(
    results: dict[float, ConversionRecall], window: str
) -> tuple[PriorChoice, float]:
    """The weights chosen from each weight's recall with the prior at one half-life scale,
    and the mean recall over K of all the window's pairs at them."""
    scores: dict[float, float] = {}
    cold: dict[float, float] = {}
    with_history, warm_pairs, pairs = True, 0, 0
    for weight, result in results.items():
        with_history = result.pairs_with_history > 0
        warm_pairs, pairs = result.pairs_with_history, result.pairs
        recall = result.with_history if with_history else result.recall
        method = EXACT_PRIOR if weight else EXACT
        scores[weight] = sum(recall[method]) / len(recall[method])
        if with_history and result.without_history:
            values = result.without_history[method]
            cold[weight] = sum(values) / len(values)
    choice = _choice(scores, window, with_history)
    if not cold:
        return choice, scores[choice.weight]
    cold_weight = max(choice.weight, _best(cold))
    mixed = (warm_pairs * scores[choice.weight] + (pairs - warm_pairs) * cold[cold_weight]) / pairs
    return dataclasses.replace(choice, cold_weight=cold_weight, cold_scores=cold), mixed


def prior_from_snapshots(
    graph: TemporalGraph,
    snapshots: list[EntityEmbeddings],
    *,
    exclude_seen: bool = False,
    weights: tuple[float, ...] = PRIOR_WEIGHTS,
    half_life_scales: tuple[float, ...] = PRIOR_HALF_LIFE_SCALES,
) -> PriorChoice | None:
    """`choose_prior_weight` over `weights` and `half_life_scales` from the newest of
    `snapshots` (oldest first) that is as of the validation start or earlier and whose
    encoder read nothing of the validation window; None where there is none, or where the
    window has no conversion to choose on (the lists then use the embedding alone)."""
    start = graph.manifest.time.validation_start
    usable = [s for s in snapshots if max(s.as_of, read_until(s.meta)) <= start]
    if not usable:
        return None
    try:
        return choose_prior_weight(
            graph,
            usable[-1],
            exclude_seen=exclude_seen,
            weights=weights,
            half_life_scales=half_life_scales,
        )
    except InputError:  # no conversion in the validation window by the snapshot's users
        return None


def choose_blend_weight(
    ranked: RankedLists,
    scores: np.ndarray,
    prior: np.ndarray,
    *,
    weights: tuple[float, ...] = PRIOR_WEIGHTS,
    k_values: tuple[int, ...] = K_VALUES,
    window: str = "validation",
) -> PriorChoice:
    """`choose_prior_weight` for (U, A) `scores` of `ranked`'s users over its ads and the
    (A,) `prior` of those ads: the lists rank `scores + weight * prior`, each user's seen
    ads left out, and the same criterion picks the weight."""
    truth_user = np.searchsorted(ranked.users, ranked.truth["user"].to_numpy())
    ad = ranked.truth["ad"].to_numpy()
    warm = ranked.history[truth_user]
    with_history = bool(warm.any())
    pairs = warm if with_history else np.ones_like(warm)
    result: dict[float, float] = {}
    users, ad = truth_user[pairs], ad[pairs, None]
    for weight in sorted(weights):
        top = ranked.rank(scores + weight * prior[None, :], max(k_values))
        hits = [(top[users, :k] == ad).any(axis=1).mean() for k in k_values]
        result[weight] = float(np.mean(hits))
    return _choice(result, window, with_history)


def choose_blend_decay(
    graph: TemporalGraph,
    ranked: RankedLists,
    scores: np.ndarray,
    *,
    weights: tuple[float, ...] = PRIOR_WEIGHTS,
    half_life_scales: tuple[float, ...] = PRIOR_HALF_LIFE_SCALES,
    k_values: tuple[int, ...] = K_VALUES,
) -> PriorChoice:
    """`choose_blend_weight` at each of the prior's `half_life_scales` (priors as of the
    validation start, over `ranked`'s ads), and the scale whose lists at its weight
    recall the most of the window's pairs, all users counted (ties: the earlier scale):
    the rule `choose_prior_weight` applies to a snapshot, for a score matrix."""
    start = graph.manifest.time.validation_start
    truth_user = np.searchsorted(ranked.users, ranked.truth["user"].to_numpy())
    ad = ranked.truth["ad"].to_numpy()[:, None]
    found: dict[float, tuple[PriorChoice, float]] = {}
    for scale in half_life_scales:
        prior = engagement_prior(graph, ranked.ads, start, scale)
        choice = choose_blend_weight(ranked, scores, prior, weights=weights, k_values=k_values)
        top = ranked.rank(scores + choice.weight * prior[None, :], max(k_values))
        hits = [(top[truth_user, :k] == ad).any(axis=1).mean() for k in k_values]
        found[scale] = (choice, float(np.mean(hits)))
    return _best_scale(found)


def _best_scale(found: dict[float, tuple[PriorChoice, float]]) -> PriorChoice:
    """Of each half-life scale's choice and the mean recall over K of all the window's
    pairs at its weights, the choice of the best scale (ties: the earlier one), holding
    every scale's recall."""
    if not found:
        raise ValueError("half_life_scales is empty: no decay to choose the prior's from")
    overall = {scale: recall for scale, (_, recall) in found.items()}
    best = max(overall.values())
    scale = next(s for s, recall in overall.items() if recall == best)
    return dataclasses.replace(found[scale][0], half_life_scale=scale, scale_scores=overall)


def _best(scores: dict[float, float]) -> float:
    """The best-scoring weight, the smallest among equals."""
    best = max(scores.values())
    return min(w for w, s in scores.items() if s == best)


def _choice(scores: dict[float, float], window: str, with_history: bool) -> PriorChoice:
    return PriorChoice(_best(scores), window, scores, with_history)
