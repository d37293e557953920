"""Content agreement (`hir_sdk.training.content_agreement`) of datasets: how well each
one's entity text ranks what users engage with above random items.

    python benchmarks/content_agreement.py DATA [DATA ...] [--record FILE]

Each DATA is a dataset folder (`hir synth --out`, `hir dataset movielens-100k --out`).
The text is embedded as `hir fit` with `use_content = true` embeds it.
"""

from __future__ import annotations

import argparse
import time

from publish import publish

from hir_sdk.graph import build_graph
from hir_sdk.schema import load_dataset
from hir_sdk.training import TrainConfig
from hir_sdk.training.content_agreement import CONTENT_AGREES, content_agreement
from hir_sdk.training.encoder_setup import make_featurizer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record")
    args = parser.parse_args()
    rows = []
    for data in args.data:
        started = time.perf_counter()
        dataset = load_dataset(data)
        graph = build_graph(dataset)
        knowledge = make_featurizer(dataset, graph, TrainConfig(use_content=True)).knowledge
        if knowledge is None:
            rows.append(f"| {graph.manifest.name} (`{data}`) | no content | | |")
            continue
        found = content_agreement(graph, knowledge, seed=args.seed)
        seconds = time.perf_counter() - started
        rows.append(
            f"| {graph.manifest.name} (`{data}`) | {found.auc:.3f} | {found.pairs:,} | "
            f"{'yes' if found.agrees else 'no'} | {seconds:.0f} |"
        )
    publish(
        [
            f"command: `python benchmarks/content_agreement.py {' '.join(args.data)}`",
            "",
            f"| dataset | content agreement | edges | at least {CONTENT_AGREES} | seconds |",
            "|---|---:|---:|---|---:|",
            *rows,
        ],
        args.record,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
