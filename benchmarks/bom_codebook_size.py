"""BoM codebook size on one snapshot: retrieval recall of the BoM index and its 16-probe
query, and the quantizer's relative error, at several codewords per codebook K, side by
side with `codebook_size`'s choice for the snapshot's row count.

    python benchmarks/bom_codebook_size.py --run RUN --data DATA [--window validation]
        [--sizes 256,128,64,32] [--record FILE]

RUN is a trained run (`hir fit`), DATA its dataset folder; the snapshot is the users and
ads as of the window's start, and recall is that of `hir_sdk.evaluation.conversion_recall`
over the window (rated items left out, as for a rating data set with `--exclude-seen`).
"""

from __future__ import annotations

import argparse
import datetime

from publish import publish

import hir_sdk.interests.entity_embeddings as entity_embeddings
from hir_sdk.bom import codebook_size
from hir_sdk.evaluation.conversion_retrieval import conversion_recall
from hir_sdk.graph import build_graph_from_dir

METHODS = ("BoM inverted index, re-scored", "BoM index, 16-probe query, re-scored")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--window", choices=("validation", "test"), default="validation")
    parser.add_argument("--sizes", default="256,128,64,32")
    parser.add_argument("--exclude-seen", action="store_true")
    parser.add_argument("--record")
    args = parser.parse_args()
    graph = build_graph_from_dir(args.data)
    t = graph.manifest.time
    as_of = t.validation_start if args.window == "validation" else t.test_start
    entity_embeddings.codebook_size = lambda rows, wanted: wanted  # each K as asked
    rows, rule = [], None
    for k in (int(s) for s in args.sizes.split(",")):
        snap = entity_embeddings.embed_entities(
            args.run, args.data, as_of, node_types=["user", "ad"], codewords=k
        )
        rule = codebook_size(len(snap.table), 256)
        found = conversion_recall(graph, snap, exclude_seen=args.exclude_seen, window=args.window)
        exact = found.recall["exact k-NN on embeddings"]
        cells = [f"{r20:.3f} / {r100:.3f}" for r20, r100 in (found.recall[m] for m in METHODS)]
        rows.append(
            f"| 8x{k}{' (rule)' if k == rule else ''} | {snap.meta['bom']['relative_error']:.4f} "
            f"| {' | '.join(cells)} | {exact[0]:.3f} / {exact[1]:.3f} |"
        )
    publish(
        [
            f"command: `python benchmarks/bom_codebook_size.py --run {args.run} --data "
            f"{args.data} --window {args.window} --sizes {args.sizes}"
            f"{' --exclude-seen' if args.exclude_seen else ''}` "
            f"({datetime.date.today().isoformat()}; `codebook_size` picks {rule} for "
            f"{len(snap.table):,} rows)",
            "",
            "| M x K | relative error | BoM index R@20 / R@100 | 16-probe R@20 / R@100 "
            "| exact k-NN R@20 / R@100 |",
            "|---|---:|---:|---:|---:|",
            *rows,
        ],
        args.record,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
