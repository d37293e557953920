"""`hir run`: the whole pipeline on a dataset folder in the input format.

1. validate the data and build the temporal graph;
2. train the encoder on the first half of the training window, so the rankers can be
   fitted on the days after it, and refresh it: two refresh runs, each warm-started from
   the encoder before it, train until the validation and the test start
   (`--refresh-steps`; 0 keeps one encoder, its last checkpoint);
3. embed users and ads at three refresh times, each with the newest encoder trained
   before it, with interest clusters and BoM tokens, and new ads on their creation and
   daily in between (each snapshot sees only edges before its time);
4. retrieval: recall@K of the ads users convert on in the test window, from the
   test-start snapshot (BoM inverted index, exact k-NN, popularity);
5. offline A/B on the test window: XGBoost + HIR features against the XGBoost baseline,
   both fitted on the examples after the first encoder's window, each with its tree depth
   and minimum child weight chosen on validation, paired user bootstrap;
6. export the newest encoder and the test-start snapshot's BoM quantizer to ONNX and
   check them against torch.

Content features are on when the data has a content table (a `--config` file that sets
`use_content` decides otherwise; its other keys change only what they set). Everything
is written into `--out`, which must be absent or empty and may not lie inside `--data`;
`--overwrite` replaces an earlier `hir run` output (never another folder). `job.toml` in
`--out` records every setting of the job.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.schema.dataset import CONTENT_FILE
from hir_sdk.schema.manifest import DAY

if TYPE_CHECKING:
    from hir_sdk.evaluation.conversion_retrieval import ConversionRecall
    from hir_sdk.evaluation.pipeline import ABConfig, ABRun
    from hir_sdk.export.export_run import ExportResult
    from hir_sdk.graph import TemporalGraph
    from hir_sdk.training import TrainConfig

JOB_FILE = "job.toml"


def add_job_options(parser: argparse.ArgumentParser) -> None:
    """The options `hir run` and `hir demo` share: the encoder's schedule and the A/B."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=at_least(1), default=300, help="encoder training steps")
    parser.add_argument(
        "--refresh-steps",
        type=at_least(0),
        default=None,
        help="steps of each warm-started refresh run (default a third of --steps; 0: no "
        "refresh, one encoder, its last checkpoint)",
    )
    parser.add_argument("--bootstrap", type=at_least(1), default=200, help="A/B user resamples")
    parser.add_argument(
        "--config",
        help="the encoder's training settings, a `hir fit` TOML file, over the defaults "
        "(batches of 64, content features on when the data has content; the file decides "
        "them only where it sets them); --steps, --seed and the refresh schedule still apply",
    )


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run",
        help="run the end-to-end pipeline on a dataset folder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", required=True, help="dataset folder (the input format)")
    parser.add_argument("--out", required=True, help="output folder (absent or empty)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that hir run wrote (never another folder)",
    )
    add_job_options(parser)
    parser.set_defaults(run=run)


