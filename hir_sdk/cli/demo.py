"""`hir demo`: the whole pipeline, end to end, on the built-in synthetic world (or on
MovieLens-100K).

1. synthesize the world (with its planted truth), or with `--dataset movielens-100k` read
   MovieLens-100K and its knowledge graph from the installed `recbole` package;
2. validate and build the temporal graph;
3. train the encoder on the first half of the training window (`hir fit --until`; 16
   days of the synthetic world), so the rankers can be fitted on the days after it, and
   refresh it: two refresh runs (`hir fit --refresh --init-from`), each warm-started from
   the encoder before it, train until the validation and the test start
   (`--refresh-steps`; 0 keeps one encoder, its last checkpoint);
4. embed users and ads at three refresh times, each with the newest encoder trained
   before it, with interest clusters and BoM tokens (each snapshot sees only edges before
   its time; its codebooks are fitted on it alone);
5. retrieval: recall@K of the ads users convert on in the test window, from the
   test-start snapshot's BoM tokens (inverted index), exact k-NN and popularity;
6. offline A/B on the test window: XGBoost + HIR features against the XGBoost baseline,
   both fitted on the examples after the encoder's window, each with its tree depth and
   minimum child weight chosen on validation, paired user bootstrap;
7. export the newest encoder and the test-start snapshot's BoM quantizer to ONNX and
   check them against torch.

It ends with the A/B table and where the HTML report is. Everything is written into
`--out`, which must be absent or empty; `--overwrite` replaces an earlier demo output
(never another folder). The multi-stage sequence ranker is left to `hir ab --treatment
multistage`, which trains longer.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.datasets import MOVIELENS_100K, movielens_100k
from hir_sdk.graph import TemporalGraph, build_graph_from_dir, save_graph, summarize
from hir_sdk.io.atomic import atomic_output_dir, check_free
from hir_sdk.schema.manifest import DAY
from hir_sdk.synth import SCALES, TRUTH_DIR, generate_world, write_world

if TYPE_CHECKING:
    from hir_sdk.training import TrainConfig

SYNTHETIC = "synthetic"


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the end-to-end pipeline (synthetic world or MovieLens-100K)",
        description=__doc__,
    )
    parser.add_argument("--out", default="demo_out", help="output folder (absent or empty)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that hir demo wrote (never another folder)",
    )
    parser.add_argument(
        "--dataset",
        choices=[SYNTHETIC, MOVIELENS_100K],
        default=SYNTHETIC,
        help="the synthetic ads world (default) or MovieLens-100K (needs recbole installed)",
    )
    parser.add_argument("--scale", choices=sorted(SCALES), default="small", help="synthetic")
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
        help="the encoder's training settings, a `hir fit` TOML file (default: batches of "
        "64, content features on); --steps, --seed and the refresh schedule still apply",
    )
    parser.set_defaults(run=run)


class _Steps:
    def __init__(self, total: int) -> None:
        self.started = time.perf_counter()
        self.total, self.done = total, 0

    def __call__(self, name: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        print(f"[{self.done}/{self.total} {elapsed:6.1f}s] {name}", flush=True)


def _base_config(args: argparse.Namespace) -> TrainConfig:
    """The encoder's settings before the demo's schedule: `--config`, else the defaults
    with batches of 64 and content features on."""
    from hir_sdk.training import TrainConfig, load_config

    return load_config(args.config) if args.config else TrainConfig(batch_size=64, use_content=True)


def _train_encoders(
    tmp: Path, graph: TemporalGraph, args: argparse.Namespace, base: TrainConfig
) -> tuple[list[Path], int, int]:
    """The encoder run(s): one trained until the training window's midpoint, then (unless
    `--refresh-steps 0`) refresh runs until the validation and the test start, each
    warm-started from the one before (see `hir_sdk.training.refresh_chain`). Returns the
    run folders, the first run's `train_until` and the refresh steps."""
    from hir_sdk.training.as_of import training_midpoint
    from hir_sdk.training.refresh_chain import refresh_ends, train_refreshed

    t = graph.manifest.time
    refresh = max(args.steps // 3, 1) if args.refresh_steps is None else args.refresh_steps
    first = dataclasses.replace(
        base,
        steps=args.steps,
        seed=args.seed,
        eval_every=max(args.steps // 3, 1),
        checkpoint_every=max(args.steps // 3, 1),
    )
    ends = refresh_ends(t, training_midpoint(t), refresh=refresh > 0)
    runs = train_refreshed(
        tmp / "data", tmp, first, ends, refresh_steps=refresh or None, progress=True
    )
    return runs, ends["run"], refresh


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    check_free(out, kind="demo", overwrite=args.overwrite)  # before any import or work
    # the heavy stages load only when the demo runs (torch.onnx, xgboost, the encoder)
    from hir_sdk.evaluation.conversion_retrieval import conversion_recall
    from hir_sdk.evaluation.hir_snapshots import build_hir_lookup
    from hir_sdk.evaluation.pipeline import ABConfig, run_ab_on_graph, write_report
    from hir_sdk.evaluation.report import metric_rows
    from hir_sdk.export import export_run
    from hir_sdk.interests import write_embeddings

    # the A/B's and the encoder's settings are checked before any work, like the output
    # folder
    base = _base_config(args)
    ab_config = ABConfig(
        control="xgboost", treatment="xgboost+hir", n_bootstrap=args.bootstrap, seed=args.seed
    )
    step = _Steps(7)
    with atomic_output_dir(out, kind="demo", overwrite=args.overwrite) as tmp:
        if args.dataset == SYNTHETIC:
            world = generate_world(SCALES[args.scale], args.seed)
            what = f"synthesized the {args.scale} world"
        else:
            world = movielens_100k()
            what = f"read {args.dataset} from the recbole package"
        write_world(world, tmp / "data")
        step(f"{what}: {world.edges.num_rows:,} events")
        graph = build_graph_from_dir(tmp / "data")
        save_graph(graph, tmp / "graph")
        step(f"validated and built the graph: {graph.num_nodes:,} nodes")
        runs, first_until, refresh = _train_encoders(tmp, graph, args, base)
        days = (first_until - graph.manifest.time.start) / DAY
        step(
            f"trained the encoder for {args.steps} steps on the first {days:.0f} days"
            + (
                f", refreshed it until the validation and the test start "
                f"({refresh} warm-started steps each)"
                if len(runs) > 1
                else ""
            )
        )
        hir = build_hir_lookup(runs, tmp / "data", graph, seed=args.seed)
        latest = hir.full_snapshots[-1]
        write_embeddings(latest, tmp / "embeddings")
        sizes = latest.meta["bom"]
        on_creation = hir.created_rows
        step(
            f"embedded users and ads at {len(hir.full_snapshots)} refresh times, new ads "
            f"a minute after their creation ({on_creation:,}) and daily in between "
            f"({len(hir.snapshots) - len(hir.full_snapshots)} arrival snapshots; BoM "
            f"{sizes['codebooks']}x{sizes['codewords']}, relative error "
            f"{sizes['relative_error']:.3f})"
        )
        # a rating data set: each user rates a movie once, so what they rated is left out
        recall = conversion_recall(graph, latest, exclude_seen=args.dataset != SYNTHETIC)
        step("retrieval of the ads users convert on: BoM index, exact k-NN, popularity")
        ab = run_ab_on_graph(
            graph,
            ab_config,
            truth=tmp / "data" / TRUTH_DIR if world.truth else None,
            hir=hir,
        )
        write_report(ab, tmp / "ab")
        step("offline A/B: XGBoost + HIR features vs XGBoost on the test window")
        exported = export_run(
            runs[-1],  # the encoder that embedded the test-start snapshot
            tmp / "data",
            tmp / "onnx",
            embeddings=tmp / "embeddings",
            check=True,
            check_nodes=256,
        )
        step(
            f"exported {', '.join(exported.files)} ({runs[-1].name}) and checked them against torch"
        )
    print()
    print(summarize(graph).render())
    print("\nONNX parity (onnxruntime vs torch, real batches):")
    for parity in exported.parity:
        print("  " + parity.render())
    if not exported.ok:  # shown, not fatal: `hir export --check` is the gate that fails
        print("  warning: the parity check failed; see docs/export.md (Parity)")
    print("\nRetrieval from the test-start snapshot: " + "\n".join(recall.render()))
    report = ab.report
    print(f"\n{report.title}\n")
    header = ("metric", report.ab.control, report.ab.treatment, "delta [95% CI]", "relative")
    rows = [header, *metric_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    print(f"\nverdict: {report.ab.verdict}")
    print(
        f"\nreport: {out / 'ab' / 'report.html'} (and report.md)   data: {out / 'data'}   "
        f"encoder runs: {', '.join(str(out / r.name) for r in runs)}   "
        f"embeddings: {out / 'embeddings'}   ONNX: {out / 'onnx'}"
    )
    return 0
