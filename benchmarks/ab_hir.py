"""Offline A/B of the HIR rankers against the XGBoost baseline on a synthetic world:
XGBoost + HIR features, and the multi-stage sequence ranker, each against XGBoost, on
the test window with paired user-bootstrap intervals, overall and on the cold-start
advertiser and sparse-user slices.

    .venv/bin/python benchmarks/ab_hir.py --scale small \\
        --record benchmarks/results/ab_hir.md

Protocol: synthesize the world (`--seed`, default 0), train the encoder on the first
half of the training window (`train_until` = its midpoint, start + 16 days; `--steps`
300, batch 64, content features, the default token width or `--dim`; `--config FILE`: a
`hir fit` config instead), embed users and ads at `train_until`, the validation start and
the test start (one HIR lookup shared by both A/Bs), then `run_ab_on_graph` twice. Both
arms of each A/B fit on the training examples after `train_until` (see docs/ranking.md).
`--refresh`: two more encoders, trained from scratch until the validation start and until
the test start, embed those snapshots, and every encoder keeps its last checkpoint (a
refresh run: nothing after its `train_until` is read, not even for model selection).
`--warm-start` starts each refresh run from the previous encoder's weights (`init_from`)
and trains it `--refresh-steps` steps (`train_refreshed`, `hir_sdk.training.refresh_chain`).
Goal (issue 8): HIR features improve NE by >= 2% relative, more on cold-start
advertisers, with intervals excluding zero.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from publish import publish

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.evaluation.hir_snapshots import build_hir_lookup
from hir_sdk.evaluation.pipeline import ABConfig, run_ab_on_graph, write_report
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.schema.manifest import iso_time
from hir_sdk.synth import SCALES, TRUTH_DIR, generate_world, write_world
from hir_sdk.training import TrainConfig, load_config
from hir_sdk.training.as_of import training_midpoint
from hir_sdk.training.config import ModelSizes
from hir_sdk.training.refresh_chain import refresh_ends, train_refreshed


def _row(name: str, delta) -> str:
    d = delta.delta
    mark = " (significant)" if d.excludes_zero() else ""
    return (
        f"| {name} | {delta.control:.4f} | {delta.treatment:.4f} | {d.estimate:+.4f} "
        f"[{d.low:+.4f}, {d.high:+.4f}]{mark} | {100 * delta.relative:+.2f}% |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=at_least(1), default=300)
    parser.add_argument(
        "--dim", type=int, default=ModelSizes.dim, help="the encoder's token width (model.dim)"
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="re-train the encoder until the validation and the test start (refresh runs)",
    )
    parser.add_argument(
        "--warm-start",
        action="store_true",
        help="with --refresh: start each refresh run from the previous encoder (init_from)",
    )
    parser.add_argument(
        "--refresh-steps",
        type=at_least(1),
        default=None,
        help="steps of a refresh run (default --steps)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a `hir fit` TOML config for the encoders (its steps and evaluation cadence "
        "are replaced by --steps and the script's; default: TrainConfig with content on)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the synthetic world's seed")
    parser.add_argument("--bootstrap", type=at_least(1), default=200)
    parser.add_argument("--out", type=Path, default=None, help="keep the work folder here")
    parser.add_argument("--record", default=None)
    parser.add_argument(
        "--treatments",
        nargs="+",
        choices=("xgboost+hir", "multistage"),
        default=["xgboost+hir", "multistage"],
        help="which A/Bs to run against the XGBoost baseline",
    )
    parser.add_argument(
        "--no-tune",
        dest="tune",
        action="store_false",
        help="XGBoost arms with the default configuration, not chosen on validation",
    )
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="hir_ab_"))
    started = time.perf_counter()
    write_world(generate_world(SCALES[args.scale], seed=args.seed), work / "data")
    graph = build_graph_from_dir(work / "data")
    t = graph.manifest.time
    ends = refresh_ends(t, training_midpoint(t), refresh=args.refresh)
    base = (
        load_config(args.config)
        if args.config
        else TrainConfig(use_content=True, model=ModelSizes(dim=args.dim))
    )
    first = dataclasses.replace(
        base, steps=args.steps, batch_size=64, eval_every=100, checkpoint_every=100
    )
    runs = train_refreshed(
        work / "data",
        work,
        first,
        ends,
        refresh_steps=args.refresh_steps,
        warm_start=args.warm_start,
    )
    trained = time.perf_counter()
    hir = build_hir_lookup(runs, work / "data", graph)
    embedded = time.perf_counter()
    tuning = "each XGBoost arm tuned on validation" if args.tune else "no tuning"
    encoders = "encoders (refresh runs)" if args.refresh else "encoder"
    lines = [
        f"# Offline A/B of the HIR rankers on the `{args.scale}` synthetic world",
        "",
        f"`python benchmarks/ab_hir.py --scale {args.scale} --steps {args.steps} "
        f"{'' if args.dim == ModelSizes.dim else f'--dim {args.dim} '}"
        f"{f'--config {args.config} ' if args.config else ''}"
        f"{'--refresh ' if args.refresh else ''}{'--warm-start ' if args.warm_start else ''}"
        f"{f'--refresh-steps {args.refresh_steps} ' if args.refresh_steps else ''}"
        f"{f'--seed {args.seed} ' if args.seed else ''}"
        f"--treatments {' '.join(args.treatments)}{'' if args.tune else ' --no-tune'}` "
        f"({encoders} trained until {', '.join(iso_time(e) for e in ends.values())}: "
        f"{trained - started:.0f} s; three snapshots: {embedded - trained:.0f} s; "
        f"2-core CPU; {tuning}).",
        "",
    ]
    for treatment in args.treatments:
        mark = time.perf_counter()
        run = run_ab_on_graph(
            graph,
            ABConfig(
                treatment=treatment,
                control="xgboost",
                n_bootstrap=args.bootstrap,
                tune=args.tune,
            ),
            truth=work / "data" / TRUTH_DIR,
            hir=hir,
        )
        write_report(
            run,
            work / f"ab_{treatment.replace('+', '_')}",
            overwrite=True,
            inputs=[work / "data", *runs],
        )
        ab = run.report.ab
        lines += [
            f"## {treatment} vs xgboost ({time.perf_counter() - mark:.0f} s)",
            "",
            f"{ab.verdict}. {ab.examples:,} test examples, {ab.positives:,} conversions, "
            f"{ab.n_bootstrap} user resamples.",
            "",
            "| metric / slice | xgboost | " + treatment + " | delta [95% CI] | relative |",
            "|---|---:|---:|---:|---:|",
            _row("NE (lower is better)", ab.metric("ne")),
            _row("ROC-AUC", ab.metric("auc")),
            _row("calibration (pred/obs)", ab.metric("calibration")),
        ]
        for s in ab.slices:
            if s.name.startswith(("cold-start", "sparse")):
                for d in s.deltas:
                    lines.append(_row(f"{s.name}: {d.spec.label}", d))
        lines.append("")
    publish(lines, args.record)


if __name__ == "__main__":
    main()
