"""Data scaling: test NE of several A/B arms against the number of training examples they
were fitted on, with a log-linear fit per arm and where two arms' fits cross.

```
shares    s_1 < s_2 < ... <= 1 of the training window's examples, seeded and nested
          (a smaller share's examples are among every larger one's); the validation and
          test windows stay whole, so every point is scored on the same test examples
fit       NE = a + b log10(n)      per arm, least squares (`scaling.fit_log_linear`)
crossing  n* = 10 ** ((a_1 - a_2) / (b_2 - b_1))  where two arms' lines meet
```

A neural ranker earns its cost where its line falls faster than a GBDT's and crosses it
within the data a user has; the crossing is an extrapolation when it lies outside the
measured range, and the report says so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hir_sdk.evaluation.charts import line_chart
from hir_sdk.evaluation.metrics import normalized_entropy
from hir_sdk.evaluation.pipeline import ABConfig
from hir_sdk.evaluation.rankers import make_ranker
from hir_sdk.evaluation.scaling import LogLinearFit, fit_log_linear
from hir_sdk.ranking.ranker import RankingData


@dataclass(frozen=True)
class DataPoint:
    arm: str
    share: float  # of the training window's examples
    examples: int
    ne: float  # on the whole test window
    seconds: float  # fit and predict


def share_rows(size: int, shares: Sequence[float], seed: int = 0) -> dict[float, np.ndarray]:
    """Sorted row indices of each share of `size` examples: the first rows of one seeded
    permutation, so the shares are nested."""
    for share in shares:
        if not 0 < share <= 1:
            raise ValueError(f"a share of the training examples must be in (0, 1], got {share}")
    order = np.random.default_rng([seed, 0xDA7A]).permutation(size)
    return {s: np.sort(order[: max(round(s * size), 1)]) for s in sorted(shares)}


def data_sweep(
    data: RankingData,
    arms: Sequence[str],
    shares: Sequence[float],
    config: ABConfig,
    *,
    seed: int = 0,
    progress: bool = False,
) -> list[DataPoint]:
    """One point per (share, arm): the arm (`config`'s settings) fitted on that share of
    `data`'s training examples, scored on its whole test window. HIR columns are computed
    once on `data` and shared by every share (`RankingData.regroup`)."""
    labels = data.labels("test")
    points = []
    for share, rows in share_rows(data.examples["train"].height, shares, seed).items():
        part = data.regroup(
            {"train": ("train", rows), "validation": ("validation", None), "test": ("test", None)}
        )
        for arm in arms:
            started = time.perf_counter()
            p = make_ranker(arm, config).fit(part).predict(part, "test")
            ne = float(normalized_entropy(labels, np.asarray(p, dtype=np.float64)))
            points.append(DataPoint(arm, share, len(rows), ne, time.perf_counter() - started))
            if progress:
                print(f"[{arm}, {len(rows):,} examples: NE {ne:.4f}]", flush=True)
    return points


def by_arm(points: Sequence[DataPoint]) -> dict[str, list[DataPoint]]:
    """Each arm's points, by increasing number of examples, arms in first-seen order."""
    arms: dict[str, list[DataPoint]] = {}
    for p in sorted(points, key=lambda p: p.examples):
        arms.setdefault(p.arm, []).append(p)
    return {arm: arms[arm] for arm in dict.fromkeys(p.arm for p in points)}


def fits(points: Sequence[DataPoint]) -> dict[str, LogLinearFit]:
    """Each arm's `NE = a + b log10(examples)`."""
    return {
        arm: fit_log_linear([p.examples for p in mine], [p.ne for p in mine])
        for arm, mine in by_arm(points).items()
    }


def last_decade(points: Sequence[DataPoint]) -> dict[str, LogLinearFit]:
    """Each arm's line through its two largest sizes: where a curve bends, the local
    slope says more about the next decade than the fit over every size does."""
    out = {}
    for arm, mine in by_arm(points).items():
        a, b = mine[-2:]
        slope = (b.ne - a.ne) / (np.log10(b.examples) - np.log10(a.examples))
        out[arm] = LogLinearFit(float(slope), float(b.ne - slope * np.log10(b.examples)), 1.0)
    return out


def crossing(first: LogLinearFit, second: LogLinearFit) -> float | None:
    """The number of examples where two arms' fitted lines meet; None when parallel."""
    if abs(first.slope - second.slope) < 1e-12:
        return None
    return float(10 ** ((first.intercept - second.intercept) / (second.slope - first.slope)))


def render_data_sweep(points: Sequence[DataPoint], neural: str) -> list[str]:
    """The table of points, each arm's fit, and where `neural`'s line crosses the others'."""
    arms = list(dict.fromkeys(p.arm for p in points))
    sizes = sorted({p.examples for p in points})
    by = {(p.arm, p.examples): p for p in points}
    lines = [
        "| training examples | " + " | ".join(f"{a}: NE (s)" for a in arms) + " |",
        "|---:|" + "---:|" * len(arms),
    ]
    for n in sizes:
        cells = [f"{by[a, n].ne:.4f} ({by[a, n].seconds:.0f})" for a in arms]
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    lines.append("")
    line, local = fits(points), last_decade(points)
    for arm in arms:
        f = line[arm]
        lines.append(
            f"- {arm}: NE = {f.intercept:.4f} {f.slope:+.4f} log10(n), R² = {f.r2:.3f}; "
            f"between the two largest sizes {local[arm].slope:+.4f} per decade"
        )
    for arm in (a for a in arms if a != neural):
        below = line[neural](sizes[-1]) < line[arm](sizes[-1])
        lines.append(
            f"- {neural} against {arm}: the fitted lines cross {_where(line, neural, arm, sizes)}"
            f"; at the largest size {neural}'s line is {'below' if below else 'above'} "
            f"(lower NE is better); the lines through the two largest sizes cross "
            f"{_where(local, neural, arm, sizes)}"
        )
    return lines


def _where(line: dict[str, LogLinearFit], first: str, second: str, sizes: list[int]) -> str:
    n = crossing(line[first], line[second])
    if n is None:
        return "nowhere (parallel)"
    inside = sizes[0] <= n <= sizes[-1]
    count = f"{n:,.0f}" if 1 <= n < 1e9 else f"{n:.1e}"
    return f"at {count} examples" + (
        " (inside the measured range)" if inside else " (an extrapolation)"
    )


def data_sweep_svg(points: Sequence[DataPoint], *, title: str) -> str:
    """Measured NE against log10(training examples) per arm, with each arm's fitted line."""
    series = []
    line = fits(points)
    for arm, mine in by_arm(points).items():
        fit = line[arm]
        x = np.log10([p.examples for p in mine])
        series.append((f"{arm} (measured)", x, np.array([p.ne for p in mine])))
        series.append((f"{arm} fit", x[[0, -1]], fit(10 ** x[[0, -1]])))
    return line_chart(series, title=title, x_label="log10 training examples", y_label="test NE")
