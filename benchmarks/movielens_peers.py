"""MovieLens-100K: HIR retrieval side by side with established peer recommenders run from
their own packages, on the same time split, the same candidates and the same metrics.

    pip install -r benchmarks/requirements-peers.txt   # the peers (not SDK dependencies)
    pip install --no-deps recbole==1.2.0
    python benchmarks/movielens_peers.py [--steps 300] [--peers-only | --hir-run RUN ...]
        [--recbole LightGCN,SASRec,KGIN] [--max-epochs 300] [--likes] [--no-tune] [--data DIR]
        [--record FILE]

- data: MovieLens-100K with its knowledge graph from the installed recbole files
  (`hir dataset movielens-100k`), or with `--data` a dataset folder in the input format
  whose ratings are exposures and likes conversions (`hir dataset movielens-csv`);
  windows at the 80% / 90% quantiles of the rating times;
- queries: the users who like (rate 4 or 5) a movie in the test window; relevant: those
  movies; candidates: every movie that exists before the test start, minus the ones the
  user rated before it (the same for every method; `peers/protocol.py`);
- HIR (unless `--peers-only`): the encoder `hir demo --dataset movielens-100k
  --refresh-steps 0` trains (the first half of the training window, with the movies'
  titles and genres as content and the knowledge graph as structure), or the runs given
  by `--hir-run` (as `hir run` writes them), embedded as of the test start; ranked by
  exact k-NN, and by the BoM inverted index (plain and multi-probe, re-scored);
- the multi-stage ranker (offline user model + online target-aware ranker, HIR features,
  fitted on the ratings after the encoder's window, selected on the validation window)
  re-ranking the exact k-NN top 100 by its calibrated like probability at the test start
  (so its recall@100 is the k-NN's);
- peers, trained on every rating before the test start: `implicit`'s ALS and BPR
  (`peers/implicit_models.py`; with `--likes` each also on the likes alone), each one's
  settings chosen on the validation window (`--no-tune`: fixed settings); RecBole's
  LightGCN (graph), SASRec (sequence) and KGIN (knowledge graph: the same Freebase
  links), each epoch count chosen on the validation window and refit
  (`peers/recbole_models.py`); and the popularity list;
- the engagement prior (`hir_sdk.ranking.retrieval.engagement_prior`): HIR's exact k-NN
  and each peer also ranked by its score plus a weight times the prior, the weight and
  the prior's half-life scale chosen on the validation window by the same rule (HIR from
  its snapshot as of the validation start, so `--hir-run` takes every refresh run; the
  `implicit` peers refit on the ratings before it, the RecBole peers scored by their
  selection fit, which is trained on those ratings; `hir_sdk.evaluation.prior_choice`);
  the popularity list also by the prior alone (time-decayed, its scale chosen the same
  way);
- recall@K and NDCG@K averaged over query users (`hir_sdk.evaluation.metrics`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl
import torch
from peers.implicit_models import GRID, MODELS, implicit_scores
from peers.protocol import popularity_scores, query_lists, same_queries
from peers.recbole_models import recbole_fit
from publish import publish

from hir_sdk.datasets import movielens_100k
from hir_sdk.errors import InputError
from hir_sdk.evaluation.conversion_retrieval import RankedLists, ranked_lists
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.evaluation.metrics import ndcg_at_k, recall_at_k
from hir_sdk.evaluation.prior_choice import (
    PRIOR_HALF_LIFE_SCALES,
    PRIOR_WEIGHTS,
    PriorChoice,
    choose_blend_decay,
    prior_from_snapshots,
)
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.retrieval.engagement_prior import engagement_prior
from hir_sdk.ranking.sequence.multistage import MultiStageRanker, RankingExamples
from hir_sdk.synth import write_world
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.as_of import first_window_end

K_VALUES = (10, 20, 100)
# the prior's weights tried on the validation window, for HIR and the implicit peers: wider
# than the SDK's grid, as a peer's scores are not cosines
BLEND_WEIGHTS = (*PRIOR_WEIGHTS, 8.0, 16.0, 32.0)
RECBOLE_PEERS = ("LightGCN", "SASRec", "KGIN")


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


def train_hir(data: Path, out: Path, *, steps: int, seed: int, graph) -> Path:
    """The encoder `hir demo --refresh-steps 0` trains: the first half of the training
    window, content on, the last checkpoint."""
    config = dataclasses.replace(
        TrainConfig(),
        steps=steps,
        seed=seed,
        eval_every=max(steps // 3, 1),
        checkpoint_every=max(steps // 3, 1),
        use_content=True,
        train_until=str(first_window_end(graph)),  # as hir demo --refresh-steps 0
        select="last",  # selecting on validation would read the rankers' window
    )
    Trainer(data, out, config).fit(progress=False)
    return out


def hir_lists(
    args, data: Path, graph, tmp: Path, timings: dict, choices: dict
) -> tuple[RankedLists, dict]:
    """HIR's ranked lists (exact k-NN, with the engagement prior, BoM index, the
    multi-stage re-ranking) as of the test start, from `--hir-run` or an encoder trained
    here; the prior's weight chosen on the validation window (`prior_from_snapshots`)."""
    runs = [Path(r) for r in args.hir_run]
    if not runs:
        started = time.perf_counter()
        runs = [train_hir(data, tmp / "run", steps=args.steps, seed=args.seed, graph=graph)]
        timings["HIR encoder training"] = time.perf_counter() - started
    hir = build_hir_lookup(runs, data, graph, seed=args.seed)
    choice = prior_from_snapshots(
        graph,
        hir.full_snapshots,
        exclude_seen=True,
        weights=BLEND_WEIGHTS,
        half_life_scales=args.prior_scales,
    )
    if choice is None:
        raise InputError(
            "no HIR snapshot whose encoder read nothing of the validation window, or no "
            "conversion in that window, to choose the engagement prior's weight on"
        )
    choices["HIR"] = choice
    ranked = ranked_lists(
        graph,
        hir.full_snapshots[-1],
        top=max(K_VALUES),
        exclude_seen=True,
        prior_weight=choice.weight,
        cold_prior_weight=choice.weight_without_history,
        prior_half_life_scale=choice.half_life_scale,
    )
    lists = {f"HIR {name}": ids for name, ids in ranked.lists.items() if "popularity" not in name}
    started = time.perf_counter()
    lists["HIR exact k-NN top 100, re-ranked by the multi-stage ranker"] = multistage_rerank(
        graph, hir, ranked, ranked.lists["exact k-NN on embeddings"]
    )
    timings["multi-stage ranker fit + scoring"] = time.perf_counter() - started
    return ranked, lists


