"""MovieLens-100K A/B: XGBoost against XGBoost + a peer's embeddings as features, the way
XGBoost + HIR reads HIR's; is HIR better than "any good embedding as a feature"?

    pip install -r benchmarks/requirements-peers.txt   # the peers (not SDK dependencies)
    pip install --no-deps recbole==1.2.0               # LightGCN, and the data files
    python benchmarks/movielens_peer_features.py [--peers BPR,ALS,LightGCN]
        [--hir-run RUN ...] [--data DIR] [--positives ratings|likes] [--bootstrap 200]
        [--record FILE]

- data: MovieLens-100K with its knowledge graph (`hir dataset movielens-100k`), or with
  `--data` a dataset folder in the input format whose ratings are exposures and likes
  conversions (`hir dataset movielens-csv`: ml-latest-small and the other CSV releases);
  the A/B's windows and labels are those of `hir ab` / `hir run` on it (a rating is an
  exposure, a like its conversion);
- refresh times: `hir demo`'s, the middle of the training window, the validation start and
  the test start (`refresh_ends`); at each time T every peer is trained again, from
  scratch, on the ratings (and likes) before T only, and its embeddings become one
  snapshot as of T (`peers/peer_snapshots.py`: L2-normalised, HIR's prototype sizes,
  BoM tokens), as HIR's encoder is retrained for each snapshot by `hir demo`;
- peers: `implicit`'s BPR and ALS with the hyperparameters of `peers/implicit_models.py`
  (64 factors; a rating counts 1, a like 1 more), and RecBole's LightGCN (RecBole's
  defaults, `--lightgcn-epochs` epochs: the count `movielens_peers.py` chose on the
  validation window; choosing it again at each T would need a window before T);
  `--positives likes` trains BPR, ALS and the SVD on the likes alone (what a user
  ranking for conversions might give them; a rating without a like is no positive);
- A/B: `run_ab_on_graph(ABConfig(control="xgboost", treatment="xgboost+hir"))` with the
  peer's snapshots in place of HIR's: both arms fit on the training examples from the
  first snapshot's time on (`HirLookup.fit_from`), each XGBoost arm picks its depth and
  minimum child weight (and the treatment its HIR column set) on validation, paired user
  bootstrap on the test window;
- `--hir-run RUN` (repeatable, as `hir ab --run`): the XGBoost + HIR row from the encoder
  run(s) (`build_hir_lookup`, HIR's default snapshots), and XGBoost + HIR against
  XGBoost + the best peer (the one of lowest test NE, which favours the peer): the two
  treatment arms' predictions on the same test examples, paired user bootstrap.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp
import torch
from peers.peer_snapshots import PeerEmbeddings, check_snapshot, peer_snapshot
from peers.protocol import ratings
from publish import publish

from hir_sdk.datasets import movielens_100k
from hir_sdk.evaluation.ab import compare
from hir_sdk.evaluation.pipeline import ABConfig, ABRun, run_ab_on_graph
from hir_sdk.graph import TemporalGraph, build_graph_from_dir
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.schema.manifest import DAY, iso_time
from hir_sdk.synth import write_world
from hir_sdk.training.as_of import first_window_end
from hir_sdk.training.collaborative_targets import collaborative_targets
from hir_sdk.training.config import CollaborativeConfig
from hir_sdk.training.refresh_chain import refresh_ends

PEERS = ("BPR", "ALS", "LightGCN", "SVD")
WEEK = 7 * DAY


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def rated_before(
    graph: TemporalGraph, cutoff: int, *, likes_only: bool = False
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """The users and movies with a rating before `cutoff`, and their (U, A) matrix: 1 for
    a rating, 2 for a rating and a like, both before `cutoff`. `likes_only`: the users and
    movies with a like, and 1 for each like (a rating without one is no positive)."""
    k = graph.edges_before(cutoff)
    etype, src, dst = graph.etype[:k], graph.src[:k], graph.dst[:k]
    rated = np.isin(etype, graph.role_codes("conversion" if likes_only else "exposure"))
    users, ads = np.unique(src[rated]), np.unique(dst[rated])
    keep = (rated | np.isin(etype, graph.role_codes("conversion"))) & np.isin(src, users)
    keep &= np.isin(dst, ads)
    matrix = sp.csr_matrix(
        (
            np.ones(int(keep.sum()), np.float32),
            (np.searchsorted(users, src[keep]), np.searchsorted(ads, dst[keep])),
        ),
        shape=(len(users), len(ads)),
    )  # duplicates add up
    return users, ads, matrix


def implicit_fit(
    name: str, graph: TemporalGraph, cutoff: int, *, seed: int, likes_only: bool = False
) -> PeerEmbeddings:
    """`implicit`'s BPR or ALS on the ratings (or with `likes_only` the likes) before
    `cutoff`, as `peers/implicit_models` configures them for the retrieval table."""
    from implicit.als import AlternatingLeastSquares
    from implicit.bpr import BayesianPersonalizedRanking
    from threadpoolctl import threadpool_limits

    users, ads, matrix = rated_before(graph, cutoff, likes_only=likes_only)
    if name == "ALS":
        model = AlternatingLeastSquares(
            factors=64, regularization=0.05, iterations=15, random_state=seed, num_threads=1
        )
    else:
        model = BayesianPersonalizedRanking(
            factors=64, iterations=100, random_state=seed, num_threads=1
        )
    with threadpool_limits(1, "blas"):
        model.fit(matrix, show_progress=False)
    u, v = np.asarray(model.user_factors), np.asarray(model.item_factors)
    return PeerEmbeddings(f"implicit {name}", users, u, ads, v, cutoff)


def svd_fit(
    graph: TemporalGraph, cutoff: int, *, seed: int, likes_only: bool = False
) -> PeerEmbeddings:
    """The encoder's collaborative targets as of `cutoff` as a peer: each movie its row of
    `collaborative_targets` (the default `[collaborative]` settings: the rank-64 SVD of
    who rated what, or with `likes_only` of who liked what: the converted pairs), each
    user the sum of the rows of the movies they rated (liked). How good an embedding the
    target is, next to how much of it the encoder keeps."""
    settings = CollaborativeConfig()
    targets, _ = collaborative_targets(
        graph,
        as_of=cutoff,
        roles=settings.roles,
        dim=settings.dim,
        seed=seed,
        pairs="converted" if likes_only else "reached",
    )
    users, ads, matrix = rated_before(graph, cutoff, likes_only=likes_only)
    if targets is None or (targets.row_of[ads] < 0).any():
        raise RuntimeError(f"the collaborative targets as of {iso_time(cutoff)} miss movies")
    ad_vectors = targets.vectors[targets.row_of[ads]]
    user_vectors = (matrix > 0).astype(np.float32) @ ad_vectors
    return PeerEmbeddings("co-rating SVD", users, user_vectors, ads, ad_vectors, cutoff)


def lightgcn_fit(
    graph: TemporalGraph, cutoff: int, workdir: Path, *, epochs: int, seed: int
) -> PeerEmbeddings:
    """RecBole's LightGCN, `epochs` epochs on the ratings before `cutoff` (RecBole's
    defaults otherwise, as in `peers/recbole_models`)."""
    from peers.recbole_models import _train, _vectors, _write_split

    every = ratings(graph)
    train = every.before(cutoff)
    folder = workdir / f"LightGCN-{cutoff}" / "peers"
    # RecBole wants a validation file; without validation nothing reads it
    _write_split(folder, "general", graph, train, every.between(cutoff - WEEK, cutoff), cutoff)
    model, dataset, _, _ = _train("LightGCN", folder, epochs=epochs, seed=seed, validate=False)
    users, ads = np.unique(train.user), np.unique(train.ad)
    user_vectors, items = _vectors("LightGCN", model, dataset, {}, users)
    ids = dataset.field2token_id["item_id"]
    ad_vectors = items[[ids[str(int(a))] for a in ads]]
    return PeerEmbeddings("RecBole LightGCN", users, user_vectors, ads, ad_vectors, cutoff)


def peer_lookup(
    graph: TemporalGraph,
    fit: Callable[[int], PeerEmbeddings],
    times: list[int],
    *,
    seed: int,
    likes_only: bool = False,
) -> HirLookup:
    """One snapshot per refresh time, each of a peer trained before it, checked."""
    snapshots = []
    for cutoff in times:
        started = time.perf_counter()
        peer = fit(cutoff)
        snapshot = peer_snapshot(graph, peer, seed=seed)
        users, ads, _ = rated_before(graph, cutoff, likes_only=likes_only)
        check_snapshot(graph, snapshot, np.concatenate([users, ads]))
        counts = snapshot.meta["counts"]
        log(
            f"{peer.name} as of {iso_time(cutoff)}: {counts.get('user', 0)} users, "
            f"{counts.get('ad', 0)} movies, dim {snapshot.meta['dim']}, BoM "
            f"{snapshot.meta['bom']['codebooks']}x{snapshot.meta['bom']['codewords']} "
            f"({time.perf_counter() - started:.0f} s)"
        )
        snapshots.append(snapshot)
    lookup = HirLookup(graph, snapshots)
    if lookup.fit_from != times[0]:
        raise RuntimeError(f"fit_from {iso_time(lookup.fit_from)} is not the first refresh time")
    return lookup


def covered(lookup: HirLookup, test: pl.DataFrame) -> np.ndarray:
    """(n,) whether a test example's user and movie both have features."""
    t = test["ts"].to_numpy()
    found = lookup.lookup(test["user"].to_numpy(), t).found
    return found & lookup.lookup(test["ad"].to_numpy(), t).found


