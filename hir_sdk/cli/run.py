"""`hir run`: the whole pipeline on a dataset folder in the input format.

1. validate the data and build the temporal graph;
2. train the encoder on the first half of the training window (from its first edge), so
   the rankers can be fitted on the days after it, and refresh it: two refresh runs, each
   warm-started from the encoder before it, train until the validation and the test start
   (`--refresh-steps`; 0 keeps one encoder, its last checkpoint);
3. embed users and ads at three refresh times, each with the newest encoder trained
   before it, with interest clusters and BoM tokens, and new ads on their creation and
   daily in between (each snapshot sees only edges before its time);
4. retrieval: recall@K of the ads users convert on in the test window, from the
   test-start snapshot (BoM inverted index, exact k-NN, popularity), with the engagement
   prior's weight chosen on the validation window;
5. offline A/B on the test window: XGBoost + HIR features (or `--treatment`) against the
   XGBoost baseline, both fitted on the examples after the first encoder's window, each
   XGBoost with its tree depth and minimum child weight chosen on validation, paired
   user bootstrap;
6. export the newest encoder and the test-start snapshot's BoM quantizer to ONNX and
   check them against torch.

Content features are on when the data has a content table (a `--config` file that sets
`use_content` decides otherwise, and `use_content = true` without a content table is
refused; its other keys change only what they set, but for the keys the schedule sets for
every encoder run: `steps`, `seed`, `train_until`, `select`, `eval_every`,
`checkpoint_every`, which a warning names where the file's values differ from the job's;
an `init_from` warm-starts the first encoder only, and the warning says so). Everything
is written into `--out`, which must be absent or empty and may not lie inside `--data`;
`--overwrite` replaces an earlier `hir run` output holding only what hir-sdk wrote
(never another folder, never your files). `job.toml` in `--out` records every setting of
the job.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.cli.overwrite_option import add_overwrite_option
from hir_sdk.pipeline import (
    DEFAULT_STEPS,
    JOB_FILE,
    STAGE_SHARES,
    TREATMENTS,
    JobSettings,
    Progress,
    ScheduleWarning,
    run_job,
    schedule_warning,
)

if TYPE_CHECKING:
    from hir_sdk.pipeline import JobResult
    from hir_sdk.training import TrainConfig


def add_job_options(
    parser: argparse.ArgumentParser, steps_default: str = str(DEFAULT_STEPS)
) -> None:
    """The options `hir run` and `hir demo` share: the encoder's schedule and the A/B.
    `--steps` is None unless given (`job_settings` fills in the command's default, which
    `steps_default` describes in the help)."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--steps",
        type=at_least(1),
        default=None,
        help=f"encoder training steps (default {steps_default})",
    )
    parser.add_argument(
        "--refresh-steps",
        type=at_least(0),
        default=None,
        help="steps of each warm-started refresh run (default a third of --steps; 0: no "
        "refresh, one encoder, its last checkpoint)",
    )
    parser.add_argument(
        "--bootstrap",
        type=at_least(1),
        default=200,
        help="A/B user resamples (at least 40 for a 95%% interval; fewer give none)",
    )
    parser.add_argument(
        "--treatment",
        choices=TREATMENTS,
        default=TREATMENTS[0],
        help="the A/B's arm against XGBoost: XGBoost + HIR features (default), the "
        "multi-stage sequence ranker, or XGBoost (without or with the HIR features) with "
        "its score as one more column",
    )
    parser.add_argument(
        "--config",
        help="the encoder's training settings, a `hir fit` TOML file, over the defaults "
        "(batches of 64, content features on when the data has content; the file decides "
        "them only where it sets them); --steps, --seed and the refresh schedule still apply: "
        "the file's steps, seed, train_until, select, eval_every and checkpoint_every are "
        "not used (a warning names those that differ from the job's), and its init_from "
        "warm-starts the first encoder only",
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
    add_overwrite_option(parser, "hir run")
    add_job_options(parser)
    parser.set_defaults(run=run)


def job_settings(
    args: argparse.Namespace,
    has_content: bool,
    encoder_defaults: TrainConfig | None = None,
    steps: int = DEFAULT_STEPS,
) -> JobSettings:
    """The job's settings from the command line (checked before any work): `args.steps`
    or `steps`, and the encoder's settings from `--config` over `encoder_defaults`. A
    warning on stderr says what of `--config` the job does otherwise (`schedule_warning`):
    the keys its schedule sets to other values, and an `init_from`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScheduleWarning)  # said below, in the command's words
        settings = JobSettings.with_encoder(
            args.config,
            has_content,
            encoder_defaults,
            seed=args.seed,
            steps=args.steps or steps,
            refresh_steps=args.refresh_steps,
            bootstrap=args.bootstrap,
            treatment=args.treatment,
        )
    command = f"hir {getattr(args, 'command', 'run')}"
    note = schedule_warning(args.config, settings, command)
    if note:
        print(f"{command}: warning: {args.config}: {note}", file=sys.stderr)
    return settings


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
    if result.prior is not None:
        print(f"\n{result.prior.render()}")
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
    from hir_sdk.schema import CONTENT_FILE
    from hir_sdk.training.preflight import check_before_loading

    data, out = Path(args.data), Path(args.out)
    if not data.is_dir():
        raise InputError("dataset folder not found", file=data)
    check_free(out, kind="job", overwrite=args.overwrite, inputs=(data,))  # before any work
    settings = job_settings(args, (data / CONTENT_FILE).exists())
    # the encoder settings checked against the manifest alone, before the output is made
    # (the job checks them again, for its library callers)
    check_before_loading(settings.first_run(), data)
    step = Progress(STAGE_SHARES)
    with atomic_output_dir(out, kind="job", overwrite=args.overwrite, inputs=(data,)) as tmp:
        result = run_job(data, tmp, settings, progress=step, final=out)
    print_results(result, out)
    return 0
