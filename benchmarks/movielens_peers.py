"""MovieLens-100K: HIR retrieval side by side with established peer recommenders run from
their own package, on the same time split and the same candidates.

    pip install implicit==0.7.3        # the peers (not a dependency of the SDK)
    python benchmarks/movielens_peers.py [--steps 300] [--record FILE]

- data: MovieLens-100K with its knowledge graph from the installed recbole files
  (`hir dataset movielens-100k`); windows at the 80% / 90% quantiles of the rating times;
- queries: the users who like (rate 4 or 5) a movie in the test window; relevant: those
  movies; candidates: every movie rated before the test start, minus the ones the user
  rated before it (the same for every method);
- HIR: the encoder `hir demo --dataset movielens-100k` trains (the first half of the
  training window, with the movies' titles and genres as content and the knowledge graph
  as structure), embedded as of the test start; ranked by exact k-NN, and by the BoM
  inverted index (plain and multi-probe, re-scored);
- the multi-stage ranker (offline user model + online target-aware ranker, HIR features,
  fitted on the ratings after the encoder's window, selected on the validation window)
  re-ranking the exact k-NN top 100 by its calibrated like probability at the test start
  (so its recall@100 is the k-NN's);
- peers, trained on every rating before the test start (confidence 1, plus 1 for a like):
  `implicit`'s alternating least squares (Hu et al. 2008) and Bayesian personalized
  ranking (Rendle et al. 2009), 64 factors, seeded, one thread; and the popularity list;
- recall@K and NDCG@K averaged over query users (`hir_sdk.evaluation.metrics`).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp
from implicit.als import AlternatingLeastSquares
from implicit.bpr import BayesianPersonalizedRanking
from publish import publish
from threadpoolctl import threadpool_limits

from hir_sdk.datasets import movielens_100k
from hir_sdk.evaluation.conversion_retrieval import RankedLists, ranked_lists
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.evaluation.hir_snapshots import build_hir_lookup
from hir_sdk.evaluation.metrics import ndcg_at_k, recall_at_k
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.sequence.multistage import MultiStageRanker, RankingExamples
from hir_sdk.synth import write_world
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.as_of import training_midpoint

K_VALUES = (10, 20, 100)


def peer_scores(graph, ranked, *, factors: int, seed: int) -> dict[str, np.ndarray]:
    """(U, A) scores of the implicit peers for the query users over the candidate ads."""
    cutoff = graph.manifest.time.test_start
    k = graph.edges_before(cutoff)
    users = np.flatnonzero(np.isin(np.arange(graph.num_nodes), graph.src[:k]))
    user_row = np.full(graph.num_nodes, -1)
    user_row[users] = np.arange(len(users))
    item_col = np.full(graph.num_nodes, -1)
    item_col[ranked.ads] = np.arange(len(ranked.ads))
    src, dst = graph.src[:k], graph.dst[:k]
    keep = (user_row[src] >= 0) & (item_col[dst] >= 0)  # user -> candidate edges
    matrix = sp.csr_matrix(
        (np.ones(int(keep.sum()), np.float32), (user_row[src[keep]], item_col[dst[keep]])),
        shape=(len(users), len(ranked.ads)),
    )  # duplicates add up: a rating is 1, a rating plus a like 2
    models = {
        "implicit ALS (peer)": AlternatingLeastSquares(
            factors=factors, regularization=0.05, iterations=15, random_state=seed, num_threads=1
        ),
        "implicit BPR (peer)": BayesianPersonalizedRanking(
            factors=factors, iterations=100, random_state=seed, num_threads=1
        ),
    }
    out = {}
    rows = user_row[ranked.users]
    for name, model in models.items():
        with threadpool_limits(1, "blas"):  # implicit asks for it (its own threads do the work)
            model.fit(matrix, show_progress=False)
        u = np.asarray(model.user_factors)[rows]
        v = np.asarray(model.item_factors)
        out[name] = u @ v.T
    return out


def multistage_rerank(graph, hir: HirLookup, ranked: RankedLists, candidates: np.ndarray):
    """The multi-stage ranker fitted like the A/B's arm, re-ranking `candidates` (U, C)."""
    features = AsOfFeatures(graph)
    data = {}
    for window in ("train", "validation"):
        frame = build_examples(graph, window).frame
        if window == "train":
            frame = frame.filter(pl.col("ts") >= hir.fit_from)
        dense = features.compute(*(frame[c].to_numpy() for c in ("user", "ad", "ts")))
        data[window] = RankingExamples.of(frame, dense)
    ranker = MultiStageRanker(graph, hir).fit(data["train"], data["validation"])
    request, slot = np.nonzero(candidates >= 0)
    user, ad = ranked.users[request], candidates[request, slot]
    ts = np.full(len(ad), graph.manifest.time.test_start)
    scores = np.full(candidates.shape, -np.inf)
    scores[request, slot] = ranker.predict(
        RankingExamples(
            user=user,
            ad=ad,
            owner=features.owners.at(ad, ts),
            ts=ts,
            label=np.zeros(len(ad), dtype=np.float32),
            dense=features.compute(user, ad, ts),
        )
    )
    order = np.argsort(-scores, axis=1, kind="stable")
    return np.take_along_axis(candidates, order, axis=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="encoder training steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record")
    args = parser.parse_args()
    timings = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(movielens_100k(), Path(tmp) / "data")
        graph = build_graph_from_dir(data)
        t = graph.manifest.time
        config = dataclasses.replace(
            TrainConfig(),
            steps=args.steps,
            seed=args.seed,
            eval_every=max(args.steps // 3, 1),
            checkpoint_every=max(args.steps // 3, 1),
            use_content=True,
            train_until=str(training_midpoint(t)),  # as hir demo --refresh-steps 0
            select="last",  # selecting on validation would read the rankers' window
        )
        started = time.perf_counter()
        Trainer(data, Path(tmp) / "run", config).fit(progress=False)
        timings["HIR encoder training"] = time.perf_counter() - started
        hir = build_hir_lookup(Path(tmp) / "run", data, graph, seed=args.seed)
    ranked = ranked_lists(graph, hir.full_snapshots[-1], top=max(K_VALUES), exclude_seen=True)
    started = time.perf_counter()
    peers = peer_scores(graph, ranked, factors=64, seed=args.seed)
    timings["both peers' training"] = time.perf_counter() - started
    lists = {f"HIR {name}": ids for name, ids in ranked.lists.items() if "popularity" not in name}
    started = time.perf_counter()
    lists["HIR exact k-NN top 100, re-ranked by the multi-stage ranker"] = multistage_rerank(
        graph, hir, ranked, ranked.lists["exact k-NN on embeddings"]
    )
    timings["multi-stage ranker fit + scoring"] = time.perf_counter() - started
    lists |= {name: ranked.rank(scores, max(K_VALUES)) for name, scores in peers.items()}
    lists["popularity (ratings before test)"] = ranked.lists["popularity (engagement before test)"]
    relevant = ranked.relevant()
    header = " | ".join(f"recall@{k} | NDCG@{k}" for k in K_VALUES)
    lines = [
        f"### MovieLens-100K, HIR retrieval vs peers ({args.steps} encoder steps, seed "
        f"{args.seed})",
        "",
        f"command: `python benchmarks/movielens_peers.py --steps {args.steps}"
        f"{f' --seed {args.seed}' if args.seed else ''}`",
        "",
        f"{len(ranked.users):,} users who like {ranked.truth.height:,} movies in the test "
        f"window; {len(ranked.ads):,} candidate movies, each user's earlier ratings left out.",
        "",
        f"| method | {header} |",
        "|---|" + "---:|" * (2 * len(K_VALUES)),
    ]
    for name, ids in lists.items():
        cells = []
        for k in K_VALUES:
            got = [row[row >= 0] for row in ids]
            cells += [f"{recall_at_k(got, relevant, k):.3f}", f"{ndcg_at_k(got, relevant, k):.3f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", ", ".join(f"{name}: {s:.0f} s" for name, s in timings.items())]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
