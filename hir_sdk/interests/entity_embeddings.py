"""Every entity's embedding, interest clusters and Bag-of-Meaning tokens as of one time.

```
OUT/
  embeddings.parquet   node_type | node_id | as_of | embedding (D floats) | cluster_l0 .. |
                       bom (M token ids m * K + k)
  prototypes.npz       level_0 (K_0, D), level_1 (K_1, D), ...   unit-norm interest prototypes
  quantizer/           the additive quantizer the tokens come from (hir_sdk.bom)
  meta.json            SDK version, run, checkpoint step, data fingerprint, as_of, counts,
                       quantizer sizes and its relative reconstruction error, and
                       bom_fit_rows (how many rows the quantizer was fitted on)
```
`embed_entities` returns the same as an `EntityEmbeddings` (a polars table, `to_arrow()`
for pyarrow); `write_embeddings` / `read_embeddings` store and load it, atomically.
The quantizer is fitted on the embeddings it encodes (on a seeded sample of at most
`FIT_ROWS_PER_CODEWORD` rows per codeword when there are more), all of which are as of
`as_of`, so the tokens are as leak-free as the embeddings. Under `torchrun`
(`across_ranks=True`) the ranks share the embedding and the encoding, rank 0 fits the
quantizer, and the snapshot is bit-identical to one process's.

A row's `as_of` column is the time it was embedded at: the snapshot's time, except in
creation snapshots (`hir_sdk.interests.arrivals.embed_on_creation`), whose rows each have
their own.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from hir_sdk import __version__
from hir_sdk.bom import AdditiveQuantizer, codebook_size
from hir_sdk.bom.additive import ENCODE_ROWS
from hir_sdk.errors import InputError
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.io.output_folder import Inputs
from hir_sdk.schema.manifest import iso_time
from hir_sdk.training.distributed import batches_of_rank, from_rank_zero, gather_batches
from hir_sdk.training.embedder import Embedder

TABLE_FILE = "embeddings.parquet"
PROTOTYPES_FILE = "prototypes.npz"
QUANTIZER_DIR = "quantizer"
META_FILE = "meta.json"
# most training rows per codeword of a BoM fit, as in faiss's k-means
# (max_points_per_centroid): more rows cost fit time and barely move the codebooks
FIT_ROWS_PER_CODEWORD = 256


@dataclass(frozen=True)
class EntityEmbeddings:
    """One snapshot of entity representations (see the module docstring)."""

    table: pl.DataFrame
    prototypes: list[np.ndarray]
    quantizer: AdditiveQuantizer
    meta: dict[str, Any]

    @property
    def as_of(self) -> int:
        return int(self.meta["as_of"])

    @property
    def levels(self) -> int:
        return len(self.prototypes)

    def embeddings(self) -> np.ndarray:
        """(N, D) float32 embeddings in table order."""
        return self.table["embedding"].to_numpy().astype(np.float32, copy=False)

    def clusters(self, level: int) -> np.ndarray:
        """(N,) cluster of each row at `level` (0 = coarsest)."""
        return self.table[f"cluster_l{level}"].to_numpy()

    def tokens(self) -> np.ndarray:
        """(N, M) BoM token ids in table order."""
        return self.table["bom"].to_numpy().astype(np.int64, copy=False)

    def of_type(self, *node_types: str) -> np.ndarray:
        """Row numbers of the entities of the given node types (one or several)."""
        return np.flatnonzero(self.table["node_type"].is_in(node_types).to_numpy())

    def to_arrow(self) -> pa.Table:
        return self.table.to_arrow()


def embed_entities(
    run: str | Path,
    data: str | Path,
    as_of: str | int,
    *,
    node_types: list[str] | None = None,
    checkpoint: str = "best",
    codebooks: int = 8,
    codewords: int = 256,
    seed: int = 0,
    embedder: Embedder | None = None,
    across_ranks: bool = False,
) -> EntityEmbeddings:
    """Embed every entity of `node_types` (default: all) that exists at `as_of` with a
    trained run, cluster it at each prototype level and give it BoM tokens. `embedder`:
    one of the same run, checkpoint and data to reuse (moved to `as_of`, `Embedder.at`).
    `across_ranks`: every rank of a `torchrun` group calls this alike and gets the same
    snapshot (ignored with `embedder`, which says it itself)."""
    if embedder is None:
        embedder = Embedder(run, data, as_of, checkpoint=checkpoint, across_ranks=across_ranks)
    else:
        embedder = embedder.at(as_of)
    nodes = embedder.entities(node_types)
    if len(nodes) == 0:
        raise InputError(
            f"no {node_types or 'entities'} exist before as_of {iso_time(embedder.as_of)}"
        )
    z, logits = embedder.embed(nodes)
    size = codebook_size(len(z), codewords)
    if len(z) < 2 * size:
        raise InputError(f"only {len(z)} entities: too few to fit BoM codebooks")
    sample = fit_sample(len(z), size, seed)

    def fit() -> AdditiveQuantizer:
        return AdditiveQuantizer(codebooks, size).fit(z[sample], seed=seed)

    quantizer = from_rank_zero(fit) if embedder.across_ranks else fit()
    codes = encode_rows(quantizer, z, across_ranks=embedder.across_ranks)
    return snapshot_of(
        embedder,
        nodes,
        z,
        logits,
        quantizer,
        run=run,
        checkpoint=checkpoint,
        codes=codes,
        meta={"bom_fit_rows": len(sample)},
    )


def fit_sample(rows: int, codewords: int, seed: int) -> np.ndarray:
    """Sorted rows a BoM fit of `codewords` codewords trains on: all `rows`, or a sample of
    `FIT_ROWS_PER_CODEWORD * codewords` drawn with `seed` when there are more."""
    most = FIT_ROWS_PER_CODEWORD * codewords
    if rows <= most:
        return np.arange(rows)
    return np.sort(np.random.default_rng([seed, 0xB0F]).choice(rows, most, replace=False))


def encode_rows(
    quantizer: AdditiveQuantizer, z: np.ndarray, *, across_ranks: bool = False
) -> np.ndarray:
    """(N, M) codes of `z`; `across_ranks`: each rank of the group encodes its round-robin
    share of `ENCODE_ROWS`-row blocks and every rank gets them all (a row's codes do not
    depend on the others, so they are the same as one process's)."""
    if not across_ranks:
        return quantizer.encode(z)
    parts = [
        quantizer.encode(z[lo : lo + ENCODE_ROWS]) for lo in batches_of_rank(len(z), ENCODE_ROWS)
    ]
    mine = np.concatenate(parts) if parts else np.zeros((0, quantizer.num_codebooks), np.int64)
    return gather_batches(mine, len(z), ENCODE_ROWS)


def snapshot_of(
    embedder: Embedder,
    nodes: np.ndarray,
    z: np.ndarray,
    logits: list[np.ndarray],
    quantizer: AdditiveQuantizer,
    *,
    run: str | Path,
    checkpoint: str,
    meta: dict[str, Any] | None = None,
    times: np.ndarray | None = None,
    codes: np.ndarray | None = None,
) -> EntityEmbeddings:
    """The snapshot of `nodes` embedded by `embedder` (`z`, cluster `logits`), with BoM
    tokens from `quantizer`; `meta` adds keys to the metadata. `times`: each row's own
    `as_of` when the rows were embedded at different times (default the embedder's); the
    snapshot's `as_of` is then the earliest of them. `codes`: the quantizer's codes of `z`
    when already at hand."""
    graph = embedder.graph
    if times is None:
        times = np.full(len(nodes), embedder.as_of, dtype=np.int64)
    as_of = int(times.min()) if len(times) else embedder.as_of
    if codes is None:
        codes = quantizer.encode(z)  # done once, for the tokens and the error
    tokens = quantizer.tokens(codes)
    codebooks = int(quantizer.num_codebooks)
    types = np.asarray(graph.node_types)[graph.node_type_of(nodes)]
    columns: dict[str, Any] = {
        "node_type": pl.Series(types.tolist(), dtype=pl.Categorical),
        "node_id": graph.node_ids_of(nodes),
        "as_of": pl.Series(np.asarray(times, dtype=np.int64)),
        "embedding": pl.Series(z, dtype=pl.Array(pl.Float32, z.shape[1])),
    }
    for level, lg in enumerate(logits):
        columns[f"cluster_l{level}"] = lg.argmax(axis=1).astype(np.int32)
    columns["bom"] = pl.Series(tokens.astype(np.int32), dtype=pl.Array(pl.Int32, codebooks))
    table = pl.DataFrame(columns)
    counts = table.group_by("node_type").len().sort("node_type")
    return EntityEmbeddings(
        table,
        embedder.prototypes,
        quantizer,
        {
            "sdk_version": __version__,
            "run": str(Path(run).resolve()),
            "checkpoint": checkpoint,
            "step": embedder.step,
            "encoder": embedder.encoder_hash,
            "trained_on": embedder.trained_on,
            "trained_until": embedder.trained_until,  # the encoder saw no edge from here on
            "selected_until": embedder.selected_until,  # ...but chose its weights on these
            "data_fingerprint": graph.fingerprint,
            "as_of": as_of,
            "as_of_iso": iso_time(as_of),
            "rows": len(table),
            "counts": dict(zip(counts["node_type"].cast(pl.String), counts["len"], strict=True)),
            "dim": int(z.shape[1]),
            "prototype_sizes": [int(p.shape[0]) for p in embedder.prototypes],
            "bom": {
                "codebooks": codebooks,
                "codewords": int(quantizer.codebook_size),
                "relative_error": quantizer.relative_error(z, codes) if len(z) else 0.0,
            },
            **(meta or {}),
        },
    )


def write_embeddings(
    result: EntityEmbeddings, out: str | Path, *, overwrite: bool = False, inputs: Inputs = ()
) -> Path:
    """Write a snapshot to the folder `out` (all files appear together or none).
    `overwrite` replaces an earlier embeddings folder only; `out` may not be, hold or lie
    inside the run that embedded it or any of `inputs` (see `hir_sdk.io.output_folder`)."""
    sources = [result.meta.get("run"), *inputs]
    with atomic_output_dir(out, kind="embeddings", overwrite=overwrite, inputs=sources) as tmp:
        result.table.write_parquet(tmp / TABLE_FILE)
        np.savez(
            tmp / PROTOTYPES_FILE, **{f"level_{i}": p for i, p in enumerate(result.prototypes)}
        )
        result.quantizer.save(tmp / QUANTIZER_DIR)
        (tmp / META_FILE).write_text(json.dumps(result.meta, indent=2) + "\n", encoding="utf-8")
    return Path(out)


def _read_meta(file: Path) -> dict[str, Any]:
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # UnicodeDecodeError and JSONDecodeError included
        raise InputError(f"cannot read the embeddings metadata: {err}", file=file) from None
    if not isinstance(meta, dict):
        raise InputError("embeddings metadata must be a JSON object", file=file)
    as_of = meta.get("as_of")
    if not isinstance(as_of, int) or isinstance(as_of, bool):
        raise InputError("embeddings metadata lacks an integer 'as_of' (hand-edited?)", file=file)
    return meta


def _read_prototypes(file: Path) -> list[np.ndarray]:
    if not file.is_file():
        raise InputError("missing the interest prototypes (an incomplete copy?)", file=file)
    try:
        with np.load(file, allow_pickle=False) as arrays:
            names = set(arrays.files)
            prototypes = [arrays[f"level_{i}"] for i in range(len(names))]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise InputError(f"cannot read the interest prototypes: {err}", file=file) from None
    if not prototypes or any(p.ndim != 2 or p.dtype.kind != "f" for p in prototypes):
        raise InputError("prototypes must be 2-d float arrays level_0, level_1, ...", file=file)
    return prototypes


def read_embeddings(path: str | Path) -> EntityEmbeddings:
    """Load a snapshot written by `write_embeddings` (or `hir embed`); a damaged or
    incomplete folder is an `InputError` naming the file."""
    path = Path(path)
    if not (path / META_FILE).is_file() or not (path / TABLE_FILE).is_file():
        raise InputError(
            f"not an embeddings folder (needs {TABLE_FILE} and {META_FILE})", file=path
        )
    meta = _read_meta(path / META_FILE)
    prototypes = _read_prototypes(path / PROTOTYPES_FILE)
    quantizer = AdditiveQuantizer.load(path / QUANTIZER_DIR)
    try:
        table = pl.read_parquet(path / TABLE_FILE)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError(
            f"cannot read the embeddings table: {err}", file=path / TABLE_FILE
        ) from None
    needed = ["node_type", "node_id", "as_of", "embedding", "bom"]
    needed += [f"cluster_l{level}" for level in range(len(prototypes))]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise InputError(f"embeddings table lacks columns {missing}", file=path / TABLE_FILE)
    return EntityEmbeddings(table, prototypes, quantizer, meta)