def with_prior(
    graph,
    queries: RankedLists,
    validation: RankedLists,
    scores: dict[str, np.ndarray],
    early: dict[str, np.ndarray],
    *,
    choices: dict,
    scales: tuple[float, ...] = PRIOR_HALF_LIFE_SCALES,
) -> dict[str, np.ndarray]:
    """Each peer's test `scores` plus the engagement prior, its weight and decay chosen as
    HIR's are, from `early`: the same peer's scores of the `validation` queries, fitted
    on the ratings before the validation start (`choose_blend_decay`)."""
    test_start = graph.manifest.time.test_start
    out = {}
    for name, s in scores.items():
        choice = choose_blend_decay(
            graph, validation, early[name], weights=BLEND_WEIGHTS, half_life_scales=scales
        )
        choices[name] = choice
        test_prior = engagement_prior(graph, queries.ads, test_start, choice.half_life_scale)
        out[f"{name} + engagement prior"] = s + choice.weight * test_prior[None, :]
    return out


def implicit_with_prior(
    graph,
    queries: RankedLists,
    validation: RankedLists,
    scores: dict,
    *,
    seed: int,
    choices: dict,
    scales: tuple[float, ...] = PRIOR_HALF_LIFE_SCALES,
    likes: bool = False,
) -> dict[str, np.ndarray]:
    """Each implicit peer's test scores plus the engagement prior (`with_prior`), the
    peer refit with its fixed settings on the ratings before the validation start for
    the choice, which ranks the `validation` queries (`--no-tune`)."""
    early = implicit_scores(
        graph,
        validation,
        factors=64,
        seed=seed,
        cutoff=graph.manifest.time.validation_start,
        likes=likes,
    )
    return with_prior(graph, queries, validation, scores, early, choices=choices, scales=scales)


