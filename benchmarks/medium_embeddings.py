"""Train the encoder on a synthetic world and write every entity's embedding as of the
test start, for `benchmarks/retrieval.py --embeddings`.

    python benchmarks/medium_embeddings.py --scale medium --steps 300 \\
        --out medium_embeddings.parquet

The world and the encoder are `centred_encoder.train_centred_encoder`'s (as in
`benchmarks/interest_hierarchy.py`). Embeddings come from `Embedder.embed` (only edges
before the test start), without BoM codes: the retrieval benchmark fits its own
codebooks. The parquet holds node_type, node_id and embedding (D floats); a line with the
timings is printed.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import polars as pl
from centred_encoder import train_centred_encoder

from hir_sdk.io import atomic_write_bytes
from hir_sdk.synth import SCALES
from hir_sdk.training.embedder import Embedder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="medium", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", required=True, help="parquet file to write")
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        data, _ = train_centred_encoder(args.scale, args.steps, Path(tmp))
        trained = time.perf_counter()
        embedder = Embedder(Path(tmp) / "run", data, "test_start")
        nodes = embedder.entities()
        z, _ = embedder.embed(nodes)
        graph = embedder.graph
        types = [graph.node_types[t] for t in graph.node_type_of(nodes)]
        table = pl.DataFrame(
            {
                "node_type": types,
                "node_id": graph.node_ids_of(nodes),
                "embedding": z,
            }
        )
    embedded = time.perf_counter()
    out = Path(args.out)
    buffer = io.BytesIO()
    table.write_parquet(buffer)
    atomic_write_bytes(out, buffer.getvalue())
    print(
        f"{args.scale}: {len(table):,} entities x {z.shape[1]} as of the test start; "
        f"synth + train {trained - began:.0f} s, embed {embedded - trained:.0f} s -> {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