class Progress:
    """Prints each finished stage with the elapsed time and, from the stages' expected
    shares of the whole, an estimate of what remains."""

    def __init__(self, shares: list[float]) -> None:
        self.started = time.perf_counter()
        self.shares, self.done = shares, 0

    def __call__(self, name: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        share = sum(self.shares[: self.done]) / sum(self.shares)
        left = "" if self.done == len(self.shares) else f", ~{elapsed / share - elapsed:.0f}s left"
        print(f"[{self.done}/{len(self.shares)} {elapsed:6.1f}s{left}] {name}", flush=True)


@dataclass(frozen=True)
class JobResult:
    graph: TemporalGraph
    runs: list[Path]
    recall: ConversionRecall
    ab: ABRun
    exported: ExportResult


def base_config(config: str | None, has_content: bool) -> TrainConfig:
    """The encoder's settings before the job's schedule: the defaults with content
    features on when there is content, and over them `config` (a `hir fit` TOML file),
    which decides content features only when it sets `use_content`."""
    from hir_sdk.training import TrainConfig
    from hir_sdk.training.config import config_from_dict, read_config_table

    if not config:
        return TrainConfig(batch_size=64, use_content=has_content)
    raw = read_config_table(config)
    loaded = config_from_dict(raw, Path(config))
    if "use_content" in raw:
        return loaded
    return dataclasses.replace(loaded, use_content=has_content)


def ab_config(args: argparse.Namespace) -> ABConfig:
    """The A/B's settings (checked before any work): XGBoost + HIR against XGBoost."""
    from hir_sdk.evaluation.pipeline import ABConfig

    return ABConfig(
        control="xgboost", treatment="xgboost+hir", n_bootstrap=args.bootstrap, seed=args.seed
    )


def job_settings(
    data: str, args: argparse.Namespace, base: TrainConfig, ab: ABConfig
) -> dict[str, object]:
    """Every setting of the job, as written to `job.toml`: the data, the schedule, the A/B
    and the encoder's settings before the schedule (each run's `config.toml` holds what
    that run trained with)."""
    return {
        "data": data,
        "seed": args.seed,
        "steps": args.steps,
        "refresh_steps": refresh_steps(args),
        "ab": {"control": ab.control, "treatment": ab.treatment, "bootstrap": ab.n_bootstrap},
        "encoder": base.to_dict(),
    }


def refresh_steps(args: argparse.Namespace) -> int:
    return max(args.steps // 3, 1) if args.refresh_steps is None else args.refresh_steps


def run_job(
    data: Path,
    tmp: Path,
    args: argparse.Namespace,
    base: TrainConfig,
    ab_settings: ABConfig,
    step: Progress,
    *,
    truth: Path | None = None,
) -> JobResult:
    """Stages 1-6 of the module docstring on the dataset folder `data`, written into the
    output folder being made, `tmp`; `truth` is a synthetic world's planted truth."""
    import tomli_w

    from hir_sdk.evaluation.conversion_retrieval import conversion_recall, repeats_conversions
    from hir_sdk.evaluation.hir_snapshots import build_hir_lookup
    from hir_sdk.evaluation.pipeline import run_ab_on_graph, write_report
    from hir_sdk.export import export_run
    from hir_sdk.graph import build_graph_from_dir, save_graph
    from hir_sdk.interests import write_embeddings
    from hir_sdk.training.as_of import training_midpoint
    from hir_sdk.training.refresh_chain import refresh_ends, train_refreshed

    try:  # data written into the output (hir demo): its path inside it, which stays valid
        shown = data.resolve().relative_to(tmp.resolve()).as_posix()
    except ValueError:
        shown = str(data.resolve())
    (tmp / JOB_FILE).write_text(tomli_w.dumps(job_settings(shown, args, base, ab_settings)))
    graph = build_graph_from_dir(data)
    save_graph(graph, tmp / "graph")
    step(f"validated and built the graph: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges")

    t = graph.manifest.time
    refresh = refresh_steps(args)
    every = max(args.steps // 3, 1)
    first = dataclasses.replace(
        base, steps=args.steps, seed=args.seed, eval_every=every, checkpoint_every=every
    )
    ends = refresh_ends(t, training_midpoint(t), refresh=refresh > 0)
    runs = train_refreshed(data, tmp, first, ends, refresh_steps=refresh or None, progress=True)
    days = (ends["run"] - t.start) / DAY
    step(
        f"trained the encoder for {args.steps} steps on the first {days:.0f} days"
        + (
            f", refreshed it until the validation and the test start "
            f"({refresh} warm-started steps each)"
            if len(runs) > 1
            else ""
        )
    )
    hir = build_hir_lookup(runs, data, graph, seed=args.seed)
    latest = hir.full_snapshots[-1]
    write_embeddings(latest, tmp / "embeddings")
    sizes = latest.meta["bom"]
    step(
        f"embedded users and ads at {len(hir.full_snapshots)} refresh times, new ads "
        f"a minute after their creation ({hir.created_rows:,}) and daily in between "
        f"({len(hir.snapshots) - len(hir.full_snapshots)} arrival snapshots; BoM "
        f"{sizes['codebooks']}x{sizes['codewords']}, relative error "
        f"{sizes['relative_error']:.3f})"
    )
    # where no user converts twice on one ad (ratings: one per movie), what a user already
    # had is left out of their lists; in ads logs users do convert again
    exclude_seen = not repeats_conversions(graph)
    recall = conversion_recall(graph, latest, exclude_seen=exclude_seen)
    step(
        "retrieval of the ads users convert on: BoM index, exact k-NN, popularity"
        + (" (what a user had before is left out)" if exclude_seen else "")
    )
    ab = run_ab_on_graph(graph, ab_settings, truth=truth, hir=hir)
    write_report(ab, tmp / "ab")
    step("offline A/B: XGBoost + HIR features vs XGBoost on the test window")
    exported = export_run(
        runs[-1],  # the encoder that embedded the test-start snapshot
        data,
        tmp / "onnx",
        embeddings=tmp / "embeddings",
        check=True,
        check_nodes=256,
    )
    step(f"exported {', '.join(exported.files)} ({runs[-1].name}) and checked them against torch")
    return JobResult(graph, runs, recall, ab, exported)


# the stages' shares of a whole job, for the estimate of what remains: the seconds each
# took in the recorded `make demo` run (benchmarks/results/demo.md), in stage order:
# graph, training, snapshots, retrieval, A/B, export
STAGE_SHARES = [3.0, 650.0, 500.0, 1.0, 230.0, 46.0]


def print_results(result: JobResult, out: Path) -> None:
    """The graph summary, ONNX parity, retrieval recall and the A/B table with its
    verdict, then where the outputs are."""
    from hir_sdk.evaluation.report import metric_rows
    from hir_sdk.graph import summarize

    print()
    print(summarize(result.graph).render())
    print("\nONNX parity (onnxruntime vs torch, real batches):")
    for parity in result.exported.parity:
        print("  " + parity.render())
    if not result.exported.ok:  # shown, not fatal: `hir export --check` is the gate that fails
        print("  warning: the parity check failed; see docs/export.md (Parity)")
    print("\nRetrieval from the test-start snapshot: " + "\n".join(result.recall.render()))
    report = result.ab.report
    print(f"\n{report.title}\n")
    header = ("metric", report.ab.control, report.ab.treatment, "delta [95% CI]", "relative")
    rows = [header, *metric_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    print(f"\nverdict: {report.ab.verdict}")
    print(
        f"\nreport: {out / 'ab' / 'report.html'} (and report.md)   "
        f"encoder runs: {', '.join(str(out / r.name) for r in result.runs)}   "
        f"embeddings: {out / 'embeddings'}   ONNX: {out / 'onnx'}   settings: {out / JOB_FILE}"
    )


def run(args: argparse.Namespace) -> int:
    from hir_sdk.errors import InputError
    from hir_sdk.io.atomic import atomic_output_dir, check_free

    data, out = Path(args.data), Path(args.out)
    if not data.is_dir():
        raise InputError("dataset folder not found", file=data)
    check_free(out, kind="job", overwrite=args.overwrite, inputs=(data,))  # before any work
    base = base_config(args.config, (data / CONTENT_FILE).exists())
    ab = ab_config(args)
    step = Progress(STAGE_SHARES)
    with atomic_output_dir(out, kind="job", overwrite=args.overwrite, inputs=(data,)) as tmp:
        result = run_job(data, tmp, args, base, ab, step)
    print_results(result, out)
    return 0
