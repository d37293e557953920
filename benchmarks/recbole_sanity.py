"""Sanity check of the RecBole setup the MovieLens peers run on: a model run under
RecBole's own default protocol on its bundled ml-100k, to compare with the figures RecBole
publishes for that run.

    python benchmarks/recbole_sanity.py [--model BPR] [--record FILE]

RecBole's default protocol: every rating an interaction, per-user random 80/10/10 split,
full ranking over all items with the user's training items masked, early stopping on
MRR@10 (patience 10), the best epoch's weights tested. Published for BPR on ml-100k
(RecBole's README, the `run_recbole.py` quick start): test recall@10 0.2368, MRR@10
0.4519, NDCG@10 0.2768, hit@10 0.7614, precision@10 0.1901; the getting-started page's run
of the same: recall@10 0.2523, MRR@10 0.4855, NDCG@10 0.2920, hit@10 0.7953, precision@10
0.1962 (two RecBole versions; the split is random, so runs differ by a few points).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from peers.recbole_models import compatibility, train_recbole
from publish import publish

from hir_sdk.datasets.movielens import locate_movielens_100k

PUBLISHED = {
    "BPR": {
        "README": {
            "recall@10": 0.2368,
            "mrr@10": 0.4519,
            "ndcg@10": 0.2768,
            "hit@10": 0.7614,
            "precision@10": 0.1901,
        },
        "getting-started page": {
            "recall@10": 0.2523,
            "mrr@10": 0.4855,
            "ndcg@10": 0.2920,
            "hit@10": 0.7953,
            "precision@10": 0.1962,
        },
    }
}


def run(model_name: str, *, seed: int, workdir: Path) -> tuple[dict[str, float], int, float]:
    """RecBole's default run of `model_name` on its ml-100k: test metrics, the epochs
    trained and the seconds taken."""
    compatibility()
    from recbole.config import Config

    argv = sys.argv
    sys.argv = argv[:1]  # RecBole reads `--key=value` from the command line
    try:
        config = Config(
            model=model_name,
            dataset="ml-100k",
            config_dict={
                "data_path": str(locate_movielens_100k().parent),
                "use_gpu": False,
                "seed": seed,
                "show_progress": False,
                "state": "WARNING",
                "checkpoint_dir": str(workdir / "saved"),
            },
        )
    finally:
        sys.argv = argv
    started = time.perf_counter()
    _, trainer, loaders = train_recbole(config, workdir, validate=True)
    result = trainer.evaluate(loaders[2], load_best_model=False, show_progress=False)
    return dict(result), max(trainer.train_loss_dict) + 1, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="BPR", choices=sorted(PUBLISHED))
    parser.add_argument("--seed", type=int, default=2020, help="RecBole's default seed")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--record")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        result, epochs, seconds = run(args.model, seed=args.seed, workdir=Path(tmp))
    names = list(PUBLISHED[args.model]["README"])
    lines = [
        f"### RecBole {args.model} on ml-100k, RecBole's default protocol (seed {args.seed})",
        "",
        f"command: `python benchmarks/recbole_sanity.py --model {args.model}`",
        "",
        "| run | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
        "| this setup | " + " | ".join(f"{result[n]:.4f}" for n in names) + " |",
    ]
    for source, values in PUBLISHED[args.model].items():
        lines.append(
            f"| published ({source}) | " + " | ".join(f"{values[n]:.4f}" for n in names) + " |"
        )
    lines += ["", f"{epochs} epochs trained (early stopping on MRR@10), {seconds:.0f} s"]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