def _pct(delta, control: float) -> str:
    return (
        f"{100 * delta.estimate / control:+.2f}% "
        f"[{100 * delta.low / control:+.2f}%, {100 * delta.high / control:+.2f}%]"
    )


def on_covered(run: ABRun, mask: np.ndarray, args) -> str:
    """The NE delta [CI] of the treatment on the test examples that have its features."""
    p = run.predictions.filter(pl.Series(mask))
    ab = compare(
        p["label"].to_numpy(),
        p["p_xgboost"].to_numpy(),
        p["p_xgboost+hir"].to_numpy(),
        p["user_id"].to_numpy(),
        n_bootstrap=args.bootstrap,
        seed=args.seed,
    )
    ne = ab.metric("ne")
    return _pct(ne.delta, ne.control)


def ab_row(name: str, run: ABRun, mask: np.ndarray, args) -> str:
    """One Markdown row: NE delta vs the control with its interval, AUC, gAUC and
    calibration (control -> treatment), and the NE delta where the features exist."""
    ab = run.report.ab
    ne = ab.metric("ne")
    cells = [name, f"{ne.control:.4f} -> {ne.treatment:.4f}", _pct(ne.delta, ne.control)]
    for metric in ("auc", "gauc", "calibration"):
        d = ab.metric(metric)
        cells.append(f"{d.control:.4f} -> {d.treatment:.4f}")
    cells += [f"{100 * mask.mean():.1f}%", on_covered(run, mask, args)]
    return "| " + " | ".join(cells) + " |"


