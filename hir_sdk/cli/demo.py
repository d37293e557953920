"""`hir demo`: the newest end-to-end pipeline on the built-in synthetic world.

Today: synthesize a world, validate it and build the temporal graph, then the offline A/B
of the XGBoost baseline against the popularity floor on the test window, with its report.
Later stages (encoder training, embeddings, BoM retrieval, the sequence ranker, ONNX
export) join as they land.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hir_sdk.evaluation.pipeline import ABConfig, run_ab_on_graph, write_report
from hir_sdk.evaluation.report import metric_rows
from hir_sdk.graph import build_graph_from_dir, save_graph, summarize
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.synth import SCALES, TRUTH_DIR, generate_world, write_world


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo", help="run the end-to-end pipeline on synthetic data", description=__doc__
    )
    parser.add_argument("--out", default="demo_out", help="output folder (replaced)")
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=200, help="A/B user resamples")
    parser.set_defaults(run=run)


def _step(name: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:6.1f}s] {name}", flush=True)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    out = Path(args.out)
    with atomic_output_dir(out, overwrite=True) as tmp:
        world = generate_world(SCALES[args.scale], args.seed)
        write_world(world, tmp / "data")
        _step(f"synthesized the {args.scale} world: {world.edges.num_rows:,} events", started)
        graph = build_graph_from_dir(tmp / "data")
        save_graph(graph, tmp / "graph")
        _step(f"validated and built the graph: {graph.num_nodes:,} nodes", started)
        ab = run_ab_on_graph(
            graph,
            ABConfig(n_bootstrap=args.bootstrap, seed=args.seed),
            truth=tmp / "data" / TRUTH_DIR,
        )
        write_report(ab, tmp / "ab")
        _step("offline A/B: examples, features, models, bootstrap, report", started)
    print()
    print(summarize(graph).render())
    report = ab.report
    print(f"\n{report.title}\n")
    header = ("metric", report.ab.control, report.ab.treatment, "delta [95% CI]", "relative")
    rows = [header, *metric_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    print(f"\nverdict: {report.ab.verdict}")
    print(
        f"\nreport: {out / 'ab' / 'report.html'} (and report.md)   data: {out / 'data'}   "
        f"graph: {out / 'graph'}"
    )
    return 0
