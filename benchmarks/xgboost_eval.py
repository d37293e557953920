"""The XGBoost baseline's fit against the scikit-learn wrapper's, side by side: the same
trees, and the time of each over the A/B's tuning grid.

    .venv/bin/python benchmarks/xgboost_eval.py --record benchmarks/results/xgboost_eval.md

Data: a synthetic world (`--scale`, seed 0), the as-of features of every labelled
exposure of its train window (fit) and validation window (early stopping), as `hir ab`
computes them. Each grid point (`XGBOOST_GRID`) is fitted by `XGBoostBaseline`, whose
evaluation set is a plain `DMatrix`, and by `xgboost.XGBClassifier` with the same
settings, whose evaluation set is a `QuantileDMatrix`. Times: the best of `--repeat`
fits each. Ratio = wrapper time / ours (> 1: ours faster). "Same trees": equal log loss
at every round and equal margins on the test window.
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import xgboost as xgb
from publish import publish

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.baselines import XGBoostBaseline, XGBoostConfig
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.xgboost_search import XGBOOST_GRID
from hir_sdk.synth import SCALES, generate_world, write_world


def _best(fit, repeat: int) -> tuple[float, object]:
    times, model = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        model = fit()
        times.append(time.perf_counter() - start)
    return min(times), model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="quick")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--record", help="append the Markdown block to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(generate_world(SCALES[args.scale], 0), Path(tmp) / "data")
        graph = build_graph_from_dir(data)
    features = AsOfFeatures(graph)
    windows = {}
    for window in ("train", "validation", "test"):
        f = build_examples(graph, window).frame
        x = features.compute(f["user"].to_numpy(), f["ad"].to_numpy(), f["ts"].to_numpy())
        windows[window] = (x, f["label"].to_numpy())
    (xt, yt), (xv, yv), (xs, _) = windows["train"], windows["validation"], windows["test"]
    lines = [
        f"#### XGBoost baseline vs the scikit-learn wrapper ({datetime.date.today().isoformat()})",
        "",
        f"command: `python benchmarks/xgboost_eval.py --scale {args.scale} --repeat "
        f"{args.repeat}`; {len(xt):,} fit and {len(xv):,} validation examples, "
        f"{xt.width} features",
        "",
        "| depth | min child weight | trees | ours (s) | wrapper (s) | wrapper / ours "
        "| same trees |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    total_ours = total_theirs = 0.0
    for point in XGBOOST_GRID:
        config = XGBoostConfig(**point)
        t_ours, ours = _best(partial(XGBoostBaseline(config).fit, xt, yt, xv, yv), args.repeat)
        wrapper = xgb.XGBClassifier(**config.classifier_params())
        fit = partial(wrapper.fit, xt.to_numpy(), yt, eval_set=[(xv.to_numpy(), yv)])
        t_theirs, theirs = _best(partial(fit, verbose=False), args.repeat)
        total_ours, total_theirs = total_ours + t_ours, total_theirs + t_theirs
        x = xs.to_numpy()
        same = ours._model.evals_result() == theirs.evals_result() and np.array_equal(
            ours._model.predict(x, output_margin=True), theirs.predict(x, output_margin=True)
        )
        lines.append(
            f"| {config.max_depth} | {config.min_child_weight:g} | {ours.best_iteration + 1} | "
            f"{t_ours:.2f} | {t_theirs:.2f} | {t_theirs / t_ours:.2f}x | "
            f"{'yes' if same else 'no'} |"
        )
    lines.append(
        f"| all | | | {total_ours:.2f} | {total_theirs:.2f} | {total_theirs / total_ours:.2f}x | |"
    )
    publish(lines, args.record)


if __name__ == "__main__":
    main()
