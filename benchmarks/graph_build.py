"""Graph build time on a synthetic world, as a ratio to a plain pyarrow read of the same files.

    python benchmarks/graph_build.py [--scale medium] [--repeats 3] [--record FILE]

Both sides run in this process, one after the other, best of `--repeats`:
  read   pyarrow.parquet.read_table of nodes, edges and content (no validation, no index)
  build  hir_sdk: read + full validation (load_dataset) + CSR indexing (build_graph)
Goal (issue 2): build within 3x of the read.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from publish import publish

from hir_sdk.graph import build_graph
from hir_sdk.schema import CONTENT_FILE, EDGES_FILE, NODES_FILE, load_dataset
from hir_sdk.synth import SCALES, generate_world, write_world


def best_of(repeats: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="medium", choices=sorted(SCALES))
    parser.add_argument("--data", help="an existing dataset folder instead of synthesizing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", help="append the result table to this Markdown file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = (
            Path(args.data)
            if args.data
            else write_world(generate_world(SCALES[args.scale], seed=0), Path(tmp) / "world")
        )
        files = [data / NODES_FILE, data / EDGES_FILE, data / CONTENT_FILE]
        read_s, tables = best_of(args.repeats, lambda: [pq.read_table(f) for f in files])
        rows = sum(t.num_rows for t in tables)
        validate_s, dataset = best_of(args.repeats, lambda: load_dataset(data))
        index_s, graph = best_of(args.repeats, lambda: build_graph(dataset))
    build_s = validate_s + index_s
    name = Path(args.data).name if args.data else args.scale
    source = f"--data {name}" if args.data else f"--scale {name}"
    lines = [
        f"### graph build, `{name}` ({graph.num_nodes:,} nodes, {graph.num_edges:,} edges)",
        "",
        f"command: `python benchmarks/graph_build.py {source} --repeats {args.repeats}` "
        f"(best of {args.repeats}; python {platform.python_version()}, "
        f"{platform.machine()}, 2-core CI-class machine)",
        "",
        "| step | seconds | rows/s |",
        "|---|---:|---:|",
        f"| pyarrow read (baseline) | {read_s:.2f} | {rows / read_s:,.0f} |",
        f"| read + validate (`load_dataset`) | {validate_s:.2f} | {rows / validate_s:,.0f} |",
        f"| index (`build_graph`: CSR both ways) | {index_s:.2f} | "
        f"{graph.num_edges / index_s:,.0f} |",
        f"| **build total** | **{build_s:.2f}** | **{rows / build_s:,.0f}** |",
        "",
        f"**build / read ratio: {build_s / read_s:.1f}x** (goal: within 3x)",
    ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
