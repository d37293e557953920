"""Online ranking latency for 1,000 candidates as the user's history grows: the
multi-stage ranker (stage-1 embedding read from the cache, 16 recent events online)
side by side with a single-stage ranker that reads the whole history online (the same
`OnlineRanker`, with `recent` = the history length, so every candidate attends over
every event).

    .venv/bin/python benchmarks/online_latency.py \\
        --record benchmarks/results/online_latency.md

One request = one user and `--candidates` (1,000) ads, scored in one batch on this
process's threads (torch eager, inference mode). `--requests` (60) rounds; each round
serves one request at every history length L in 256 .. 4,096 with the multi-stage ranker
(L in a random order), then the same requests with the single-stage one, so slow spells
of the machine hit every L alike; p50 and p99 of the per-request wall time.
Untrained weights (latency does not depend on them); inputs are random events with
realistic shapes (HIR dim 32, 8 BoM tokens, 21 dense features). The stage-1 cost is
reported separately (`--stage1-requests` users per L, timed before the online rounds): it
runs offline, once per user per refresh, not per request.

Goal: the multi-stage online cost flat in L (max/min of its p50 within 10%).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from hir_sdk.ranking.sequence import (
    OnlineRanker,
    OnlineRankerConfig,
    UserModel,
    UserModelConfig,
)
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs
from hir_sdk.ranking.sequence.random_inputs import random_candidates, random_events

HIR_DIM, BOM, DENSE, ACTIONS = 32, 8, 21, 5


def events(n: int, length: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    return random_events(n, length, hir_dim=HIR_DIM, num_actions=ACTIONS, generator=gen)


def candidates(n: int, gen: torch.Generator) -> CandidateInputs:
    return random_candidates(
        n, hir_dim=HIR_DIM, dense_dim=DENSE, codebooks=BOM, codewords=256, routes=16, generator=gen
    )


def ranker(recent: int) -> OnlineRanker:
    torch.manual_seed(0)
    return OnlineRanker(
        OnlineRankerConfig(recent=recent),
        num_actions=ACTIONS,
        user_dim=32,
        hir_dim=HIR_DIM,
        dense_dim=DENSE,
        bom_vocab=BOM * 256,
        routes=16,
    ).eval()


def request(model: OnlineRanker, user: torch.Tensor, history, cand) -> float:
    """Score one request's candidates: the request side (user, history tokens) once,
    expanded to every candidate, then the candidates."""
    n = len(cand.ad)
    started = time.perf_counter()
    with torch.inference_mode():
        u, keys, keep = model.context(user, history)
        model.score(cand, u.expand(n, -1), keys.expand(n, -1, -1), keep.expand(n, -1))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--stage1-requests", type=int, default=10)
    parser.add_argument("--lengths", default="256,512,1024,2048,4096")
    parser.add_argument("--record", type=Path, default=None)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    gen = torch.Generator().manual_seed(0)
    multi = ranker(16)
    singles = {length: ranker(length) for length in lengths}
    stage1 = UserModel(UserModelConfig(), ACTIONS, HIR_DIM).eval()
    times = {length: ([], [], []) for length in lengths}  # multi, single, stage 1
    # stage 1 runs offline (a batch job at each refresh), apart from the online path
    users = {}
    for length in lengths:
        for _ in range(args.stage1_requests + 1):
            history = events(1, length, gen)
            started = time.perf_counter()
            with torch.inference_mode():
                users[length] = stage1(*history)
            times[length][2].append(time.perf_counter() - started)
    order = np.random.default_rng(0)
    for _ in range(args.requests + 2):  # two warm-up rounds
        batch = {
            length: (events(1, length, gen), candidates(args.candidates, gen)) for length in lengths
        }
        for length in order.permutation(lengths):  # the online path, every L, in random order
            history, cand = batch[length]
            recent = tuple(x[:, -16:] for x in history)  # what stage 2 reads online
            times[length][0].append(request(multi, users[length], recent, cand))
        for length in order.permutation(lengths):
            history, cand = batch[length]
            times[length][1].append(request(singles[length], users[length], history, cand))
    rows = []
    for length in lengths:
        m, s, u = (np.array(t[2:] if i < 2 else t[1:]) * 1000 for i, t in enumerate(times[length]))
        rows.append((length, m, s, u))
        print(
            f"L={length:5d}  multi-stage p50 {np.median(m):7.2f} ms p99 "
            f"{np.percentile(m, 99):7.2f}  single-stage p50 {np.median(s):8.2f} ms p99 "
            f"{np.percentile(s, 99):8.2f}  stage-1 (offline) {np.median(u):7.2f} ms",
            flush=True,
        )
    p50 = np.array([np.median(m) for _, m, _, _ in rows])
    flat = p50.max() / p50.min()
    print(f"multi-stage p50 max/min over L: {flat:.3f} (goal <= 1.10)")
    if args.record:
        lines = [
            "# Online ranking latency vs history length",
            "",
            "`python benchmarks/online_latency.py` "
            f"(1 request = 1 user x {args.candidates} candidates, {args.requests} requests "
            f"per length, torch {torch.__version__} eager on {torch.get_num_threads()} "
            "threads, CPU).",
            "",
            "| history L | multi-stage p50 (ms) | p99 | single-stage p50 (ms) | p99 | "
            "single / multi (p50) | stage-1 offline p50 (ms) |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for length, m, s, u in rows:
            lines.append(
                f"| {length} | {np.median(m):.2f} | {np.percentile(m, 99):.2f} | "
                f"{np.median(s):.2f} | {np.percentile(s, 99):.2f} | "
                f"{np.median(s) / np.median(m):.1f}x | {np.median(u):.2f} |"
            )
        lines += [
            "",
            f"Multi-stage online p50, max / min over history lengths: **{flat:.3f}** "
            f"(goal <= 1.10: {'met' if flat <= 1.10 else 'not met'}).",
            "",
        ]
        args.record.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
