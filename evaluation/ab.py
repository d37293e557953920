"""Offline A/B: two models' predictions on the same test examples, compared with paired
bootstrap confidence intervals that resample *users* (examples of one user move together,
so within-user correlation does not shrink the intervals), overall and per slice.

```
examples (user, label) + p_control + p_treatment
  --> point metrics for each model, delta = treatment - control
  --> B resamples of users with replacement -> example weights -> weighted metrics
  --> percentile interval of each delta; slices reuse the same user draws
```
The resamples are drawn one at a time from a seeded generator and drawn again, the same,
for each metric and slice: memory stays one resample's user counts, however many
resamples. Their number is bounded (`MAX_BOOTSTRAP`): past it the intervals no longer
move, and a typo (`--bootstrap 1000000000`) would run for days.

A resample that draws no converting user is skipped (no metric is defined on it), and so
is one on which a metric is undefined (AUC with only conversions drawn): each interval
records how many resamples it is computed from, and each result how many drew no
conversion, so that a report can say what its intervals rest on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from hir_sdk.evaluation import metrics as m

MetricFn = Callable[..., float]
MAX_BOOTSTRAP = 10_000  # user resamples; the default is 200


@dataclass(frozen=True)
class MetricSpec:
    name: str
    label: str
    better: str  # "lower" or "higher"
    fn: MetricFn
    needs_groups: bool = False


METRICS: dict[str, MetricSpec] = {
    "ne": MetricSpec("ne", "NE", "lower", m.normalized_entropy),
    "log_loss": MetricSpec("log_loss", "log loss", "lower", m.log_loss),
    "auc": MetricSpec("auc", "ROC-AUC", "higher", m.roc_auc),
    "pr_auc": MetricSpec("pr_auc", "PR-AUC", "higher", m.pr_auc),
    "gauc": MetricSpec("gauc", "gAUC (per user)", "higher", m.gauc, needs_groups=True),
    "calibration": MetricSpec("calibration", "calibration (pred/obs)", "one", m.calibration),
}
SLICE_METRICS = ("ne", "auc")


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return bool(self.low > 0 or self.high < 0)


@dataclass(frozen=True)
class MetricDelta:
    """One metric for both models, and treatment - control with its interval, computed
    from `resamples` of the bootstrap's resamples (the others drew no conversion, or the
    metric was undefined on them)."""

    metric: str
    control: float
    treatment: float
    delta: Interval
    resamples: int

    @property
    def relative(self) -> float:
        return self.delta.estimate / self.control if self.control else float("nan")

    @property
    def spec(self) -> MetricSpec:
        return METRICS[self.metric]


@dataclass(frozen=True)
class SliceResult:
    """One slice's deltas (none when it cannot have intervals); `no_conversion` of the
    resamples drew no converting user of the slice and were skipped for it."""

    name: str
    examples: int
    positives: int
    deltas: tuple[MetricDelta, ...]
    no_conversion: int = 0


@dataclass(frozen=True)
class ABResult:
    control: str
    treatment: str
    examples: int
    users: int
    positives: int
    metrics: tuple[MetricDelta, ...]
    slices: tuple[SliceResult, ...]
    n_bootstrap: int
    confidence: float
    seed: int
    no_conversion: int  # resamples that drew no converting user: skipped by every metric
    notes: dict[str, object] = field(default_factory=dict)

    def metric(self, name: str) -> MetricDelta:
        for delta in self.metrics:
            if delta.metric == name:
                return delta
        raise KeyError(name)

    @property
    def verdict(self) -> str:
        """One line: which model wins on NE (the primary metric), with its interval."""
        ne = self.metric("ne")
        pct = 100 * ne.relative
        ci = f"{100 * ne.delta.low / ne.control:+.2f}%, {100 * ne.delta.high / ne.control:+.2f}%"
        level = f"{100 * self.confidence:.0f}% CI"
        if not (math.isfinite(ne.delta.low) and math.isfinite(ne.delta.high)):
            return (
                f"no verdict: NE {pct:+.2f}%, without an interval (a {level} needs at "
                f"least {min_resamples(self.confidence)} resamples with a conversion; "
                f"{ne.resamples} of the {self.n_bootstrap} drawn are usable)"
            )
        if ne.delta.high < 0:
            return (
                f"{self.treatment} beats {self.control}: NE {pct:+.2f}% ({level} [{ci}]), "
                "significant"
            )
        if ne.delta.low > 0:
            return (
                f"{self.control} beats {self.treatment}: {self.treatment} NE {pct:+.2f}% "
                f"({level} [{ci}]), significant"
            )
        return f"no significant NE difference: {pct:+.2f}% ({level} [{ci}])"


def _value(
    spec: MetricSpec, y: np.ndarray, p: np.ndarray, w: np.ndarray | None, groups: np.ndarray
) -> float:
    if spec.needs_groups:
        return float(spec.fn(y, p, groups, weights=w))
    return float(spec.fn(y, p, weights=w))


def _user_draws(n_users: int, n_bootstrap: int, seed: int) -> Iterator[np.ndarray]:
    """Each resample's (U,) count of how many times each user is drawn, one at a time;
    every call yields the same sequence."""
    rng = np.random.default_rng(seed)
    for _ in range(n_bootstrap):
        yield np.bincount(rng.integers(0, n_users, n_users), minlength=n_users)


def min_resamples(confidence: float) -> int:
    """The fewest resamples that give a two-sided `confidence` interval: each tail must
    hold at least one resample beyond its end (40 at 95%); with fewer the interval is
    left out (NaN), and so is any claim of significance."""
    return math.ceil(2 / (1 - confidence) - 1e-9)


def _compare(
    names: tuple[str, ...],
    y: np.ndarray,
    pc: np.ndarray,
    pt: np.ndarray,
    users: np.ndarray,
    draws: Callable[[], Iterator[np.ndarray]],
    alpha: float,
) -> tuple[tuple[MetricDelta, ...], int]:
    """Each metric's delta with its interval, and how many resamples drew no conversion
    (the same for every metric: it depends on the draws and the labels alone)."""
    out, no_conversion = [], 0
    for name in names:
        spec = METRICS[name]
        control = _value(spec, y, pc, None, users)
        treatment = _value(spec, y, pt, None, users)
        samples, no_conversion = [], 0
        for counts in draws():
            w = counts[users].astype(np.float64)
            if w.sum() == 0 or not (y * w).sum() > 0:
                no_conversion += 1
                continue
            samples.append(_value(spec, y, pt, w, users) - _value(spec, y, pc, w, users))
        finite = np.asarray([s for s in samples if np.isfinite(s)])
        if len(finite) >= min_resamples(1 - alpha):
            low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
        else:
            low = high = float("nan")
        delta = Interval(treatment - control, float(low), float(high))
        out.append(MetricDelta(name, control, treatment, delta, len(finite)))
    return tuple(out), no_conversion


def compare(
    y: np.ndarray,
    p_control: np.ndarray,
    p_treatment: np.ndarray,
    users: np.ndarray,
    *,
    control: str = "control",
    treatment: str = "treatment",
    slices: dict[str, np.ndarray] | None = None,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    metrics: tuple[str, ...] = tuple(METRICS),
) -> ABResult:
    """Paired comparison of two models on the same examples.

    Args:
        y: (n,) 0/1 labels.
        p_control: (n,) predicted probabilities of the control model.
        p_treatment: (n,) predicted probabilities of the treatment model.
        users: (n,) user of each example (the bootstrap's resampling unit).
        slices: name -> (n,) boolean mask; each gets NE and AUC deltas with intervals.
        n_bootstrap: number of user resamples, at most `MAX_BOOTSTRAP`.
        confidence: two-sided interval level.
        seed: the resampling seed (results are deterministic in it).
    """
    y = np.asarray(y, dtype=np.float64)
    p_control = np.asarray(p_control, dtype=np.float64)
    p_treatment = np.asarray(p_treatment, dtype=np.float64)
    if not (len(y) == len(p_control) == len(p_treatment) == len(users)):
        raise ValueError("compare: y, predictions and users must have one length")
    if not 0 < confidence < 1 or not 1 <= n_bootstrap <= MAX_BOOTSTRAP:
        raise ValueError(
            f"compare: need 0 < confidence < 1 and 1 <= n_bootstrap <= {MAX_BOOTSTRAP}"
        )
    _, user_idx = np.unique(np.asarray(users), return_inverse=True)
    n_users = int(user_idx.max()) + 1 if len(user_idx) else 0
    draws = partial(_user_draws, n_users, n_bootstrap, seed)
    alpha = 1 - confidence
    overall, no_conversion = _compare(metrics, y, p_control, p_treatment, user_idx, draws, alpha)
    results = []
    for name, mask in (slices or {}).items():
        mask = np.asarray(mask, dtype=bool)
        one_user = len(np.unique(user_idx[mask])) < 2  # every resample alike: no interval
        if mask.sum() == 0 or y[mask].sum() == 0 or y[mask].sum() == mask.sum() or one_user:
            results.append(SliceResult(name, int(mask.sum()), int(y[mask].sum()), ()))
            continue
        deltas, skipped = _compare(
            SLICE_METRICS, y[mask], p_control[mask], p_treatment[mask], user_idx[mask], draws, alpha
        )
        results.append(SliceResult(name, int(mask.sum()), int(y[mask].sum()), deltas, skipped))
    return ABResult(
        control=control,
        treatment=treatment,
        examples=len(y),
        users=n_users,
        positives=int(y.sum()),
        metrics=overall,
        slices=tuple(results),
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
        no_conversion=no_conversion,
    )
