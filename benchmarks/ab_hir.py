"""Offline A/B of the HIR rankers against the XGBoost baseline on a synthetic world:
XGBoost + HIR features, and the multi-stage sequence ranker, each against XGBoost, on
the test window with paired user-bootstrap intervals, overall and on the cold-start
advertiser and sparse-user slices.

    .venv/bin/python benchmarks/ab_hir.py --scale small \\
        --record benchmarks/results/ab_hir.md

Protocol: synthesize the world (`--seed`, default 0), then `hir run`'s job on it
(`hir_sdk.pipeline.run_job`, the same code as `hir run` and `make demo`): the encoder
trained `--steps` steps on the first half of the training window and refreshed with
`--refresh-steps` warm-started steps until the validation and the test start (default a
third of `--steps`; 0: one encoder), snapshots at the three refresh times with creation
and arrival snapshots, retrieval recall, the XGBoost + HIR A/B, the ONNX export.
`--config FILE` is a `hir fit` config laid over the encoder's defaults, as in
`hir run --config`. With `multistage`, `xgboost+multistage` or `xgboost+hir+multistage`
(XGBoost, without or with the HIR columns, with the multi-stage ranker's score as a
column) among `--treatments`, its A/B runs on the job's graph and snapshots
(`run_ab_on_graph`), both arms fitted after the first encoder's window (see
docs/ranking.md). Goal (issue 8): HIR features improve NE by >= 2% relative, more on
cold-start advertisers, with intervals excluding zero.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from publish import publish

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.errors import InputError
from hir_sdk.evaluation.pipeline import ABConfig, check_windows, run_ab_on_graph, write_report
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.pipeline import TREATMENTS, JobSettings, run_job
from hir_sdk.synth import SCALES, TRUTH_DIR, generate_world, write_world
from hir_sdk.training.as_of import first_window_end
from hir_sdk.training.refresh_chain import refresh_ends


def _row(name: str, delta) -> str:
    d = delta.delta
    mark = " (significant)" if d.excludes_zero() else ""
    return (
        f"| {name} | {delta.control:.4f} | {delta.treatment:.4f} | {d.estimate:+.4f} "
        f"[{d.low:+.4f}, {d.high:+.4f}]{mark} | {100 * delta.relative:+.2f}% |"
    )


def table(treatment: str, run, seconds: float) -> list[str]:
    """One A/B's verdict, overall metrics and the cold-start and sparse-user slices."""
    ab = run.report.ab
    lines = [
        f"## {treatment} vs xgboost ({seconds:.0f} s)",
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
        if s.name.startswith(("cold-start", "sparse", "new")):
            for d in s.deltas:
                lines.append(_row(f"{s.name}: {d.spec.label}", d))
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=at_least(1), default=300)
    parser.add_argument(
        "--refresh-steps",
        type=at_least(0),
        default=None,
        help="steps of each warm-started refresh run (default a third of --steps; 0: none)",
    )
    parser.add_argument("--config", type=Path, default=None, help="a `hir fit` TOML config")
    parser.add_argument("--seed", type=int, default=0, help="the world's and the job's seed")
    parser.add_argument("--bootstrap", type=at_least(1), default=200)
    parser.add_argument("--out", type=Path, default=None, help="keep the work folder here")
    parser.add_argument("--record", default=None)
    parser.add_argument(
        "--treatments",
        nargs="+",
        choices=TREATMENTS,
        default=list(TREATMENTS),
        help="which A/Bs to report against the XGBoost baseline",
    )
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="hir_ab_"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    write_world(generate_world(SCALES[args.scale], seed=args.seed), work / "data")
    settings = JobSettings.for_data(
        work / "data",
        args.config,
        seed=args.seed,
        steps=args.steps,
        refresh_steps=args.refresh_steps,
        bootstrap=args.bootstrap,
    )
    took: dict[str, float] = {}  # seconds of each stage of the job, by its first word
    last = [time.perf_counter()]

    def progress(line: str) -> None:
        now = time.perf_counter()
        took[line.split(" ")[0]], last[0] = now - last[0], now
        print(line, flush=True)

    # each extra A/B's windows, checked as `hir run` checks its own, before the job's
    # training (a stacked arm the world's windows cannot split fails here, not an hour on)
    graph = build_graph_from_dir(work / "data")
    t = graph.manifest.time
    fit_from = refresh_ends(t, first_window_end(graph), refresh=settings.refresh > 0)["run"]
    try:
        for treatment in args.treatments:
            config = ABConfig(control="xgboost", treatment=treatment)
            check_windows(graph, config, fit_from=fit_from)
    except InputError as err:
        print(f"ab_hir.py: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    del graph
    truth = work / "data" / TRUTH_DIR
    result = run_job(work / "data", work, settings, progress=progress, truth=truth)
    job_seconds = time.perf_counter() - started
    command = (
        f"`python benchmarks/ab_hir.py --scale {args.scale} --steps {args.steps}"
        + (f" --refresh-steps {args.refresh_steps}" if args.refresh_steps is not None else "")
        + (f" --config {args.config}" if args.config else "")
        + (f" --seed {args.seed}" if args.seed else "")
        + f" --treatments {' '.join(args.treatments)}`"
    )
    lines = [
        f"# Offline A/B of the HIR rankers on the `{args.scale}` synthetic world",
        "",
        f"{command} ({time.strftime('%Y-%m-%d')}; `hir run`'s job, seconds per stage: "
        f"{', '.join(f'{name} {sec:.0f}' for name, sec in took.items())}; "
        f"encoders {', '.join(r.name for r in result.runs)}).",
        "",
    ]
    if "xgboost+hir" in args.treatments:
        lines += table("xgboost+hir", result.ab, took["offline"])
    for treatment in (t for t in args.treatments if t != "xgboost+hir"):
        mark = time.perf_counter()
        config = ABConfig(
            control="xgboost", treatment=treatment, n_bootstrap=args.bootstrap, seed=args.seed
        )
        run = run_ab_on_graph(result.graph, config, truth=truth, hir=result.hir)
        folder = work / f"ab_{treatment.replace('+', '_')}"
        write_report(run, folder, inputs=[work / "data", *result.runs])
        lines += table(treatment, run, time.perf_counter() - mark)
    whole = time.perf_counter() - started
    lines.append(f"whole benchmark: {whole:.0f} s (the world and the job {job_seconds:.0f} s)")
    publish(lines, args.record)


if __name__ == "__main__":
    main()
