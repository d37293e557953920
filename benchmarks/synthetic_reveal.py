"""HIR's lift on synthetic worlds that cannot be solved by reading the content: the
offline A/B of XGBoost + HIR features against XGBoost (NE delta with its paired
user-bootstrap 95% interval) as the entity text reveals all, half or none of the
interest (`content_reveal` 1, 0.5, 0), and with interest drift on top of a text that
reveals nothing (`interest_drift`).

    python benchmarks/synthetic_reveal.py [--scale quick] [--settings ...] [--seed 0]
        [--config FILE] [--record benchmarks/results/synthetic_reveal.md]

Each setting is the main job as `hir run` runs it (`hir_sdk.pipeline.run_job`): the
world synthesized with the setting's knobs (`--seed`), the encoder trained on the first
half of the training window and refreshed at the validation and test starts, the
objectives chosen by `objectives = "auto"` (the engagement settings where the text
disagrees with engagement or is not read), three full snapshots plus creation and
arrival snapshots, retrieval, and the A/B on the test window with each XGBoost arm
tuned on validation.
`--scale quick` uses `hir demo`'s quick preset (its steps and encoder); other scales
`hir run`'s defaults; `--config` changes the encoder's settings as `hir run --config`
does (`use_content = false`: the encoder reads no text). Only the HIR arm reads the
text; the XGBoost baseline never does. Each row also says how often the text's
most-mentioned leaf is the entity's own (the leaf-from-text accuracy), which objectives
the run trained with, and the exact k-NN retrieval recall@100 of users with a history.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from publish import publish

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.cli.demo import QUICK, QUICK_STEPS, quick_encoder
from hir_sdk.evaluation.conversion_retrieval import EXACT
from hir_sdk.pipeline import JobSettings, run_job
from hir_sdk.synth import SCALES, TRUTH_DIR, generate_world, write_world
from hir_sdk.synth.taxonomy import N_LEAVES, leaf_at
from hir_sdk.training.config import load_config

# name -> (content_reveal, interest_drift)
SETTINGS = {
    "reveal-1": (1.0, 0.0),
    "reveal-0.5": (0.5, 0.0),
    "reveal-0": (0.0, 0.0),
    "reveal-0-drift": (0.0, 0.03),
}


def leaf_from_text_accuracy(data: Path) -> float:
    """Share of texts whose most-mentioned leaf (by word hits) is the entity's own."""
    as_text = pl.col("node_type").cast(pl.String)
    content = pl.read_parquet(data / "content.parquet").with_columns(as_text)
    truth = pl.read_parquet(data / TRUTH_DIR / "entities.parquet").with_columns(as_text)
    rows = content.join(truth.select("node_type", "node_id", "leaf"), on=["node_type", "node_id"])
    words = [leaf_at(leaf).words for leaf in range(N_LEAVES)]
    hits = np.array([[sum(w in t for w in ws) for ws in words] for t in rows["text"]])
    return float((hits.argmax(axis=1) == rows["leaf"].to_numpy()).mean())


def run_setting(cfg, work: Path, settings: JobSettings, seed: int) -> dict:
    started = time.perf_counter()
    data = write_world(generate_world(cfg, seed=seed), work / "data")
    out = work / "job"
    out.mkdir(parents=True)
    result = run_job(data, out, settings, truth=data / TRUTH_DIR)
    recall = result.recall
    warm = recall.with_history or recall.recall
    return {
        "ab": result.ab.report.ab,
        "text": leaf_from_text_accuracy(data),
        "objectives": load_config(result.runs[0] / "config.toml").objectives,
        "recall": warm[EXACT][-1],
        "seconds": time.perf_counter() - started,
    }


def _row(name: str, cfg, result: dict) -> str:
    ab = result["ab"]
    ne, auc = ab.metric("ne"), ab.metric("auc")
    d, a = ne.delta, auc.delta
    mark = " (significant)" if d.excludes_zero() else ""
    auc_mark = " (significant)" if a.excludes_zero() else ""
    return (
        f"| {name} | {cfg.content_reveal:g} | {cfg.interest_drift:g} | {result['text']:.2f} | "
        f"{result['objectives']} | {ab.examples:,} / {ab.positives:,} | {ne.control:.4f} | "
        f"{ne.treatment:.4f} | {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}]{mark} | "
        f"{100 * ne.relative:+.2f}% | {a.estimate:+.4f} [{a.low:+.4f}, {a.high:+.4f}]"
        f"{auc_mark} | {result['recall']:.3f} | {result['seconds']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default=QUICK, choices=sorted(SCALES))
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--seed", type=int, default=0, help="the worlds' and the job's seed")
    parser.add_argument("--bootstrap", type=at_least(1), default=200)
    parser.add_argument("--out", type=Path, default=None, help="keep the work folders here")
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="an encoder settings file, as `hir run --config` reads (e.g. use_content = false)",
    )
    parser.add_argument("--record", default=None)
    args = parser.parse_args()
    quick = args.scale == QUICK
    settings = JobSettings.with_encoder(
        args.config,
        True,
        quick_encoder() if quick else None,
        seed=args.seed,
        steps=QUICK_STEPS if quick else 300,
        bootstrap=args.bootstrap,
    )
    work = args.out or Path(tempfile.mkdtemp(prefix="hir_reveal_"))
    rows = []
    for name in args.settings:
        reveal, drift = SETTINGS[name]
        cfg = dataclasses.replace(SCALES[args.scale], content_reveal=reveal, interest_drift=drift)
        result = run_setting(cfg, work / name, settings, args.seed)
        rows.append(_row(name, cfg, result))
        print(rows[-1], flush=True)
    command = (
        f"python benchmarks/synthetic_reveal.py --scale {args.scale}"
        f" --settings {' '.join(args.settings)}"
        + (f" --seed {args.seed}" if args.seed else "")
        + f" --bootstrap {args.bootstrap}"
        + (f" --config {args.config.name}" if args.config else "")
    )
    base = SCALES[args.scale]
    lines = [
        f"## XGBoost + HIR vs XGBoost as the text reveals less (`{args.scale}` world, "
        f"{base.n_users:,} users, {base.n_advertisers:,} advertisers)",
        "",
        f"`{command}` (`hir run`'s job, {settings.steps} encoder steps and refreshes of "
        f"{settings.refresh}; the objectives each row names; each XGBoost arm tuned on "
        "validation).",
        "",
        "| setting | content reveal | interest drift | leaf-from-text accuracy | objectives "
        "| test examples / conversions | NE xgboost | NE xgboost+hir | NE delta [95% CI] | "
        "relative | ROC-AUC delta [95% CI] | k-NN recall@100, users with a history | "
        "seconds |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    publish(lines, args.record)


if __name__ == "__main__":
    main()
