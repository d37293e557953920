"""Scaling sweeps: test NE against training compute for a family of model sizes, with a
log-linear fit and its R², as in the scaling-law studies the multi-stage design comes
from (quality improves linearly in the log of compute).

```
compute  C = 6 N T_train + 2 N T_forward      N: trainable parameters of the swept model
                                              T: tokens it processed while training
fit      NE = a + b log10(C)                  least squares; R² = 1 - SS_res / SS_tot
```
Two sweeps:

- `encoder_sweep`: HIR encoders of several `ModelSizes`, each trained the same way (the
  first half of the training window, like `hir demo`), embedded at the A/B's refresh
  times; NE is the test NE of the XGBoost + HIR arm of the A/B. Tokens are the subgraph
  nodes through the student (forward and backward) and the EMA teacher (forward only),
  read from the run's `metrics.jsonl`.
- `user_model_sweep`: the multi-stage ranker with user models of several
  `UserModelConfig`s, on one encoder's snapshots; NE is the multi-stage arm's test NE.
  Tokens are the history events the ranker read while training; N counts the user model
  and the online ranker.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hir_sdk.evaluation.charts import line_chart
from hir_sdk.evaluation.metrics import normalized_entropy
from hir_sdk.evaluation.pipeline import ABConfig, ABRun, run_ab_on_graph
from hir_sdk.graph import TemporalGraph
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.sequence.config import MultiStageConfig, UserModelConfig
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.config import ModelSizes


@dataclass(frozen=True)
class ScalingPoint:
    family: str  # "encoder" or "user model"
    size: str  # what was varied, readable
    params: int
    train_tokens: int  # forward and backward
    forward_tokens: int  # forward only (the EMA teacher)
    ne: float

    @property
    def compute(self) -> float:
        """Training FLOPs, the usual 6 N T (forward and backward) plus 2 N T forward-only."""
        return 6.0 * self.params * self.train_tokens + 2.0 * self.params * self.forward_tokens


@dataclass(frozen=True)
class LogLinearFit:
    slope: float  # NE per decade of compute
    intercept: float
    r2: float

    def __call__(self, compute: np.ndarray | float) -> np.ndarray:
        return self.intercept + self.slope * np.log10(compute)


def fit_log_linear(compute: Sequence[float], ne: Sequence[float]) -> LogLinearFit:
    """Least-squares `NE = a + b log10(C)` and its R² (1 when the points lie on a line)."""
    x, y = np.log10(np.asarray(compute, dtype=np.float64)), np.asarray(ne, dtype=np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or not np.isfinite(x).all() or not np.isfinite(y).all():
        raise ValueError("a log-linear fit needs at least 3 finite points with distinct compute")
    slope, intercept = np.polyfit(x, y, 1)
    residual = float(np.sum((y - (intercept + slope * x)) ** 2))
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - residual / total if total > 0 else 1.0
    return LogLinearFit(float(slope), float(intercept), r2)


def render_scaling(points: Sequence[ScalingPoint]) -> list[str]:
    """A Markdown table per family with its fit."""
    lines: list[str] = []
    for family in dict.fromkeys(p.family for p in points):
        mine = [p for p in points if p.family == family]
        fit = fit_log_linear([p.compute for p in mine], [p.ne for p in mine])
        lines += [
            f"**{family}**: NE = {fit.intercept:.4f} {fit.slope:+.4f} log10(C), R² = {fit.r2:.3f}",
            "",
            "| size | parameters | training tokens | compute (FLOPs) | test NE |",
            "|---|---:|---:|---:|---:|",
            *(
                f"| {p.size} | {p.params:,} | {p.train_tokens + p.forward_tokens:,} | "
                f"{p.compute:.3g} | {p.ne:.4f} |"
                for p in mine
            ),
            "",
        ]
    return lines


def scaling_svg(points: Sequence[ScalingPoint], *, title: str = "Test NE vs compute") -> str:
    """Measured NE against log10(compute) per family, with each family's fitted line."""
    series = []
    for family in dict.fromkeys(p.family for p in points):
        mine = sorted((p for p in points if p.family == family), key=lambda p: p.compute)
        x = np.log10([p.compute for p in mine])
        fit = fit_log_linear([p.compute for p in mine], [p.ne for p in mine])
        series.append((f"{family} (measured)", x, np.array([p.ne for p in mine])))
        series.append((f"{family} fit, R² {fit.r2:.2f}", x[[0, -1]], fit(10 ** x[[0, -1]])))
    return line_chart(series, title=title, x_label="log10 training FLOPs", y_label="test NE")


def _params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def encoder_sweep(
    data: str | Path,
    graph: TemporalGraph,
    sizes: Sequence[tuple[str, ModelSizes]],
    base: TrainConfig,
    work: str | Path,
    *,
    ab: ABConfig | None = None,
    snapshot_times: Sequence[int] | None = None,
) -> list[ScalingPoint]:
    """One point per encoder size: train (with `base`, its sizes replaced, as a refresh
    run: a run that chose its checkpoint on validation would have read the window the
    A/B's rankers fit on), snapshot (at `snapshot_times`, default the A/B's refresh
    times), A/B (`ab`'s settings, XGBoost + HIR against XGBoost)."""
    ab = dataclasses.replace(
        ab or ABConfig(n_bootstrap=50), control="xgboost", treatment="xgboost+hir"
    )
    points = []
    for name, model in sizes:
        run = Path(work) / f"encoder_{name.replace(' ', '_')}"
        trainer = Trainer(data, run, dataclasses.replace(base, model=model, select="last"))
        trainer.fit(progress=False)
        records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        hir = build_hir_lookup(run, data, graph, times=snapshot_times, seed=base.seed)
        result = run_ab_on_graph(graph, ab, hir=hir)
        points.append(
            ScalingPoint(
                family="encoder",
                size=name,
                params=_params(trainer.student) + _params(trainer.scorer),
                train_tokens=sum(int(r["student_tokens"]) for r in records),
                forward_tokens=sum(int(r["teacher_tokens"]) for r in records),
                ne=_ne(result, "xgboost+hir"),
            )
        )
    return points


def user_model_sweep(
    graph: TemporalGraph,
    hir: HirLookup,
    sizes: Sequence[tuple[str, UserModelConfig]],
    base: MultiStageConfig,
    *,
    ab: ABConfig | None = None,
) -> list[ScalingPoint]:
    """One point per user-model size: the multi-stage arm of the A/B on `hir` (`ab`'s
    settings, against XGBoost)."""
    ab = dataclasses.replace(
        ab or ABConfig(n_bootstrap=50), control="xgboost", treatment="multistage"
    )
    points = []
    for name, user_model in sizes:
        config = dataclasses.replace(
            ab, multistage=dataclasses.replace(base, user_model=user_model)
        )
        result = run_ab_on_graph(graph, config, hir=hir)
        ranker = result.models["multistage"].model
        points.append(
            ScalingPoint(
                family="user model",
                size=name,
                params=_params(ranker.user_model) + _params(ranker.ranker),
                train_tokens=ranker.training_tokens,
                forward_tokens=0,
                ne=_ne(result, "multistage"),
            )
        )
    return points


def _ne(result: ABRun, arm: str) -> float:
    test = result.predictions
    return float(normalized_entropy(test["label"].to_numpy(), test[f"p_{arm}"].to_numpy()))
