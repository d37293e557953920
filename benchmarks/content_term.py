"""Leaf resolution of the ad embeddings with and without the content-similarity term, its
weight, co-engaged content, target temperature and the encoder's width, side by side on
one synthetic world.

    .venv/bin/python benchmarks/content_term.py --scale small \\
        --record benchmarks/results/content_term.md
    # only some variants: those whose name contains any of the given words
    .venv/bin/python benchmarks/content_term.py --only width

Protocol: `hir synth --scale SCALE --seed 0`; the demo's encoder configuration (content
features, batch 64, `--steps` 300, training window ended at its midpoint), trained once
per variant with everything else equal; every ad that exists at the end of the training
window embedded as of then. Reported: the share of each ad's 10 nearest ads (cosine) that
share its planted leaf and its mid-level interest, for the embeddings and for the
content vectors the term distils from (own text; own text + structural neighbours; those
mixed with the co-engaged content), and the NMI of the embeddings' level-1 clusters
against the planted leaves.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from publish import publish
from sklearn.metrics import normalized_mutual_info_score

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.synth import SCALES, TRUTH_DIR, generate_world, write_world
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.as_of import first_window_end
from hir_sdk.training.config import ContentConfig, EngagementConfig, ModelSizes
from hir_sdk.training.content_similarity import ContentTargets
from hir_sdk.training.embedder import Embedder

# name: (content weight, hard negatives, co-engagement weight, target temperature, width)
VARIANTS = {
    "no content term, hard negatives (first release)": (0.0, True, 0.0, 0.05, 64),
    "content term, target temperature 0.05": (3.0, False, 0.0, 0.05, 64),
    "content term, target temperature 0.005": (3.0, False, 0.0, 0.005, 64),
    "content term with co-engagement 4, temperature 0.005, width 64": (3.0, False, 4.0, 0.005, 64),
    "the same, width 128 (the default before 2026-12-02)": (3.0, False, 4.0, 0.005, 128),
    "the same, width 256": (3.0, False, 4.0, 0.005, 256),
    "width 128, content weight 6": (6.0, False, 4.0, 0.005, 128),
    "width 128, co-engagement 8": (3.0, False, 8.0, 0.005, 128),
    "width 128, target temperature 0.002": (3.0, False, 4.0, 0.002, 128),
    "width 128, weight 6, target temperature 0.002 (default)": (6.0, False, 4.0, 0.002, 128),
    "width 128, content weight 10, target temperature 0.002": (10.0, False, 4.0, 0.002, 128),
    "width 128, target temperature 0.001": (3.0, False, 4.0, 0.001, 128),
    "width 128, co-engagement 2, target temperature 0.002": (3.0, False, 2.0, 0.002, 128),
}


def neighbour_purity(z: np.ndarray, label: np.ndarray, k: int = 10) -> float:
    """Share of each row's `k` nearest rows (cosine, itself excluded) with its label."""
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    unit = np.divide(z, norms, out=np.zeros_like(z), where=norms > 0)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    nearest = np.argpartition(-sims, k, axis=1)[:, :k]
    return float((label[nearest] == label[:, None]).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--record", default=None)
    parser.add_argument(
        "--only", nargs="+", default=None, help="variants whose name contains any of these"
    )
    args = parser.parse_args()
    chosen = {
        name: v
        for name, v in VARIANTS.items()
        if args.only is None or any(word in name for word in args.only)
    }
    if not chosen:
        parser.error(f"--only {args.only} matches no variant of {list(VARIANTS)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = write_world(generate_world(SCALES[args.scale], 0), work / "data")
        graph = build_graph_from_dir(data)
        until = first_window_end(graph)
        truth = pl.read_parquet(data / TRUTH_DIR / "entities.parquet")
        truth = truth.filter(pl.col("node_type") == "ad")
        ads_all = graph.index("ad", truth["node_id"].to_numpy())
        leaf = dict(zip(ads_all.tolist(), truth["leaf"].to_list(), strict=True))
        mid = dict(zip(ads_all.tolist(), truth["mid"].to_list(), strict=True))
        rows = []
        embedder = None
        for name, (weight, hard, co, sharpness, width) in chosen.items():
            config = TrainConfig(
                steps=args.steps,
                batch_size=64,
                seed=0,
                eval_every=args.steps,
                checkpoint_every=args.steps,
                use_content=True,
                train_until=str(until),
                model=ModelSizes(dim=width),
                engagement=EngagementConfig(hard_negatives=hard),
                content=ContentConfig(
                    weight=weight, co_engagement=co, target_temperature=sharpness
                ),
            )
            started = time.perf_counter()
            trainer = Trainer(data, work / name, config)
            trainer.fit(progress=False)
            seconds = time.perf_counter() - started
            embedder = Embedder(work / name, data, until)
            ads = embedder.entities(["ad"])
            z, logits = embedder.embed(ads)
            lf = np.array([leaf[a] for a in ads.tolist()])
            md = np.array([mid[a] for a in ads.tolist()])
            nmi = normalized_mutual_info_score(lf, logits[1].argmax(axis=1))
            rows.append((name, neighbour_purity(z, lf), neighbour_purity(z, md), nmi, seconds))
        # the same ads in every variant (one world, one time): compare the content with them
        knowledge = embedder.builder.featurizer.knowledge
        text = knowledge.vectors[knowledge.row_of[ads]]
        targets = ContentTargets.build(embedder.graph, knowledge, until).gather(ads)[0].numpy()
        mixed = ContentTargets.build(embedder.graph, knowledge, until, co_engagement=4.0)
        mixed = mixed.gather(ads)[0].numpy()
    lines = [
        f"### Ad neighbourhoods by content term and width, `{args.scale}`, "
        f"{args.steps} steps ({len(ads):,} ads at the end of the training window)",
        "",
        "| what the ads are compared by | leaf purity@10 | mid purity@10 | level-1 NMI vs "
        "leaves | training s |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| encoder: {n} | {p:.3f} | {m:.3f} | {nmi:.3f} | {s:.0f} |" for n, p, m, nmi, s in rows
    ]
    lines += [
        f"| content: {name} | {neighbour_purity(v, lf):.3f} | {neighbour_purity(v, md):.3f} | | |"
        for name, v in (
            ("own text vector", text),
            ("own + structural neighbours (the targets before)", targets),
            ("those + co-engaged content, weight 4 (the default targets)", mixed),
        )
    ]
    publish(lines, args.record)


if __name__ == "__main__":
    main()
