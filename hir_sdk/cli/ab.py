"""`hir ab`: offline A/B of two rankers on the test window, with a Markdown + HTML report.

`xgboost+hir`, `multistage`, `xgboost+multistage` and `xgboost+hir+multistage` (XGBoost,
without or with the HIR columns, with the multi-stage ranker's score as a column) read
HIR snapshots of an encoder run (`--run`, a refresh run: `hir fit --refresh --until
...`); both arms then fit on the examples after the
window the encoder read (its training window, and its selection window for a run that
chose its checkpoint on validation, which leaves the rankers no examples).
`--run` given again adds refresh runs (`hir fit --refresh --until validation_start`, and
`test_start`): each full snapshot is then embedded by the newest encoder trained before
it.
Each XGBoost arm picks its tree depth and minimum child weight on the validation window
(`--no-tune`: the default configuration)."""

from __future__ import annotations

import argparse
import time

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.cli.overwrite_option import add_overwrite_option
from hir_sdk.evaluation.built_in_arms import BUILT_IN_ARMS
from hir_sdk.ranking.refresh_policy import DEFAULT_REFRESH, Refresh


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "ab", help="offline A/B of two rankers on the test window", description=__doc__
    )
    parser.add_argument("--data", required=True, help="dataset folder (manifest + parquet)")
    parser.add_argument("--out", required=True, help="report folder to write")
    parser.add_argument("--control", choices=BUILT_IN_ARMS, default="xgboost")
    parser.add_argument("--treatment", choices=BUILT_IN_ARMS, default="popularity")
    parser.add_argument(
        "--attribution-days",
        type=float,
        default=None,
        help="attribution window (default: the manifest's)",
    )
    parser.add_argument(
        "--run",
        action="append",
        default=None,
        dest="encoder_run",
        help="HIR encoder run (hir fit --refresh --until ...) for the arms that read HIR; "
        "repeat to add the later refresh runs",
    )
    parser.add_argument(
        "--refresh",
        choices=[r.value for r in Refresh],
        default=DEFAULT_REFRESH.value,
        help="with several --run: which encoder's space each HIR snapshot is in (see "
        "docs/evaluation.md, Refreshed encoders)",
    )
    parser.add_argument(
        "--bootstrap",
        type=at_least(1),
        default=200,
        help="user resamples (at least 40 for a 95%% interval; fewer give none)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--truth",
        default=None,
        help="planted-truth folder for per-interest slices (default DATA/truth)",
    )
    parser.add_argument(
        "--no-tune",
        dest="tune",
        action="store_false",
        help="fit XGBoost arms with the default configuration instead of choosing each "
        "one's tree depth and minimum child weight on the validation window",
    )
    add_overwrite_option(parser, "hir ab")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hir_sdk.io import check_free

    started = time.perf_counter()
    inputs = [args.data, args.truth, *(args.encoder_run or [])]
    check_free(args.out, kind="report", overwrite=args.overwrite, inputs=inputs)
    # the slow imports, once the quick checks have passed
    from hir_sdk.evaluation.pipeline import ABConfig, run_ab, write_report

    config = ABConfig(
        control=args.control,
        treatment=args.treatment,
        attribution_days=args.attribution_days,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        run=None if args.encoder_run is None else tuple(args.encoder_run),
        tune=args.tune,
        refresh=args.refresh,
    )
    result = run_ab(args.data, config, truth=args.truth)
    write_report(result, args.out, overwrite=args.overwrite, inputs=inputs)
    print(result.report.ab.verdict)
    print(f"report: {args.out}/report.html and report.md ({time.perf_counter() - started:.1f}s)")
    return 0
