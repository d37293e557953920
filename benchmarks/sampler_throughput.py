"""Temporal sampler throughput (subgraphs/s) on a synthetic world: hir-sdk's samplers
against a plain vectorised torch temporal sampler, side by side in one process.

    python benchmarks/sampler_throughput.py [--scale medium] [--anchors 4096]
        [--batches 256,1024] [--profile] [--record FILE]

The peer (`peers/torch_temporal_sampler.py`) is what a user would write, or get from
PyG's temporal `NeighborLoader` where pyg-lib installs: uniform fan-out without
replacement over every edge dated strictly before the seed's time, disjoint per-seed
subgraphs, relabelled. Rows:

- peer, fan-out (15, 10) and the teacher's (16, 8);
- hir-sdk `uniform` view, the peer's rule: the same fan-out, every visible edge a
  candidate (`max_candidates` and `max_nodes` unbounded);
- hir-sdk teacher view as training samples it (`SamplerConfig().teacher`: importance by
  time-decayed weight among each node's 64 most recent visible edges, <= 96 nodes);
- hir-sdk teacher + student views + structural encodings (what a training step gets).

Ours samples a batch on torch's thread count (2 here), split in two (`ViewSampler`'s
`threads`); the peer runs its torch operations on the same threads.

Anchors: a seeded sample of training events (user, time). Each method samples every
batch `--repeats` times, methods interleaved batch by batch; a batch's best time counts.
`--profile` adds where the teacher view's time goes (cProfile, by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from peers.torch_temporal_sampler import TorchTemporalSampler
from publish import publish

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.sampling import SamplerConfig, ViewConfig, ViewSampler
from hir_sdk.sampling.encodings import encode
from hir_sdk.sampling.loader import anchors_from_events
from hir_sdk.synth import SCALES, generate_world, write_world

UNBOUNDED = 10**9


def timed(methods: dict[str, Callable[[slice], int]], batches: list[slice], repeats: int):
    """Best time per batch of each method (interleaved) and its mean nodes per subgraph."""
    best = {name: [np.inf] * len(batches) for name in methods}
    nodes = dict.fromkeys(methods, 0)
    for repeat in range(repeats):
        for b, part in enumerate(batches):
            for name, run in methods.items():
                began = time.perf_counter()
                count = run(part)
                best[name][b] = min(best[name][b], time.perf_counter() - began)
                if repeat == 0:
                    nodes[name] += count
    return {name: sum(times) for name, times in best.items()}, nodes


def profile_lines(run: Callable[[slice], int], batches: list[slice]) -> list[str]:
    profiler = cProfile.Profile()
    profiler.enable()
    for part in batches:
        run(part)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    table = out.getvalue().strip().splitlines()
    start = next(i for i, line in enumerate(table) if line.strip().startswith("ncalls"))
    root = str(Path(__file__).resolve().parents[1]) + "/"
    rows = [
        re.sub(r"\S*(site-packages|lib/python3\.\d+)/", "", line.replace(root, ""))
        for line in table[start:]
    ]
    return ["```text", *rows, "```"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="medium", choices=sorted(SCALES))
    parser.add_argument("--anchors", type=int, default=4096)
    parser.add_argument("--batches", default="256,1024", help="anchors per call, comma list")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--record")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(generate_world(SCALES[args.scale], seed=0), Path(tmp) / "w")
        graph = build_graph_from_dir(data)
    anchors, cutoffs = anchors_from_events(graph, "train")
    pick = np.random.default_rng(0).choice(len(anchors), args.anchors, replace=False)
    anchors, cutoffs = anchors[pick], cutoffs[pick]
    config = SamplerConfig()
    sampler = ViewSampler(graph, config)
    began = time.perf_counter()
    sampler.adjacency.directions("both")  # CSR-ordered keys and edge attributes, once
    ours_setup_s = time.perf_counter() - began
    began = time.perf_counter()
    peer = TorchTemporalSampler(graph.src, graph.dst, graph.ts, graph.num_nodes)
    peer_setup_s = time.perf_counter() - began
    seeds, times = torch.from_numpy(anchors), torch.from_numpy(cutoffs)
    generator = torch.Generator().manual_seed(0)

    def run_peer(fanout: tuple[int, ...]) -> Callable[[slice], int]:
        return lambda part: peer.sample(seeds[part], times[part], fanout, generator).num_nodes

    def run_view(view: ViewConfig) -> Callable[[slice], int]:
        return lambda part: int(sampler.sample(anchors[part], cutoffs[part], view).offsets[-1])

    def run_training(part: slice) -> int:
        views = sampler.views(anchors[part], cutoffs[part])
        encode(graph, views.teacher)
        encode(graph, views.student)
        return int(views.teacher.offsets[-1])

    def uniform(fanout: tuple[int, ...]) -> ViewConfig:
        return ViewConfig(
            strategy="uniform", fanout=fanout, max_candidates=UNBOUNDED, max_nodes=UNBOUNDED
        )

    teacher = config.teacher
    methods = {
        "peer: plain vectorised torch, fan-out (15, 10)": run_peer((15, 10)),
        "hir-sdk `uniform`, the peer's rule, (15, 10)": run_view(uniform((15, 10))),
        f"peer, fan-out {teacher.fanout}": run_peer(teacher.fanout),
        f"hir-sdk `uniform`, the peer's rule, {teacher.fanout}": run_view(uniform(teacher.fanout)),
        "hir-sdk teacher view (decayed-weight importance)": run_view(teacher),
        "hir-sdk teacher + student views + encodings": run_training,
    }
    lines = [
        f"### sampler throughput, `{args.scale}` ({graph.num_nodes:,} nodes, "
        f"{graph.num_edges:,} edges)",
        "",
        f"command: `python benchmarks/sampler_throughput.py --scale {args.scale} "
        f"--anchors {args.anchors} --batches {args.batches}` (python "
        f"{platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}, "
        f"{torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs; each batch timed "
        f"{args.repeats} times, best kept; set-up, not timed: ours {ours_setup_s:.1f} s, "
        f"peer {peer_setup_s:.1f} s)",
        "",
    ]
    names = list(methods)
    for batch in (int(b) for b in args.batches.split(",")):
        batches = [slice(lo, lo + batch) for lo in range(0, args.anchors, batch)]
        took, nodes = timed(methods, batches, args.repeats)
        rate = {name: args.anchors / seconds for name, seconds in took.items()}
        lines += [
            f"batch {batch}:",
            "",
            "| sampler | subgraphs/s | mean nodes per subgraph |",
            "|---|---:|---:|",
            *(f"| {n} | {rate[n]:,.0f} | {nodes[n] / args.anchors:.1f} |" for n in names),
            "",
            f"- same rule, ours / peer: {rate[names[1]] / rate[names[0]]:.2f}x at (15, 10), "
            f"{rate[names[3]] / rate[names[2]]:.2f}x at {teacher.fanout} (goal: >= 1)",
            f"- peer {teacher.fanout} / our teacher view: {rate[names[2]] / rate[names[4]]:.2f}x "
            "(goal: <= 2)",
            "",
        ]
    if args.profile:
        batch = int(args.batches.split(",")[0])
        parts = [slice(lo, lo + batch) for lo in range(0, args.anchors, batch)]
        lines += [
            f"where the teacher view's time goes (batch {batch}, one thread, cProfile):",
            "",
        ]
        serial = ViewSampler(graph, config, threads=1)
        serial.adjacency = sampler.adjacency  # already built
        lines += profile_lines(
            lambda part: len(serial.sample(anchors[part], cutoffs[part], teacher).nodes), parts
        )
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
