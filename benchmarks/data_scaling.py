"""Data scaling: test NE of XGBoost, XGBoost + HIR and the multi-stage ranker against the
number of training examples, with a log-linear fit per arm and where the multi-stage
ranker's line crosses the others' (`hir_sdk.evaluation.data_scaling`).

    hir run --data D --out J                       # or any job folder with its three runs
    python benchmarks/data_scaling.py --data D --job J [--shares 0.01 0.03 0.1 0.3 1] \
        [--svg FILE] [--record FILE]

The A/B's examples and the job's snapshots are built once; each arm is fitted on nested,
seeded shares of the training window (the XGBoost arms tuned on validation, as in `hir
ab`; the multi-stage ranker on every example of its share, without its default cap) and
scored on the whole test window.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from publish import publish

from hir_sdk.evaluation.data_scaling import data_sweep, data_sweep_svg, render_data_sweep
from hir_sdk.evaluation.pipeline import ABConfig, ranking_data
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.sequence import MultiStageConfig

ARMS = ("xgboost", "xgboost+hir", "multistage")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder")
    parser.add_argument("--job", type=Path, required=True, help="a `hir run` output folder")
    parser.add_argument("--shares", type=float, nargs="+", default=[0.01, 0.03, 0.1, 0.3, 1.0])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--svg", help="write the plot here")
    parser.add_argument("--record")
    args = parser.parse_args()
    started = time.perf_counter()
    graph = build_graph_from_dir(args.data)
    runs = [args.job / name for name in ("run", "run_validation", "run_test")]
    hir = build_hir_lookup([r for r in runs if r.is_dir()], args.data, graph, seed=0)
    uncapped = dataclasses.replace(MultiStageConfig(), max_train_examples=10**9)
    config = ABConfig(control="xgboost", treatment="xgboost+hir", multistage=uncapped)
    _, data = ranking_data(graph, config, hir)
    points = data_sweep(data, args.arms, args.shares, config, progress=True)
    name = graph.manifest.name
    lines = [
        f"#### Test NE against training examples on {name}",
        "",
        "command: `python benchmarks/data_scaling.py --data D --job J --shares "
        + " ".join(f"{s:g}" for s in args.shares)
        + " --arms "
        + " ".join(args.arms)
        + f"`; {data.examples['test'].height:,} test examples, "
        f"{int(data.labels('test').sum()):,} conversions; "
        f"{time.perf_counter() - started:.0f} s in all",
        "",
        *render_data_sweep(points, neural="multistage"),
    ]
    if args.svg:
        Path(args.svg).write_text(
            data_sweep_svg(points, title=f"Test NE vs training examples, {name}"),
            encoding="utf-8",
        )
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
