"""The A/B's metrics against scikit-learn's, side by side: the same values, and the time
of each on the sizes the paired bootstrap computes them at (every resample of the test
window computes each metric for both arms, with integer resample counts as weights).

    .venv/bin/python benchmarks/metrics_speed.py --record benchmarks/results/metrics_speed.md

Data: n examples, 0.3% positives, scores from a beta distribution rounded to 4 decimals
(ties, as tree models give), integer weights drawn as a bootstrap's counts (Poisson(1)).
Times: the best of `--repeat` calls each. Ratio = sklearn time / ours (> 1: ours faster).
"""

from __future__ import annotations

import argparse
import datetime
import time

import numpy as np
from publish import publish
from sklearn import metrics as skm

from hir_sdk.evaluation.metrics import log_loss, pr_auc, roc_auc


def _best(fn, repeat: int, *args, **kwargs) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--record", help="append the Markdown block to this file")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    pairs = [
        ("ROC-AUC", roc_auc, skm.roc_auc_score),
        ("PR-AUC", pr_auc, skm.average_precision_score),
        ("log loss", log_loss, skm.log_loss),
    ]
    lines = [
        f"#### The A/B's metrics vs scikit-learn ({datetime.date.today().isoformat()})",
        "",
        f"command: `python benchmarks/metrics_speed.py --sizes {' '.join(map(str, args.sizes))}"
        f" --repeat {args.repeat}`",
        "",
        "| n | metric | ours (ms) | sklearn (ms) | sklearn / ours | same value |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for n in args.sizes:
        y = (rng.random(n) < 0.003).astype(np.int8)
        p = np.round(rng.beta(1, 200, n) + 0.002 * y, 4).clip(1e-4, 1 - 1e-4)
        w = rng.poisson(1.0, n)
        for name, ours, theirs in pairs:
            a, b = ours(y, p, weights=w), theirs(y, p, sample_weight=w)
            t_ours = _best(ours, args.repeat, y, p, weights=w)
            t_sk = _best(theirs, args.repeat, y, p, sample_weight=w)
            same = "yes" if np.isclose(a, b, rtol=1e-9, atol=1e-12) else f"no ({a:.6g} vs {b:.6g})"
            lines.append(
                f"| {n:,} | {name} | {1e3 * t_ours:.1f} | {1e3 * t_sk:.1f} | "
                f"{t_sk / t_ours:.2f}x | {same} |"
            )
    publish(lines, args.record)


if __name__ == "__main__":
    main()
