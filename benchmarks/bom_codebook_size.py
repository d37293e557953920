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

from hir_sdk.bom import AdditiveQuantizer, codebook_size
from hir_sdk.evaluation.conversion_retrieval import conversion_recall
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.interests.entity_embeddings import snapshot_of
from hir_sdk.training.embedder import Embedder

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
    # the users and ads are embedded once; each K is fitted on the same vectors, as asked
    embedder = Embedder(args.run, args.data, as_of)
    nodes = embedder.entities(["user", "ad"])
    z, logits = embedder.embed(nodes)
    rule, rows = codebook_size(len(z), 256), []
    for k in (int(s) for s in args.sizes.split(",")):
        quantizer = AdditiveQuantizer(8, k).fit(z, seed=0)
        snap = snapshot_of(embedder, nodes, z, logits, quantizer, run=args.run, checkpoint="best")
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
            f"{len(z):,} rows)",
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