class Tuned(NamedTuple):
    """An implicit peer's setting chosen on the validation window (`tune_implicit`)."""

    recall: float  # its lists' recall of the window's likes, with the prior
    setting: dict
    early: np.ndarray  # its scores of the validation queries, fitted before the window


def tune_implicit(
    graph,
    validation: RankedLists,
    *,
    seed: int,
    likes: bool,
    scales: tuple[float, ...] = PRIOR_HALF_LIFE_SCALES,
) -> dict[str, Tuned]:
    """Each implicit peer's setting of `GRID`, chosen as HIR's settings are, on the
    validation window: fitted on the ratings before its start, ranked with the prior at
    its own chosen weight and decay, the setting whose lists recall the most of the
    window's likes (`choose_blend_decay`'s criterion; ties: the earlier, the fixed
    settings first). The chosen fit's scores are kept: the prior's choice for the test
    lists reads them (`with_prior`) instead of fitting the setting again."""
    best: dict[str, Tuned] = {}
    for i in range(max(len(grid) for grid in GRID.values())):
        models = tuple(m for m in MODELS if i < len(GRID[m]))
        settings = {f"{m}{sfx} (peer)": GRID[m][i] for m in models for sfx in ("", " on likes")}
        early = implicit_scores(
            graph,
            validation,
            seed=seed,
            cutoff=graph.manifest.time.validation_start,
            likes=likes,
            models=models,
            settings=settings,
        )
        for name, scores in early.items():
            choice = choose_blend_decay(
                graph, validation, scores, weights=BLEND_WEIGHTS, half_life_scales=scales
            )
            recall = choice.scale_scores[choice.half_life_scale]
            if name not in best or recall > best[name].recall:
                best[name] = Tuned(recall, settings[name], scores)
    return best


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def table_row(name: str, ids: np.ndarray, relevant: list[np.ndarray]) -> str:
    """One Markdown row: recall@K and NDCG@K of the ranked lists `ids` (U, L)."""
    got = [row[row >= 0] for row in ids]
    cells = []
    for k in K_VALUES:
        cells += [f"{recall_at_k(got, relevant, k):.3f}", f"{ndcg_at_k(got, relevant, k):.3f}"]
    return f"| {name} | " + " | ".join(cells) + " |"