def same_test(a: ABRun, b: ABRun) -> bool:
    cols = ["user_id", "ad_id", "ts", "label"]
    return a.predictions.select(cols).equals(b.predictions.select(cols))


def _paired(hir: ABRun, peer: ABRun, peer_name: str, args, mask: np.ndarray | None = None):
    """`compare` of XGBoost + HIR (treatment) with XGBoost + the peer (control) on the
    test examples in `mask` (default: all)."""
    p = "p_xgboost+hir"
    rows = np.ones(hir.predictions.height, dtype=bool) if mask is None else mask
    h, q = hir.predictions.filter(pl.Series(rows)), peer.predictions.filter(pl.Series(rows))
    return compare(
        h["label"].to_numpy(),
        q[p].to_numpy(),
        h[p].to_numpy(),
        h["user_id"].to_numpy(),
        control=f"XGBoost + {peer_name}",
        treatment="XGBoost + HIR",
        n_bootstrap=args.bootstrap,
        seed=args.seed,
    )


def head_to_head(hir: ABRun, peer: ABRun, peer_name: str, has_peer: np.ndarray, args) -> list[str]:
    """XGBoost + HIR against XGBoost + the peer, on the same test examples; then split by
    whether the peer has features for the example (`has_peer`: its user and movie were
    in the peer's snapshot), which says where the difference comes from."""
    if not same_test(hir, peer):
        raise RuntimeError("the HIR and peer A/Bs' test examples differ (rows or order)")
    ab = _paired(hir, peer, peer_name, args)
    ne = ab.metric("ne")
    lines = [
        "",
        f"XGBoost + HIR against XGBoost + {peer_name} (the best peer; same "
        f"{ab.examples:,} test examples, {ab.users:,} users resampled):",
        "",
        "| metric | " + f"XGBoost + {peer_name} | XGBoost + HIR | delta [95% CI] |",
        "|---|---:|---:|---:|",
    ]
    for d in ab.metrics:
        lines.append(
            f"| {d.spec.label} | {d.control:.4f} | {d.treatment:.4f} | "
            f"{d.delta.estimate:+.4f} [{d.delta.low:+.4f}, {d.delta.high:+.4f}] |"
        )
    lines += ["", f"NE of HIR relative to the peer: {_pct(ne.delta, ne.control)}; {ab.verdict}"]
    for name, part in (("with", has_peer), ("without", ~has_peer)):
        if part.any():
            ne = _paired(hir, peer, peer_name, args, part).metric("ne")
            lines.append(
                f"- on the {part.sum():,} test examples {name} the peer's features: "
                f"{_pct(ne.delta, ne.control)}"
            )
    return lines


