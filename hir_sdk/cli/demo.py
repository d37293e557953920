"""`hir demo`: the newest end-to-end pipeline on the built-in synthetic world.

Today: synthesize a world, validate it and build the temporal graph, save it, print its
summary. Later stages (training, embedding, ranking, A/B, export) join as they land.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hir_sdk.graph import build_graph_from_dir, save_graph, summarize
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.synth import SCALES, generate_world, write_world


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo", help="run the end-to-end pipeline on synthetic data", description=__doc__
    )
    parser.add_argument("--out", default="demo_out", help="output folder (replaced)")
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(run=run)


def _step(name: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:6.1f}s] {name}", flush=True)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    out = Path(args.out)
    with atomic_output_dir(out, overwrite=True) as tmp:
        world = generate_world(SCALES[args.scale], args.seed)
        write_world(world, tmp / "data")
        _step(f"synthesized {args.scale} world: {world.edges.num_rows:,} events", started)
        graph = build_graph_from_dir(tmp / "data")
        save_graph(graph, tmp / "graph")
        _step(f"validated and built the graph: {graph.num_nodes:,} nodes", started)
        summary = summarize(graph)
    print()
    print(summary.render())
    print(
        f"\ndata: {out / 'data'}   graph: {out / 'graph'}   "
        f"(inspect with `hir graph info {out / 'graph'}`)"
    )
    return 0
