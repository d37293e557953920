"""Compare the treatments of two `hir ab` report folders, paired on their test examples.

Two A/Bs on the same data and windows (for example the same encoders under two
`--refresh` modes) score the same test examples; this reads each folder's
`predictions.parquet` and compares the second folder's treatment with the first's,
with the A/B's own user-resampled intervals (`hir_sdk.evaluation.ab.compare`).

    python benchmarks/paired_treatments.py AB_NEWEST AB_ALIGNED [--bootstrap 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from hir_sdk.evaluation.ab import compare

KEYS = ["user_id", "ad_id", "ts", "label"]


def fail(message: str) -> None:
    """A user mistake: one line on stderr, exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def treatment_column(frame: pl.DataFrame, folder: Path) -> str:
    """The treatment's prediction column: the last `p_*` column (the A/B writes the
    control's first)."""
    columns = [c for c in frame.columns if c.startswith("p_")]
    if len(columns) != 2:
        fail(f"{folder}/predictions.parquet: expected two p_* columns, got {columns}")
    return columns[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="the A/B folder compared against")
    parser.add_argument("second", type=Path, help="the A/B folder whose treatment is compared")
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    frames = []
    for folder in (args.first, args.second):
        path = folder / "predictions.parquet"
        if not path.is_file():
            fail(f"{path}: no such file (give a `hir ab` report folder)")
        frame = pl.read_parquet(path)
        missing = [k for k in KEYS if k not in frame.columns]
        if missing:
            fail(f"{path}: no column {missing} (not a `hir ab` predictions file)")
        frames.append(frame)
    a, b = frames
    if not a.select(KEYS).equals(b.select(KEYS)):
        fail("the two folders score different test examples (not the same data and windows)")
    pa, pb = treatment_column(a, args.first), treatment_column(b, args.second)
    result = compare(
        a["label"].to_numpy(),
        a[pa].to_numpy(),
        b[pb].to_numpy(),
        a["user_id"].to_numpy(),
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        metrics=("ne", "auc"),
    )
    print(f"{args.second} ({pb}) against {args.first} ({pa}), {result.examples:,} examples,")
    print(f"{result.positives:,} positives, {result.n_bootstrap} user resamples:")
    for m in result.metrics:
        d = m.delta
        print(
            f"  {m.metric}: {m.control:.4f} -> {m.treatment:.4f}, "
            f"delta {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}]"
        )


if __name__ == "__main__":
    main()