def lookups_for(peers: list[str], graph, data: Path, tmp: Path, args, timings) -> dict:
    """Name -> snapshots: each peer's, one per refresh time, and with `--hir-run` HIR's."""
    t = graph.manifest.time
    times = sorted(refresh_ends(t, first_window_end(graph)).values())
    log("refresh times: " + ", ".join(iso_time(x) for x in times))
    likes = args.positives == "likes"
    fits: dict[str, Callable[[int], PeerEmbeddings]] = {
        "BPR": lambda c: implicit_fit("BPR", graph, c, seed=args.seed, likes_only=likes),
        "ALS": lambda c: implicit_fit("ALS", graph, c, seed=args.seed, likes_only=likes),
        "LightGCN": lambda c: lightgcn_fit(
            graph, c, tmp / "recbole", epochs=args.lightgcn_epochs, seed=args.seed
        ),
        "SVD": lambda c: svd_fit(graph, c, seed=args.seed, likes_only=likes),
    }
    lookups: dict[str, HirLookup] = {}
    for peer in peers:
        started = time.perf_counter()
        lookups[peer] = peer_lookup(graph, fits[peer], times, seed=args.seed, likes_only=likes)
        timings[f"{peer} fits + snapshots"] = time.perf_counter() - started
    if args.hir_run:
        started = time.perf_counter()
        lookups["HIR"] = build_hir_lookup(args.hir_run, data, graph, seed=args.seed, log=log)
        timings["HIR snapshots"] = time.perf_counter() - started
    return lookups


