"""MovieLens-100K ablations of the HIR encoder, scored on the validation window only, so
that defaults are chosen without reading the test window.

    python benchmarks/movielens_ablation.py [--steps 100] [--variants base logq ...]
        [--schedule single|run] [--record benchmarks/results/movielens_ablation.md]

- data: MovieLens-100K with its knowledge graph (`hir dataset movielens-100k`); windows
  at the 80% / 90% quantiles of the rating times;
- each variant: the default `TrainConfig` (content on, as `hir demo` trains on
  MovieLens; `objectives = "as_configured"`) with the variant's changes, trained on every
  edge before the validation start (`select = "last"`: nothing of the validation window
  is read); with `--schedule run`, as `hir run` trains before the validation start
  instead: `--steps` on the first half of the training window, then a warm-started
  refresh of a third of the steps until the validation start, which embeds;
- embedded as of the validation start; queries: the users who like (rate 4 or 5) a movie
  in the validation window; candidates: every movie, minus each user's earlier ratings;
  recall@20 / @100 of exact k-NN on the embeddings and of the 16-probe BoM index
  (`conversion_recall(window="validation")`), next to the popularity list; k-NN
  recall@100 also over the pairs of users with a rating before the window and of those
  without, and the fallback list (k-NN for the former, popularity for the latter);
- `pop corr`: the correlation, over the candidate movies, between a movie's mean cosine
  to the query users and its log popularity before the window (negative: the geometry
  ranks popular movies down);
- `nbr gAUC`: how well the embedding's movie neighbourhoods tell a user's likes from
  their other ratings, what the neighbour-outcome ranking features read: the per-user
  AUC, over the validation window's ratings, of `hir_nbr_rate_t0.1` (the like rate of
  the user's last 50 earlier ratings, weighted by their movies' similarity to the rated
  one; `ranking.neighbour_outcomes`) computed from the snapshot; 0.5 says nothing. With
  `implicit` installed (`benchmarks/requirements-peers.txt`) the table ends with the
  same figure for `implicit`'s BPR and ALS trained on the same ratings.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from publish import publish

from hir_sdk.datasets import movielens_100k
from hir_sdk.evaluation.conversion_retrieval import FALLBACK, conversion_recall, ranked_lists
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.evaluation.metrics import gauc
from hir_sdk.graph import TemporalGraph, build_graph_from_dir
from hir_sdk.interests.entity_embeddings import EntityEmbeddings, embed_entities
from hir_sdk.interests.hierarchy import snapshot_rows
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.neighbour_outcomes import NeighbourOutcomes
from hir_sdk.synth import write_world
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.as_of import first_window_end
from hir_sdk.training.refresh_chain import train_refreshed

# name -> changes to the default config, by section ({} for a top-level key)
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    # what training picks by itself (`objectives = "auto"`, training.content_agreement)
    "automatic choice": {"objectives": "auto"},
    # the same, every stretch of its batches spanning the training window
    "automatic choice, spread order": {"objectives": "auto", "anchor_order": "spread"},
    # the same, the engagement scorer starting at a wider logit scale
    "automatic choice, scale 20": {"objectives": "auto", "engagement": {"scale": 20.0}},
    # the same, a third of the default learning rate
    "automatic choice, lr 0.001": {"objectives": "auto", "optim": {"lr": 1e-3}},
    "no in-batch softmax": {"engagement": {"in_batch": 0.0}},
    "logq": {"engagement": {"logq_correction": True}},
    "exposed negatives + logq": {
        "engagement": {"logq_correction": True, "exposed_negatives": True}
    },
    "content weight 1": {"content": {"weight": 1.0}},
    "content weight 1 + logq": {
        "content": {"weight": 1.0},
        "engagement": {"logq_correction": True},
    },
    "content weight 1, no self-distillation + logq": {
        "content": {"weight": 1.0},
        "distill": {"weight": 0.0, "cross_weight": 0.0},
        "engagement": {"logq_correction": True},
    },
    "no content": {"use_content": False},
    "no content + logq": {"use_content": False, "engagement": {"logq_correction": True}},
    "engagement only": {"use_content": False, "distill": {"weight": 0.0, "cross_weight": 0.0}},
    "engagement only + logq": {
        "use_content": False,
        "distill": {"weight": 0.0, "cross_weight": 0.0},
        "engagement": {"logq_correction": True},
    },
    "engagement only + logq, content as input": {
        "content": {"weight": 0.0},
        "distill": {"weight": 0.0, "cross_weight": 0.0},
        "engagement": {"logq_correction": True},
    },
    "self-distillation 0.2, no cross, no content + logq": {
        "use_content": False,
        "distill": {"weight": 0.2, "cross_weight": 0.0},
        "engagement": {"logq_correction": True},
    },
    "read-only clusters, no content + logq": {
        "use_content": False,
        "distill": {"shapes_encoder": False},
        "engagement": {"logq_correction": True},
    },
    "read-only clusters, content as input + logq": {
        "content": {"weight": 0.0},
        "distill": {"shapes_encoder": False},
        "engagement": {"logq_correction": True},
    },
    "read-only clusters, content as input + logq + exposed negatives": {
        "content": {"weight": 0.0},
        "distill": {"shapes_encoder": False},
        "engagement": {"logq_correction": True, "exposed_negatives": True},
    },
}


POPULAR = "popularity (engagement before test)"


def configure(base: TrainConfig, changes: dict[str, Any]) -> TrainConfig:
    """`base` with `changes` applied ({"section": {"key": value}} or {"key": value})."""
    top = {}
    for key, value in changes.items():
        if isinstance(value, dict):
            top[key] = dataclasses.replace(getattr(base, key), **value)
        else:
            top[key] = value
    return dataclasses.replace(base, **top)


def popularity_correlation(graph, snapshot, cutoff: int) -> float:
    """Correlation of each candidate movie's mean cosine to the query users with its log
    popularity before `cutoff` (see the module)."""
    ranked = ranked_lists(graph, snapshot, exclude_seen=True, window="validation")
    z, row = snapshot.embeddings(), snapshot_rows(snapshot, graph)
    scores = z[row[ranked.users]] @ z[row[ranked.ads]].T
    popular = np.bincount(graph.dst[: graph.edges_before(cutoff)], minlength=graph.num_nodes)
    return float(np.corrcoef(scores.mean(axis=0), np.log1p(popular[ranked.ads]))[0, 1])


def neighbour_gauc(graph: TemporalGraph, snapshot: EntityEmbeddings) -> float:
    """Per-user AUC of `hir_nbr_rate_t0.1` from `snapshot` on the validation window's
    ratings (see the module)."""
    frame = build_examples(graph, "validation").frame
    columns = NeighbourOutcomes(graph, HirLookup(graph, [snapshot])).compute(
        frame["user"].to_numpy(), frame["ad"].to_numpy(), frame["ts"].to_numpy()
    )
    rate = columns["hir_nbr_rate_t0.1"].to_numpy()
    found = ~np.isnan(rate)
    return gauc(frame["label"].to_numpy()[found], rate[found], frame["user"].to_numpy()[found])


def peer_rows(graph: TemporalGraph, cutoff: int, seed: int) -> list[str]:
    """`nbr gAUC` of `implicit`'s BPR and ALS trained on the ratings before `cutoff`
    (none when `implicit` is not installed)."""
    try:
        from movielens_peer_features import implicit_fit
        from peers.peer_snapshots import peer_snapshot
    except ImportError:
        return []
    rows = []
    for name in ("BPR", "ALS"):
        snapshot = peer_snapshot(graph, implicit_fit(name, graph, cutoff, seed=seed), seed=seed)
        rows.append(
            f"| implicit {name} (peer) |" + " |" * 9 + f" {neighbour_gauc(graph, snapshot):.3f} | |"
        )
    return rows


def train(data: Path, run: Path, config: TrainConfig, graph, args) -> Path:
    """The encoder run that embeds as of the validation start: one run trained on every
    edge before it, or (`--schedule run`) `hir run`'s first run until the training
    window's midpoint and its warm-started refresh until the validation start."""
    if args.schedule == "single":
        Trainer(data, run, config).fit(progress=False)
        return run
    t = graph.manifest.time
    ends = {"run": first_window_end(graph), "run_validation": t.validation_start}
    return train_refreshed(data, run, config, ends, refresh_steps=max(args.steps // 3, 1))[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="encoder training steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument(
        "--schedule",
        choices=("single", "run"),
        default="single",
        help="one run until the validation start, or hir run's first run and refresh",
    )
    parser.add_argument("--record")
    args = parser.parse_args()
    rows, popular = [], None
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(movielens_100k(), Path(tmp) / "data")
        graph = build_graph_from_dir(data)
        cutoff = graph.manifest.time.validation_start
        base = dataclasses.replace(
            TrainConfig(),
            steps=args.steps,
            seed=args.seed,
            eval_every=args.steps,
            checkpoint_every=args.steps,
            use_content=True,
            select="last",  # trains on everything before the validation start
            objectives="as_configured",  # each variant's settings, not the automatic choice
        )
        for name in args.variants:
            run = Path(tmp) / f"run_{len(rows)}"
            started = time.perf_counter()
            encoder = train(data, run, configure(base, VARIANTS[name]), graph, args)
            seconds = time.perf_counter() - started
            snapshot = embed_entities(
                encoder, data, cutoff, node_types=["user", "ad"], seed=args.seed
            )
            result = conversion_recall(graph, snapshot, exclude_seen=True, window="validation")
            recall, exact = result.recall, "exact k-NN on embeddings"
            cells = [
                *recall[exact],
                result.with_history[exact][1],
                result.without_history[exact][1],
                *recall[FALLBACK],
                *recall["BoM index, 16-probe query, re-scored"],
            ]
            rows.append(
                f"| {name} | "
                + " | ".join(f"{r:.3f}" for r in cells)
                + f" | {popularity_correlation(graph, snapshot, cutoff):+.2f}"
                + f" | {neighbour_gauc(graph, snapshot):.3f} | {seconds:.0f} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
        rows += peer_rows(graph, cutoff, args.seed)
    popular = result.recall[POPULAR]
    lines = [
        f"### MovieLens-100K ablations, validation window ({args.steps} steps, seed {args.seed}"
        + (", hir run's schedule)" if args.schedule == "run" else ")"),
        "",
        f"command: `python benchmarks/movielens_ablation.py --steps {args.steps} --variants "
        + " ".join(f"'{v}'" if " " in v else v for v in args.variants)
        + (" --schedule run" if args.schedule == "run" else "")
        + "`",
        "",
        f"{result.users:,} users who like {result.pairs:,} movies in the validation window, "
        f"{result.pairs_with_history:,} of them by users with a rating before it; popularity "
        f"recall@20 / @100 {popular[0]:.3f} / {popular[1]:.3f} (users with a history "
        f"{result.with_history[POPULAR][1]:.3f}, without {result.without_history[POPULAR][1]:.3f} "
        "at 100).",
        "",
        "| variant | k-NN recall@20 | k-NN recall@100 | k-NN @100, users with a history | "
        "k-NN @100, without | fallback recall@20 | fallback recall@100 | 16-probe recall@20 "
        "| 16-probe recall@100 | pop corr | nbr gAUC | training s |",
        "|---|" + "---:|" * 11,
        *rows,
    ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
