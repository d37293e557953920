"""The multi-stage ranker's training settings against tuned XGBoost, on one job's encoders.

    hir run --data D --out J                       # or any job folder with its three runs
    python benchmarks/multistage_settings.py --data D --job J \
        [--variants default no-hir-columns uncapped bins-8 bins-16 epochs-8 lr-3e-4 ids-64 \
        user-dropout-0.1 dropout] \
        [--bootstrap 100] [--record FILE]

Each variant is one `MultiStageConfig`; the A/B is `hir ab`'s (`run_ab_on_graph`, control
`xgboost` tuned on validation, treatment `multistage`) on the job's snapshots, built once
and shared by every variant, so the rows differ only in the ranker's settings. The table
gives the test NE delta with its paired user-bootstrap interval, the validation
conversion log loss after each epoch (training keeps the best epoch) and the time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from publish import publish

from hir_sdk.evaluation.pipeline import ABConfig, run_ab_on_graph
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.sequence import MultiStageConfig
from hir_sdk.ranking.sequence.config import OnlineRankerConfig, UserModelConfig

VARIANTS = {
    "default": MultiStageConfig(),
    "no-hir-columns": MultiStageConfig(hir_columns=False),
    "uncapped": MultiStageConfig(max_train_examples=10**9, max_valid_examples=10**9),
    "bins-8": MultiStageConfig(dense_bins=8),
    "bins-16": MultiStageConfig(dense_bins=16),
    "epochs-8": MultiStageConfig(epochs=8),
    "lr-3e-4": MultiStageConfig(epochs=8, lr=3e-4),
    "ids-64": MultiStageConfig(
        epochs=4,
        user_model=UserModelConfig(id_buckets=64),
        ranker=OnlineRankerConfig(id_buckets=64),
    ),
    "user-dropout-0.1": MultiStageConfig(user_model=UserModelConfig(dropout=0.1)),
    "dropout": MultiStageConfig(
        epochs=4,
        user_model=UserModelConfig(dropout=0.3),
        ranker=OnlineRankerConfig(dropout=0.5),
    ),
}
DESCRIPTIONS = {
    "default": "the defaults (2 epochs; dense inputs: as-of features and HIR columns)",
    "no-hir-columns": "the as-of features alone as dense inputs",
    "uncapped": "every training and validation example (no seeded sample)",
    "bins-8": "piecewise-linear dense inputs, 8 quantile bins per column",
    "bins-16": "piecewise-linear dense inputs, 16 quantile bins per column",
    "epochs-8": "8 epochs",
    "lr-3e-4": "8 epochs, learning rate 3e-4",
    "ids-64": "4 epochs, 64 hash buckets for every id (both stages)",
    "user-dropout-0.1": "dropout 0.1 in the user model (none by default)",
    "dropout": "4 epochs, dropout 0.3 (user model) and 0.5 (online ranker)",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder")
    parser.add_argument("--job", type=Path, required=True, help="a `hir run` output folder")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--bootstrap", type=int, default=100, help="user resamples")
    parser.add_argument("--record")
    args = parser.parse_args()
    graph = build_graph_from_dir(args.data)
    runs = [args.job / name for name in ("run", "run_validation", "run_test")]
    hir = build_hir_lookup([r for r in runs if r.is_dir()], args.data, graph, seed=0)
    lines = [
        f"#### The multi-stage ranker's settings against XGBoost on {graph.manifest.name}",
        "",
        "command: `python benchmarks/multistage_settings.py --data D --job J --variants "
        + " ".join(args.variants)
        + f" --bootstrap {args.bootstrap}`",
        "",
        "| variant | NE xgboost -> multistage | NE delta [95% CI] | validation log loss "
        "by epoch | seconds |",
        "|---|---:|---:|---|---:|",
    ]
    control = None
    for name in args.variants:
        started = time.perf_counter()
        config = ABConfig(
            control="xgboost",
            treatment="multistage",
            multistage=VARIANTS[name],
            n_bootstrap=args.bootstrap,
        )
        run = run_ab_on_graph(graph, config, hir=hir)
        ne = run.report.ab.metric("ne")
        log = run.models["multistage"].model.history_log
        epochs = ", ".join(f"{h['val_conv_logloss']:.4f}" for h in log)
        pct = [100 * x / ne.control for x in (ne.delta.estimate, ne.delta.low, ne.delta.high)]
        lines.append(
            f"| {DESCRIPTIONS[name]} | {ne.control:.4f} -> {ne.treatment:.4f} | "
            f"{pct[0]:+.2f}% [{pct[1]:+.2f}%, {pct[2]:+.2f}%] | {epochs} | "
            f"{time.perf_counter() - started:.0f} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)  # progress; the table is stdout's
        control = control or run.searches["xgboost"].chosen.describe()
    lines += ["", f"XGBoost (control), chosen on validation: {control}"]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
