"""Training quality and speed on a synthetic world: clusters against the planted truth,
engagement prediction against a popularity baseline, throughput and data-wait share.

    python benchmarks/train_quality.py [--scale small] [--steps 300] [--record FILE]

- NMI (normalized mutual information) between each prototype level's argmax cluster of
  ads, products and advertisers (embedded from the teacher at the test cutoff) and the
  planted super-interest, mid and leaf (goal: >= 0.8 at the super level, >= 0.6 at leaf),
  next to its chance level (the same clusters shuffled across entities: NMI rises with
  the number of clusters even for random labels) and the adjusted mutual information
  (AMI: 0 for chance, 1 for perfect);
- engagement AUC on test-window click / cart / purchase edges, each against a random node
  of the same type, both endpoints embedded as of the edge time, vs a popularity baseline
  (the destination's degree before the edge time);
- training throughput (anchors/s) and the share of step time waiting for data.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from publish import publish
from sklearn.metrics import (
    adjusted_mutual_info_score,
    normalized_mutual_info_score,
    roc_auc_score,
)

from hir_sdk.graph.event_index import EventIndex
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.synth import SCALES, generate_world, write_world
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.config import DistillConfig, ModelSizes
from hir_sdk.training.objectives import EngagementSampler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--content",
        action="store_true",
        help="embed entity text with the content encoder (world knowledge)",
    )
    parser.add_argument("--center-types", action="store_true", help="per-type centred embeddings")
    parser.add_argument(
        "--prototypes", default="16,128,1024", help="prototypes per level, coarse to fine"
    )
    parser.add_argument(
        "--no-seeding", action="store_true", help="do not seed the prototypes by k-means"
    )
    parser.add_argument(
        "--seed-at", help="shares of --steps at which prototypes are seeded (default: config's)"
    )
    parser.add_argument("--workers", type=int, default=1, help="loader worker processes")
    parser.add_argument(
        "--precision", default="auto", help="TrainConfig.precision: auto, float32 or bfloat16"
    )
    parser.add_argument("--record")
    args = parser.parse_args()
    seed_at = DistillConfig().seed_prototypes_at
    if args.seed_at:
        seed_at = tuple(float(x) for x in args.seed_at.split(","))
    if args.no_seeding:
        seed_at = ()
    config = dataclasses.replace(
        TrainConfig(),
        steps=args.steps,
        batch_size=args.batch,
        eval_every=max(args.steps // 4, 1),
        checkpoint_every=args.steps,
        num_workers=args.workers,
        precision=args.precision,
        use_content=args.content,
        # without text, the configured settings the earlier records measured ("auto"
        # would take the engagement settings there)
        objectives="auto" if args.content else "as_configured",
        distill=dataclasses.replace(DistillConfig(), seed_prototypes_at=seed_at),
        model=dataclasses.replace(
            ModelSizes(),
            center_types=args.center_types,
            prototypes=tuple(int(k) for k in args.prototypes.split(",")),
        ),
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(generate_world(SCALES[args.scale], 0), Path(tmp) / "world")
        truth = pl.read_parquet(data / "truth" / "entities.parquet").with_columns(
            pl.col("node_type").cast(pl.String)
        )
        trainer = Trainer(data, Path(tmp) / "run", config)
        started = time.perf_counter()
        trainer.fit(progress=False)
        train_s = time.perf_counter() - started
        records = [
            json.loads(x) for x in (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines()
        ]
    graph = trainer.graph
    cutoff = graph.manifest.time.test_start
    rows = []
    for kind in ("ad", "product", "advertiser"):
        t = truth.filter(pl.col("node_type") == kind)
        nodes = graph.index(kind, t["node_id"].to_numpy())
        alive = graph.created_ts[nodes] < cutoff
        rows.append((nodes[alive], t.filter(pl.Series(alive))))
    nodes = np.concatenate([r[0] for r in rows])
    planted = pl.concat([r[1] for r in rows])
    _, logits = trainer.embed(nodes, np.full(len(nodes), cutoff))
    nmi, chance, ami = {}, {}, {}
    shuffle = np.random.default_rng(0).permutation(len(nodes))
    for level, name in enumerate(("super", "mid", "leaf")):
        clusters = logits[min(level, len(logits) - 1)].argmax(axis=1)
        truth_level = planted[name].to_numpy()
        nmi[name] = normalized_mutual_info_score(truth_level, clusters)
        chance[name] = normalized_mutual_info_score(truth_level, clusters[shuffle])
        ami[name] = adjusted_mutual_info_score(truth_level, clusters)
    # engagement AUC on test-window edges
    sampler = EngagementSampler(graph, OwnersAsOf(graph), "test", config.engagement.roles)
    s = sampler.sample(512, seed=123, step=0)
    z, _ = trainer.embed(
        np.concatenate([s.src, s.dst, s.random_neg]), np.tile(s.ts, 3), teacher=False
    )
    zu, zv, zn = np.split(z, 3)
    with torch.no_grad():
        scorer = trainer.scorer
        et = torch.from_numpy(s.etype)
        pos = scorer(torch.from_numpy(zu), et, torch.from_numpy(zv)).numpy()
        neg = scorer(torch.from_numpy(zu), et, torch.from_numpy(zn)).numpy()
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    hir_auc = roc_auc_score(labels, np.r_[pos, neg])
    degree = EventIndex(
        np.concatenate([graph.src, graph.dst]), np.concatenate([graph.ts, graph.ts])
    )
    pop = np.r_[degree.count_before(s.dst, s.ts), degree.count_before(s.random_neg, s.ts)]
    pop_auc = roc_auc_score(labels, pop)
    anchors = args.steps * args.batch
    wait = sum(r["data_wait_s"] for r in records)
    step = sum(r["step_s"] for r in records)
    lines = [
        f"### training quality, `{args.scale}`, {args.steps} steps of {args.batch} anchors "
        f"(CPU, DENSE attention, world knowledge {'on' if args.content else 'off'})",
        "",
        f"command: `python benchmarks/train_quality.py --scale {args.scale} --steps "
        f"{args.steps} --batch {args.batch}{' --content' if args.content else ''}"
        f"{' --center-types' if args.center_types else ''}"
        f"{'' if args.prototypes == '16,128,1024' else ' --prototypes ' + args.prototypes}"
        f"{' --no-seeding' if args.no_seeding else ''}"
        f"{' --seed-at ' + args.seed_at if args.seed_at and not args.no_seeding else ''}"
        f"{'' if args.workers == 1 else f' --workers {args.workers}'}"
        f"{'' if args.precision == 'auto' else f' --precision {args.precision}'}`",
        "",
        "| measure | value | goal |",
        "|---|---:|---:|",
        *(
            f"| NMI, level {level} ({config.model.prototypes[level]} clusters) vs planted "
            f"{name} ({planted[name].n_unique()}) | {nmi[name]:.3f} (chance {chance[name]:.3f}, "
            f"AMI {ami[name]:.3f}) | {goal} |"
            for level, (name, goal) in enumerate(
                (("super", ">= 0.8"), ("mid", ""), ("leaf", ">= 0.6"))
            )
        ),
        f"| engagement AUC, test window, HIR | {hir_auc:.3f} | |",
        f"| engagement AUC, test window, popularity baseline | {pop_auc:.3f} | |",
        f"| training throughput (anchors/s) | {anchors / train_s:,.1f} | |",
        f"| share of step time waiting for data | {wait / (wait + step):.1%} | < 5% |",
        f"| final train loss / first | {records[-1]['loss'] / records[0]['loss']:.3f} | |",
    ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
