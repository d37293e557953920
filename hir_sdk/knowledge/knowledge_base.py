"""World knowledge per node: content vectors, fused vector columns, pooled neighbour vectors.

Notable:
- one row per node that has knowledge; `row_of` maps every global node index to its row
  (-1 for none) and `source` says where the row came from (own content, or pooled);
- a row is the 384-d text vector followed by each precomputed vector column of the content
  table (image, video...) in table order, every part L2-normalized on its own, zeros where
  a node lacks that column (a null): `D = 384 + sum of column widths`;
- pooling: a node without content whose type is a key of `pool_from` gets the mean of the
  rows of its structural-edge neighbours (either direction) of the listed types that have
  content, each part L2-normalized again. Pooled rows never feed other pooled rows, so the
  result does not depend on any processing order;
- `as_of`: only structural edges with `ts < as_of` are seen, so nothing after a cutoff
  influences the knowledge at that cutoff (content itself is undated);
- vectorised: neighbour pairs are de-duplicated and summed with `np.add.reduceat`.

```
vectors (R, D):   | text 384 | image d1 | video d2 |    rows 0..C-1 own content, C.. pooled
row_of  (N,):     node -> row or -1             source (N,): 0 none | 1 content | 2 pooled
```
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.knowledge.content_encoder import DIM, ContentEncoder
from hir_sdk.schema.dataset import CONTENT_FILE, Dataset
from hir_sdk.schema.tables import CONTENT_COLUMNS

NONE, CONTENT, POOLED = 0, 1, 2
DEFAULT_POOL_FROM: dict[str, tuple[str, ...]] = {
    "advertiser": ("product", "ad"),
    "campaign": ("ad",),
}


@dataclass(frozen=True, eq=False)
class KnowledgeBase:
    """Knowledge vectors of a dataset's nodes (see the module docstring for the layout).

    Attributes:
        vectors: (R, D) float32 rows.
        row_of: (N,) int64 row of each global node index, -1 when the node has none.
        source: (N,) int8: 0 none, 1 own content, 2 pooled from neighbours.
        parts: `(name, width)` of the consecutive parts of a row, text first.
        pooled_as_of: the `as_of` the pooled rows were built with (None: from every
            structural edge, so they are not safe at any earlier cutoff).
    """

    vectors: np.ndarray
    row_of: np.ndarray
    source: np.ndarray
    parts: tuple[tuple[str, int], ...] = (("text", DIM),)
    pooled_as_of: int | None = None

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[1] != sum(w for _, w in self.parts):
            raise ValueError(f"vectors {self.vectors.shape} do not match parts {self.parts}")
        if self.row_of.shape != self.source.shape:
            raise ValueError("row_of and source must have one entry per node")
        if (self.row_of >= len(self.vectors)).any():
            raise ValueError("row_of points past the last row of vectors")

    @property
    def dim(self) -> int:
        """Width D of a row."""
        return int(self.vectors.shape[1])

    @property
    def num_nodes(self) -> int:
        """Number of nodes N covered by `row_of`."""
        return len(self.row_of)

    def gather(
        self, nodes: np.ndarray, cutoffs: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of some global node indices.

        Args:
            nodes: (n,) global node indices.
            cutoffs: (n,) times the rows are used at. Pooled rows summarize structural
                edges up to `pooled_as_of`, so at an earlier cutoff (or when they were
                pooled from every edge) they would leak later information: they are left
                out there, and the node counts as having no knowledge.

        Returns:
            `(vectors, has_vector)`: (n, D) float32 with zero rows where a node has no
            knowledge, and the (n,) bool mask of nodes that have some.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self.num_nodes):
            raise IndexError(f"node indices must lie in [0, {self.num_nodes})")
        rows = self.row_of[nodes]
        has = rows >= 0
        if cutoffs is not None:
            pooled = self.source[nodes] == POOLED
            late = (
                np.ones(len(nodes), dtype=bool)
                if self.pooled_as_of is None
                else np.asarray(cutoffs) < self.pooled_as_of
            )
            has &= ~(pooled & late)
        out = np.zeros((len(nodes), self.dim), dtype=np.float32)
        out[has] = self.vectors[rows[has]]
        return out, has


def _normalize_rows(block: np.ndarray) -> np.ndarray:
    """L2-normalize rows; all-zero rows stay zero."""
    norm = np.linalg.norm(block, axis=1, keepdims=True)
    return np.divide(block, norm, out=np.zeros_like(block), where=norm > 0)


def _vector_column(content: pl.DataFrame, column: str, file: Path) -> np.ndarray:
    """(C, d) float32 matrix of one vector column, L2-normalized, zero rows for nulls."""
    series = content[column]
    if isinstance(series.dtype, pl.Array):
        series = series.arr.to_list()
    present = series.is_not_null().to_numpy()
    lengths = series.list.len().fill_null(0).to_numpy()
    width = int(lengths[present].max()) if present.any() else 0
    present &= lengths > 0
    flat = series.filter(pl.Series(present)).explode().cast(pl.Float64).to_numpy()
    values = np.zeros((len(series), width), dtype=np.float64)
    values[present] = flat.reshape(-1, width) if width else flat.reshape(0, 0)
    bad = ~np.isfinite(values).all(axis=1)
    if bad.any():
        shown = content.filter(pl.Series(bad)).head(5)
        raise InputError(
            "null or non-finite numbers inside vectors",
            file=file,
            column=column,
            rows=[f"{t} {i}" for t, i in zip(shown["node_type"], shown["node_id"], strict=True)],
            total=int(bad.sum()),
        )
    return _normalize_rows(values).astype(np.float32)


def _pool_types(
    dataset: Dataset, pool_from: dict[str, tuple[str, ...]] | None
) -> dict[str, tuple[str, ...]]:
    known = set(dataset.manifest.node_types)
    if pool_from is None:
        return {
            target: tuple(s for s in sources if s in known)
            for target, sources in DEFAULT_POOL_FROM.items()
            if target in known
        }
    unknown = sorted(
        {t for target, sources in pool_from.items() for t in (target, *sources)} - known
    )
    if unknown:
        raise InputError(
            f"pool_from names node types {unknown} that the manifest does not declare "
            f"(it has {list(dataset.manifest.node_types)})"
        )
    return {target: tuple(sources) for target, sources in pool_from.items()}


def structural_neighbour_sums(
    graph: TemporalGraph,
    is_target: np.ndarray,
    row_of: np.ndarray,
    rows: np.ndarray,
    *,
    as_of: int | None,
    allowed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`(targets, sums)`: for each node `v` with `is_target[v]` that has one, the float64
    sum of `rows[row_of[w]]` over its distinct structural-edge neighbours `w` (either
    direction, `ts < as_of`; every edge when None) that have a row (`row_of[w] >= 0`) and,
    with `allowed` (types x types), whose type `v`'s type may read. `targets` is sorted."""
    k = graph.num_edges if as_of is None else graph.edges_before(as_of)
    keep = np.isin(graph.etype[:k], graph.role_codes("structural"))
    src, dst = graph.src[:k][keep], graph.dst[:k][keep]
    target, other = np.concatenate([src, dst]), np.concatenate([dst, src])  # both directions
    ok = is_target[target] & (row_of[other] >= 0)
    if allowed is not None:
        ok &= allowed[graph.node_type_of(target), graph.node_type_of(other)]
    pairs = np.unique(target[ok] * graph.num_nodes + other[ok])  # sorted, de-duplicated
    target, other = pairs // graph.num_nodes, pairs % graph.num_nodes
    targets, starts = np.unique(target, return_index=True)
    if not len(targets):
        return targets, np.zeros((0, rows.shape[1]))
    return targets, np.add.reduceat(rows[row_of[other]].astype(np.float64), starts, axis=0)


