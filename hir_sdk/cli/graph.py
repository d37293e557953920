"""`hir graph build` and `hir graph info`: the temporal graph store."""

from __future__ import annotations

import argparse
import json
import time

from hir_sdk.cli.overwrite_option import add_overwrite_option


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("graph", help="build or inspect a temporal graph")
    sub = parser.add_subparsers(dest="graph_command", required=True, metavar="ACTION")
    build = sub.add_parser("build", help="validate a dataset folder and build its graph")
    build.add_argument("--data", required=True, help="dataset folder (manifest + parquet)")
    build.add_argument("--out", required=True, help="graph folder to write")
    add_overwrite_option(build, "hir graph build")
    build.set_defaults(run=run_build)
    info = sub.add_parser("info", help="counts, density, time range, conversion rate")
    info.add_argument("graph", help="a folder written by `hir graph build`")
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.set_defaults(run=run_info)


def run_build(args: argparse.Namespace) -> int:
    from hir_sdk.io import check_free

    started = time.perf_counter()
    check_free(args.out, kind="graph", overwrite=args.overwrite, inputs=[args.data])
    # the slow imports, once the quick checks have passed
    from hir_sdk.graph import build_graph_from_dir, save_graph

    graph = build_graph_from_dir(args.data)
    save_graph(graph, args.out, overwrite=args.overwrite, inputs=[args.data])
    print(
        f"built graph {args.out}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges "
        f"in {time.perf_counter() - started:.1f}s (fingerprint {graph.fingerprint})"
    )
    return 0


def run_info(args: argparse.Namespace) -> int:
    from hir_sdk.graph import load_graph, summarize

    summary = summarize(load_graph(args.graph))
    print(json.dumps(summary.to_dict(), indent=2) if args.json else summary.render())
    return 0