def render(
    dataset: str, runs: dict[str, ABRun], masks: dict, lookups: dict, args, timings
) -> list[str]:
    """The record's Markdown; `dataset` is the data set's name."""
    first = next(iter(runs.values()))
    for name, run in runs.items():
        if not same_test(first, run):
            raise RuntimeError(f"the {name} A/B's test examples differ from the others'")
    ab = first.report.ab
    fit_from = {name: lookup.fit_from for name, lookup in lookups.items()}
    times = [s.as_of for s in next(iter(lookups.values())).full_snapshots]
    lines = [
        f"#### XGBoost + peer embeddings vs XGBoost on {dataset} (seed {args.seed})",
        "",
        "command: `python benchmarks/movielens_peer_features.py " + " ".join(sys.argv[1:]) + "`",
        "",
        f"Peer snapshots as of {', '.join(iso_time(x) for x in times)} (each peer retrained "
        f"on the {args.positives} before each). Both arms of each A/B fit from "
        + ", ".join(f"{iso_time(x)} ({n})" for n, x in fit_from.items())
        + f". Test window: {ab.examples:,} examples, {ab.positives:,} likes, {ab.users:,} "
        f"users; {args.bootstrap} user resamples.",
        "",
        "| treatment (XGBoost + ...) | NE control -> treatment | NE delta [95% CI] | "
        "ROC-AUC | gAUC | calibration (pred/obs) | test examples with features | "
        "NE delta on those [95% CI] |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "BPR": "implicit BPR",
        "ALS": "implicit ALS",
        "LightGCN": "RecBole LightGCN",
        "SVD": "co-rating SVD (HIR's collaborative target)",
    }
    for name, run in runs.items():
        lines.append(ab_row(labels.get(name, name), run, masks[name], args))
    lines += ["", "Columns and XGBoost configuration each treatment chose on validation:", ""]
    for name, run in runs.items():
        search = run.searches.get("xgboost+hir")
        if search is not None:
            lines.append(f"- {labels.get(name, name)}: {search.chosen.describe()}")
    control = first.searches.get("xgboost")
    if control is not None:
        lines.append(f"- XGBoost (control): {control.chosen.describe()}")
    if "HIR" in runs:
        peer_runs = {n: r for n, r in runs.items() if n != "HIR"}
        best = min(peer_runs, key=lambda n: peer_runs[n].report.ab.metric("ne").treatment)
        lines += head_to_head(runs["HIR"], peer_runs[best], labels[best], masks[best], args)
    lines += ["", ", ".join(f"{name}: {s:.0f} s" for name, s in timings.items())]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", default="BPR,ALS", help=f"comma-separated, from {PEERS}")
    parser.add_argument(
        "--hir-run", action="append", default=[], help="HIR encoder run (repeat for refreshes)"
    )
    parser.add_argument(
        "--positives",
        choices=("ratings", "likes"),
        default="ratings",
        help="what the peers learn from: every rating (a like counting once more), or the "
        "likes only (BPR, ALS, SVD)",
    )
    parser.add_argument("--lightgcn-epochs", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=200, help="user resamples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads for RecBole")
    parser.add_argument(
        "--data", type=Path, help="a dataset folder in the input format (default: MovieLens-100K)"
    )
    parser.add_argument("--record")
    args = parser.parse_args()
    peers = [p for p in args.peers.split(",") if p]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown or not peers:
        parser.error(f"--peers: unknown or none {unknown}; choose from {list(PEERS)}")
    if args.positives == "likes" and "LightGCN" in peers:
        parser.error("--positives likes: LightGCN learns from the ratings only")
    torch.set_num_threads(args.threads)
    config = ABConfig(
        control="xgboost", treatment="xgboost+hir", n_bootstrap=args.bootstrap, seed=args.seed
    )
    runs: dict[str, ABRun] = {}
    masks: dict[str, np.ndarray] = {}
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        data = args.data or write_world(movielens_100k(), Path(tmp_name) / "data")
        graph = build_graph_from_dir(data)
        dataset_name = "MovieLens-100K" if args.data is None else graph.manifest.name
        lookups = lookups_for(peers, graph, data, Path(tmp_name), args, timings)
        for name, lookup in lookups.items():
            started = time.perf_counter()
            runs[name] = run_ab_on_graph(graph, config, hir=lookup)
            timings[f"A/B {name}"] = time.perf_counter() - started
            masks[name] = covered(lookup, runs[name].examples["test"].frame)
            log(f"{name}: {runs[name].report.ab.verdict} ({timings[f'A/B {name}']:.0f} s)")
    publish(render(dataset_name, runs, masks, lookups, args, timings), args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
