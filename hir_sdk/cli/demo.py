"""`hir demo`: the whole pipeline, end to end, on a built-in synthetic world (or on
MovieLens-100K).

1. synthesize the world (with its planted truth): by default the `quick` world with a
   64-wide encoder trained 120 steps, which runs in minutes; `--scale small` is the full
   run (the 128-wide encoder of `hir run`, 300 steps) that the recorded figures use. With
   `--dataset movielens-100k`, read MovieLens-100K and its knowledge graph from the
   installed `recbole` package (the full run's settings);
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
   test-start snapshot's BoM tokens (inverted index), exact k-NN (with the engagement
   prior's weight chosen on the validation window) and popularity;
6. offline A/B on the test window: XGBoost + HIR features against the XGBoost baseline,
   both fitted on the examples after the encoder's window, each with its tree depth and
   minimum child weight chosen on validation, paired user bootstrap;
7. export the newest encoder and the test-start snapshot's BoM quantizer to ONNX and
   check them against torch.

Stages 2-7 are `hir run` on the data folder it writes. It ends with the A/B table and
where the HTML report is. Everything is written into `--out`, which must be absent or
empty; `--overwrite` replaces an earlier demo output holding only what hir-sdk wrote
(never another folder, never your files). `--steps` and `--config` (whose keys replace
the preset's) change the preset. The multi-stage sequence ranker is left to `hir ab
--treatment multistage`, which trains longer.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.cli.overwrite_option import add_overwrite_option
from hir_sdk.cli.run import add_job_options, job_settings, print_results
from hir_sdk.dataset_names import MOVIELENS_100K
from hir_sdk.pipeline import STAGE_SHARES, JobSettings, Progress, run_job
from hir_sdk.synth import SCALES

if TYPE_CHECKING:
    from hir_sdk.training import TrainConfig

SYNTHETIC = "synthetic"
QUICK = "quick"
QUICK_STEPS = 120  # the quick world's encoder steps (refreshes of 40): see quick_encoder
# the stages' seconds in the newest recorded quick demo (benchmarks/results/demo.md; as
# STAGE_SHARES for the full run): graph, encoders, snapshots, retrieval, A/B, export
QUICK_SHARES = [4.5, 87.0, 39.0, 0.6, 30.0, 15.0]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the end-to-end pipeline (synthetic world or MovieLens-100K)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", default="demo_out", help="output folder (absent or empty)")
    add_overwrite_option(parser, "hir demo")
    parser.add_argument(
        "--dataset",
        choices=[SYNTHETIC, MOVIELENS_100K],
        default=SYNTHETIC,
        help="the synthetic ads world (default) or MovieLens-100K (needs recbole installed)",
    )
    parser.add_argument(
        "--scale",
        choices=sorted(SCALES),
        default=QUICK,
        help="the synthetic world: quick (the default, minutes) or small (the full run)",
    )
    add_job_options(parser, steps_default=f"300; {QUICK_STEPS} on the quick world")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hir_sdk.io.atomic import atomic_output_dir, check_free

    out = Path(args.out)
    check_free(out, kind="demo", overwrite=args.overwrite)  # before any import or work
    settings = demo_settings(args)  # checked before any work too
    # the slow imports, once the quick checks have passed
    from hir_sdk.datasets import movielens_100k
    from hir_sdk.synth import TRUTH_DIR, generate_world, write_world

    # writing the data, then `hir run`'s stages
    step = Progress([0.5, *QUICK_SHARES] if _quick(args) else [10.0, *STAGE_SHARES])
    with atomic_output_dir(out, kind="demo", overwrite=args.overwrite) as tmp:
        if args.dataset == SYNTHETIC:
            world = generate_world(SCALES[args.scale], args.seed)
            what = f"synthesized the {args.scale} world"
        else:
            world = movielens_100k()
            what = f"read {args.dataset} from the recbole package"
        write_world(world, tmp / "data")
        step(f"{what}: {world.edges.num_rows:,} events")
        truth = tmp / "data" / TRUTH_DIR if world.truth else None
        result = run_job(tmp / "data", tmp, settings, progress=step, truth=truth, final=out)
    print_results(result, out)
    print(f"data: {out / 'data'}")
    return 0


def demo_settings(args: argparse.Namespace) -> JobSettings:
    """The job's settings: the quick preset on the quick world, `hir run`'s defaults
    otherwise, with the command line's over them. Both data sets have content."""
    if _quick(args):
        return job_settings(
            args, has_content=True, encoder_defaults=quick_encoder(), steps=QUICK_STEPS
        )
    return job_settings(args, has_content=True)


def _quick(args: argparse.Namespace) -> bool:
    return args.dataset == SYNTHETIC and args.scale == QUICK


def quick_encoder() -> TrainConfig:
    """The quick world's encoder settings (before `--config`): half `hir run`'s width and
    about half its views (subgraph sizes), prototypes seeded from half the rows. With
    them and `QUICK_STEPS` the whole demo runs in under five minutes on 2 cores
    (benchmarks/results/demo.md, which also says how its A/B verdict holds on other world
    seeds)."""
    from hir_sdk.sampling.config import ViewConfig
    from hir_sdk.training.config import DistillConfig, ModelSizes, TrainConfig

    return TrainConfig(
        model=ModelSizes(dim=64),
        distill=DistillConfig(seed_rows=4096),
        teacher_view=ViewConfig(fanout=(8, 4), max_nodes=48),
        student_view=ViewConfig(fanout=(6,), max_nodes=16),
    )
