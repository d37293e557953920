"""Scaling sweep: test NE against training compute for four encoder sizes and four user
model sizes, with log-linear fits, their R² and a plot (`hir_sdk.evaluation.scaling`).

    python benchmarks/scaling.py [--dataset movielens-100k] [--steps 300] [--record FILE]
                                 [--svg docs/figures/scaling.svg]

- encoder: `ModelSizes` with width 16, 32, 64, 128 (4 heads, 2 layers), each trained for
  `--steps` steps on the first half of the training window (as `hir demo`), snapshots at
  the A/B's refresh times, NE of XGBoost + HIR features on the test window;
- user model: the multi-stage ranker's offline user model with width 16, 32, 64, 128
  (2 layers, 128 history events), on the snapshots of the width-64 encoder, NE of the
  multi-stage arm;
- compute: 6 N T for what is trained (N parameters, T tokens through it) plus 2 N T for
  the encoder's forward-only EMA teacher.
MovieLens-100K by default: its snapshots are small, so the sweep fits in a CPU session.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

from publish import publish

from hir_sdk.datasets import MOVIELENS_100K, movielens_100k
from hir_sdk.evaluation.pipeline import ABConfig
from hir_sdk.evaluation.scaling import (
    encoder_sweep,
    render_scaling,
    scaling_svg,
    user_model_sweep,
)
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.sequence import MultiStageConfig, UserModelConfig
from hir_sdk.synth import SCALES, generate_world, write_world
from hir_sdk.training import TrainConfig
from hir_sdk.training.as_of import first_window_end
from hir_sdk.training.config import ModelSizes

WIDTHS = (16, 32, 64, 128)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=MOVIELENS_100K, choices=[MOVIELENS_100K, "small"])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--bootstrap", type=int, default=50)
    parser.add_argument("--record")
    parser.add_argument("--svg", help="write the plot here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = movielens_100k() if args.dataset == MOVIELENS_100K else None
        world = world or generate_world(SCALES[args.dataset], 0)
        data = write_world(world, Path(tmp) / "data")
        graph = build_graph_from_dir(data)
        base = dataclasses.replace(
            TrainConfig(),
            steps=args.steps,
            eval_every=max(args.steps // 3, 1),
            checkpoint_every=max(args.steps // 3, 1),
            use_content=True,
            train_until=str(first_window_end(graph)),
        )
        ab = ABConfig(n_bootstrap=args.bootstrap)
        sizes = [(f"width {w}", dataclasses.replace(ModelSizes(), dim=w)) for w in WIDTHS]
        points = encoder_sweep(data, graph, sizes, base, Path(tmp), ab=ab)
        hir = build_hir_lookup(Path(tmp) / "encoder_width_64", data, graph)
        users = [
            (f"width {w}", dataclasses.replace(UserModelConfig(), dim=w, out_dim=w)) for w in WIDTHS
        ]
        points += user_model_sweep(graph, hir, users, MultiStageConfig(), ab=ab)
    lines = [
        f"### Scaling sweep on {graph.manifest.name}: test NE vs training compute",
        "",
        f"command: `python benchmarks/scaling.py --dataset {args.dataset} --steps {args.steps}`",
        "",
        *render_scaling(points),
    ]
    publish(lines, args.record)
    if args.svg:
        Path(args.svg).write_text(
            scaling_svg(points, title=f"Test NE vs training compute, {graph.manifest.name}"),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