def _pool(
    graph: TemporalGraph,
    row_of: np.ndarray,
    vectors: np.ndarray,
    pool_types: dict[str, tuple[str, ...]],
    parts: tuple[tuple[str, int], ...],
    as_of: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(targets, their pooled rows): mean neighbour rows, each part normalized."""
    allowed = np.zeros((len(graph.node_types),) * 2, dtype=bool)
    for name, sources in pool_types.items():
        for source in sources:
            allowed[graph.type_code(name), graph.type_code(source)] = True
    targets, sums = structural_neighbour_sums(
        graph, row_of < 0, row_of, vectors, as_of=as_of, allowed=allowed
    )
    if not len(targets):
        return targets, np.zeros((0, vectors.shape[1]), dtype=np.float32)
    offset = 0
    for _, width in parts:  # the mean, normalized: the sum, normalized
        sums[:, offset : offset + width] = _normalize_rows(sums[:, offset : offset + width])
        offset += width
    return targets, sums.astype(np.float32)


def build_knowledge(
    dataset: Dataset,
    graph: TemporalGraph,
    encoder: ContentEncoder,
    *,
    as_of: int | None = None,
    pool_from: dict[str, tuple[str, ...]] | None = None,
    batch_size: int = 64,
    like: KnowledgeBase | None = None,
) -> KnowledgeBase:
    """Embed the dataset's content and pool it to content-less nodes.

    Args:
        dataset: the validated dataset (its `content` table may be `None`).
        graph: the graph built from `dataset` (for structural neighbours).
        encoder: embeds the `text` column (cached vectors are reused).
        as_of: cutoff; only structural edges with `ts < as_of` are used for pooling.
        pool_from: node type -> neighbour types it pools from; default
            `{"advertiser": ("product", "ad"), "campaign": ("ad",)}`, restricted to the
            node types the manifest declares. `{}` turns pooling off.
        batch_size: texts per forward pass of the encoder.
        like: a knowledge base built from the same dataset and graph (at any `as_of`),
            whose own content rows are taken instead of embedding the text again: they
            do not depend on the time, only the pooled rows do. Cached text vectors
            still cost a hash and a lookup per text, which repeated snapshots (one per
            day) would pay every time.

    Returns:
        The knowledge base: rows of content nodes first (in index order), then pooled rows.
    """
    num_nodes = graph.num_nodes
    if dataset.nodes.height != num_nodes or dataset.fingerprint != graph.fingerprint:
        raise ValueError("build_knowledge: the graph was not built from this dataset")
    row_of = np.full(num_nodes, -1, dtype=np.int64)
    source = np.zeros(num_nodes, dtype=np.int8)
    content = dataset.content
    if content is None:
        return KnowledgeBase(np.zeros((0, DIM), dtype=np.float32), row_of, source)
    own = content["index"].to_numpy().astype(np.int64)
    if like is not None:
        vectors, parts = _own_rows(like, own, num_nodes), like.parts
    else:
        columns = [c for c in content.columns if c not in ("index", *CONTENT_COLUMNS)]
        blocks = [encoder.encode(content["text"].to_list(), batch_size=batch_size)]
        blocks += [_vector_column(content, c, dataset.root / CONTENT_FILE) for c in columns]
        widths = ((c, b.shape[1]) for c, b in zip(columns, blocks[1:], strict=True))
        parts = (("text", DIM), *widths)
        vectors = np.concatenate(blocks, axis=1)  # (C, D)
    row_of[own] = np.arange(len(own))
    source[own] = CONTENT
    targets, pooled = _pool(graph, row_of, vectors, _pool_types(dataset, pool_from), parts, as_of)
    row_of[targets] = len(own) + np.arange(len(targets))
    source[targets] = POOLED
    return KnowledgeBase(np.concatenate([vectors, pooled]), row_of, source, parts, as_of)


def _own_rows(like: KnowledgeBase, own: np.ndarray, num_nodes: int) -> np.ndarray:
    """`like`'s rows of the content nodes `own` (its first rows, in that order)."""
    if like.num_nodes != num_nodes or not (
        (like.source[own] == CONTENT).all()
        and np.array_equal(like.row_of[own], np.arange(len(own)))
    ):
        raise ValueError("build_knowledge: `like` was not built from this dataset's content")
    return like.vectors[: len(own)]