def history_table(queries: RankedLists, lists: dict[str, np.ndarray]) -> list[str]:
    """recall@K and NDCG@K of each method over the query users with a rating before the
    test start and over those without (see `conversion_retrieval`)."""
    relevant = queries.relevant()
    groups = {"with": queries.history, "without": ~queries.history}
    lines = [
        f"By query user: {int(queries.history.sum())} with a rating before the test start, "
        f"{int((~queries.history).sum())} without (their lists rank for an empty history).",
        "",
        "| method | "
        + " | ".join(f"{g}: recall@{k} | {g}: NDCG@{k}" for g in groups for k in K_VALUES[1:])
        + " |",
        "|---|" + "---:|" * (2 * len(groups) * len(K_VALUES[1:])),
    ]
    for name, ids in lists.items():
        cells = []
        for keep in groups.values():
            got = [row[row >= 0] for row in ids[keep]]
            rel = [r for r, k in zip(relevant, keep, strict=True) if k]
            for k in K_VALUES[1:]:
                cells += [f"{recall_at_k(got, rel, k):.3f}", f"{ndcg_at_k(got, rel, k):.3f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def epoch_caps(text: str, models: list[str]) -> dict[str, int]:
    """`--max-epochs`: one cap for every RecBole peer, or `MODEL=N` pairs (others 300)."""
    try:
        if "=" not in text:
            return dict.fromkeys(models, int(text))
        pairs = dict(item.split("=") for item in text.split(","))
        caps = {m: int(pairs.pop(m, 300)) for m in models}
    except ValueError:
        raise InputError(f"--max-epochs: a number or MODEL=N,..., got {text!r}") from None
    if pairs:
        raise InputError(f"--max-epochs: {sorted(pairs)} are not among --recbole {models}")
    return caps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="encoder training steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peers-only", action="store_true", help="no HIR rows (no training)")
    parser.add_argument(
        "--hir-run",
        action="append",
        default=[],
        help="evaluate this encoder run instead of training one (repeat for refreshes, as "
        "hir run writes them: run, run_validation, run_test)",
    )
    parser.add_argument(
        "--recbole",
        default=",".join(RECBOLE_PEERS),
        help="RecBole peers to run, comma-separated (empty: none)",
    )
    parser.add_argument(
        "--max-epochs",
        default="300",
        help="RecBole epoch cap: one number for all (RecBole's default 300) or "
        "MODEL=N,... (e.g. LightGCN=30,SASRec=3)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads for RecBole")
    parser.add_argument(
        "--data", type=Path, help="a dataset folder in the input format (default: MovieLens-100K)"
    )
    parser.add_argument(
        "--prior-scales",
        type=lambda text: tuple(float(x) for x in text.split(",")),
        default=PRIOR_HALF_LIFE_SCALES,
        help="the prior's half-life scales to choose from (default: the SDK's; 1: the "
        "manifest's half-lives only)",
    )
    parser.add_argument(
        "--likes",
        action="store_true",
        help="also train each implicit peer on the likes alone (a rating without a like "
        "is no positive)",
    )
    parser.add_argument(
        "--tune",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="choose each implicit peer's settings on the validation window (their GRID), "
        "as HIR's are (default); --no-tune keeps the fixed settings",
    )
    parser.add_argument("--record")
    args = parser.parse_args()
    recbole = [m for m in args.recbole.split(",") if m]
    unknown = sorted(set(recbole) - set(RECBOLE_PEERS))
    if unknown:
        parser.error(f"--recbole: unknown peers {unknown}; choose from {list(RECBOLE_PEERS)}")
    if args.peers_only and args.hir_run:
        parser.error("--peers-only and --hir-run exclude each other")
    try:
        caps = epoch_caps(args.max_epochs, recbole)
    except InputError as error:
        parser.error(str(error))
    torch.set_num_threads(args.threads)
    timings: dict[str, float] = {}
    epochs: dict[str, str] = {}
    choices: dict[str, PriorChoice] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = args.data or write_world(movielens_100k(), tmp / "data")
        graph = build_graph_from_dir(data)
        name = "MovieLens-100K" if args.data is None else graph.manifest.name
        queries = query_lists(graph)
        lists: dict[str, np.ndarray] = {}
        if not args.peers_only:
            ranked, lists = hir_lists(args, data, graph, tmp, timings, choices)
            if not same_queries(ranked, queries):
                raise RuntimeError("HIR's query users, candidates or truth differ from the peers'")
        started = time.perf_counter()
        validation = query_lists(graph, "validation")
        tuned = {}
        if args.tune:
            tuned = tune_implicit(
                graph, validation, seed=args.seed, likes=args.likes, scales=args.prior_scales
            )
        settings = {name: t.setting for name, t in tuned.items()}
        scores = implicit_scores(
            graph, queries, factors=64, seed=args.seed, likes=args.likes, settings=settings
        )
        if tuned:  # the chosen settings' fits before the validation start are at hand
            early = {name: t.early for name, t in tuned.items()}
            blended = with_prior(
                graph, queries, validation, scores, early, choices=choices, scales=args.prior_scales
            )
        else:
            blended = implicit_with_prior(
                graph,
                queries,
                validation,
                scores,
                seed=args.seed,
                choices=choices,
                scales=args.prior_scales,
                likes=args.likes,
            )
        timings["implicit ALS + BPR (with the prior's choice)"] = time.perf_counter() - started
        for name in recbole:
            fit = recbole_fit(
                name,
                graph,
                queries,
                tmp / "recbole",
                max_epochs=caps[name],
                seed=args.seed,
                log=log,
                validation=validation,
            )
            scores[fit.name] = fit.scores
            blended |= with_prior(
                graph,
                queries,
                validation,
                {fit.name: fit.scores},
                {fit.name: fit.validation_scores},
                choices=choices,
                scales=args.prior_scales,
            )
            ids = queries.rank(fit.scores, max(K_VALUES))
            log(f"{table_row(fit.name, ids, queries.relevant())} ({fit.seconds:.0f} s)")
            timings[f"RecBole {name} (selection + final fit)"] = fit.seconds
            capped = " (the cap: still improving)" if fit.epochs == caps[name] else ""
            epochs[name] = (
                f"{fit.epochs} of at most {caps[name]}{capped}, validation NDCG@20 "
                f"{fit.valid_score:.4f}"
            )
    top = max(K_VALUES)
    lists |= {name: queries.rank(s, top) for name, s in scores.items()}
    lists |= {name: queries.rank(s, top) for name, s in blended.items()}
    lists["popularity (ratings before test)"] = queries.rank(popularity_scores(graph, queries), top)
    alone = choose_blend_decay(
        graph,
        validation,
        np.zeros((len(validation.users), len(validation.ads))),
        weights=(1.0,),
        half_life_scales=args.prior_scales,
    )
    choices["the prior alone"] = alone
    prior = engagement_prior(
        graph, queries.ads, graph.manifest.time.test_start, alone.half_life_scale
    )
    lists["popularity, time-decayed (the prior alone)"] = queries.rank(
        np.tile(prior, (len(queries.users), 1)), top
    )
    relevant = queries.relevant()
    header = " | ".join(f"recall@{k} | NDCG@{k}" for k in K_VALUES)
    hir_part = "no HIR" if args.peers_only else f"{args.steps} encoder steps"
    if args.hir_run:
        hir_part = f"HIR runs {', '.join(args.hir_run)}"
    flags = (" --peers-only" if args.peers_only else "") + "".join(
        f" --hir-run {run}" for run in args.hir_run
    )
    if args.recbole != ",".join(RECBOLE_PEERS):
        flags += f" --recbole '{args.recbole}'"
    if args.max_epochs != "300":
        flags += f" --max-epochs {args.max_epochs}"
    if args.data is not None:
        flags += f" --data {args.data.name}"
    if args.prior_scales != PRIOR_HALF_LIFE_SCALES:
        flags += " --prior-scales " + ",".join(f"{x:g}" for x in args.prior_scales)
    if args.likes:
        flags += " --likes"
    if not args.tune:
        flags += " --no-tune"
    lines = [
        f"### {name}, HIR retrieval vs peers ({hir_part}, seed {args.seed})",
        "",
        "command: `python benchmarks/movielens_peers.py"
        f"{'' if args.peers_only or args.hir_run else f' --steps {args.steps}'}"
        f"{f' --seed {args.seed}' if args.seed else ''}{flags}`",
        "",
        f"{len(queries.users):,} users who like {queries.truth.height:,} movies in the test "
        f"window; {len(queries.ads):,} candidate movies, each user's earlier ratings left out.",
        "",
        f"| method | {header} |",
        "|---|" + "---:|" * (2 * len(K_VALUES)),
    ]
    lines += [table_row(name, ids, relevant) for name, ids in lists.items()]
    lines += ["", *history_table(queries, lists)]
    if epochs:
        lines += [
            "",
            "RecBole epochs chosen on the validation window: "
            + ", ".join(f"{name} {e}" for name, e in epochs.items()),
        ]
    if tuned:
        lines += ["", "The implicit peers' settings, chosen on the validation window:"]
        lines += [f"- {name}: {t.setting} (recall {t.recall:.4f})" for name, t in tuned.items()]
    lines += [
        "",
        "The engagement prior's weight and decay of each model, chosen on the validation window:",
    ]
    lines += [f"- {name}: {choice.render()}" for name, choice in choices.items()]
    lines += ["", ", ".join(f"{name}: {s:.0f} s" for name, s in timings.items())]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
