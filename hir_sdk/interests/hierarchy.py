"""The interest hierarchy read from a snapshot: primitives, the super-graph, relations.

Notable:
- an interest *primitive* at level l is one prototype of that level; entities belong to
  the primitive of their argmax cluster; a fine primitive's parent is its prototype's
  coarse parent (`k // (K_l / K_{l-1})`), so the levels nest by construction;
- the *super-graph* aggregates raw engagement edges (both ends in the snapshot, `ts <
  as_of`) into primitive-to-primitive edges; its density is reported next to the raw
  graph's, per (source type, destination type) block:
  `density = distinct pairs / (sources * destinations)`;
- relations: primitive affinity from co-engagement (`A[a, b] = M[a, b] / sqrt(M_a M_b)`
  over the symmetrized primitive edge counts M), cluster affinity as prototype cosine,
  a user's proximity to each primitive (softmax of cosines / temperature), the primitives
  an owner (advertiser) serves through the entities it owns, nearest neighbours within or
  across node types.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.interests.entity_embeddings import EntityEmbeddings

ENGAGEMENT_ROLES = ("exposure", "click", "engagement", "conversion")


def snapshot_nodes(snapshot: EntityEmbeddings, graph: TemporalGraph) -> np.ndarray:
    """(N,) global node index of each snapshot row in `graph`."""
    table = snapshot.table
    out = np.empty(len(table), dtype=np.int64)
    types = table["node_type"].cast(pl.String).to_numpy()
    for node_type in np.unique(types):
        rows = np.flatnonzero(types == node_type)
        out[rows] = graph.index(str(node_type), table["node_id"].to_numpy()[rows])
    return out


def snapshot_rows(snapshot: EntityEmbeddings, graph: TemporalGraph) -> np.ndarray:
    """(graph.num_nodes,) snapshot row of every global node, -1 where it is not in it."""
    row = np.full(graph.num_nodes, -1, dtype=np.int64)
    row[snapshot_nodes(snapshot, graph)] = np.arange(len(snapshot.table))
    return row


def parents(snapshot: EntityEmbeddings, level: int) -> np.ndarray:
    """(K_level,) parent primitive (in level - 1) of each primitive of `level` >= 1."""
    if not 1 <= level < snapshot.levels:
        raise ValueError(f"level must be in [1, {snapshot.levels}), got {level}")
    sizes = [len(p) for p in snapshot.prototypes]
    return np.arange(sizes[level]) // (sizes[level] // sizes[level - 1])


def primitive_sizes(snapshot: EntityEmbeddings, level: int) -> pl.DataFrame:
    """Members of each used primitive of `level`, per node type (wide table)."""
    return (
        snapshot.table.select(
            pl.col(f"cluster_l{level}").alias("primitive"), pl.col("node_type").cast(pl.String)
        )
        .group_by("primitive", "node_type")
        .len()
        .pivot(on="node_type", index="primitive", values="len")
        .fill_null(0)
        .sort("primitive")
    )


@dataclass(frozen=True)
class SuperGraph:
    """Engagement edges aggregated to primitives of one level.

    Attributes:
        edges: src_type, dst_type, src_primitive, dst_primitive, edges (raw edge count),
            pairs (distinct raw entity pairs behind it).
        density: per (src_type, dst_type): raw entities, raw pairs, raw density,
            primitives used, primitive pairs, primitive density, raw edges per
            primitive pair.
    """

    level: int
    edges: pl.DataFrame
    density: pl.DataFrame


def super_graph(
    snapshot: EntityEmbeddings,
    graph: TemporalGraph,
    level: int,
    *,
    roles: tuple[str, ...] = ENGAGEMENT_ROLES,
) -> SuperGraph:
    row_of = snapshot_rows(snapshot, graph)
    codes = graph.role_codes(*roles)
    k = graph.edges_before(snapshot.as_of)
    keep = np.isin(graph.etype[:k], codes)
    src, dst = row_of[graph.src[:k][keep]], row_of[graph.dst[:k][keep]]
    inside = (src >= 0) & (dst >= 0)
    src, dst = src[inside], dst[inside]
    if len(src) == 0:
        raise InputError(f"no engagement edges with roles {list(roles)} before the snapshot")
    types = snapshot.table["node_type"].cast(pl.String)
    cluster = snapshot.clusters(level)
    raw = pl.DataFrame(
        {
            "src_type": types.gather(src),
            "dst_type": types.gather(dst),
            "src": src,
            "dst": dst,
            "src_primitive": cluster[src],
            "dst_primitive": cluster[dst],
        }
    )
    edges = (
        raw.group_by("src_type", "dst_type", "src_primitive", "dst_primitive")
        .agg(pl.len().alias("edges"), pl.struct("src", "dst").n_unique().alias("pairs"))
        .sort("src_type", "dst_type", "src_primitive", "dst_primitive")
    )
    entities = raw.group_by("src_type", "dst_type").agg(
        pl.col("src").n_unique().alias("sources"),
        pl.col("dst").n_unique().alias("destinations"),
        pl.struct("src", "dst").n_unique().alias("raw_pairs"),
        pl.col("src_primitive").n_unique().alias("src_primitives"),
        pl.col("dst_primitive").n_unique().alias("dst_primitives"),
        pl.len().alias("raw_edges"),
    )
    blocks = edges.group_by("src_type", "dst_type").agg(pl.len().alias("primitive_pairs"))
    density = (
        entities.join(blocks, on=["src_type", "dst_type"])
        .with_columns(
            raw_density=pl.col("raw_pairs") / (pl.col("sources") * pl.col("destinations")),
            primitive_density=pl.col("primitive_pairs")
            / (pl.col("src_primitives") * pl.col("dst_primitives")),
            edges_per_primitive_pair=pl.col("raw_edges") / pl.col("primitive_pairs"),
        )
        .sort("src_type", "dst_type")
    )
    return SuperGraph(level, edges, density)


def primitive_affinity(sg: SuperGraph, num_primitives: int) -> np.ndarray:
    """(K, K) co-engagement affinity of primitives, symmetric, in [0, 1]."""
    m = np.zeros((num_primitives, num_primitives), dtype=np.float64)
    np.add.at(
        m,
        (sg.edges["src_primitive"].to_numpy(), sg.edges["dst_primitive"].to_numpy()),
        sg.edges["edges"].to_numpy(),
    )
    m = m + m.T
    degree = np.sqrt(m.sum(axis=1))
    scale = np.outer(degree, degree)
    return np.divide(m, scale, out=np.zeros_like(m), where=scale > 0)


def cluster_affinity(snapshot: EntityEmbeddings, level: int) -> np.ndarray:
    """(K, K) cosine similarity of the prototypes of one level."""
    p = snapshot.prototypes[level].astype(np.float64)
    return p @ p.T


def proximity(
    snapshot: EntityEmbeddings, rows: np.ndarray, level: int, *, temperature: float = 0.1
) -> np.ndarray:
    """(n, K) how close each entity of `rows` is to every primitive: softmax over the
    primitives of cosine / temperature (rows sum to 1)."""
    z = snapshot.embeddings()[np.asarray(rows)].astype(np.float64)
    logits = z @ snapshot.prototypes[level].astype(np.float64).T / temperature
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def served_primitives(
    snapshot: EntityEmbeddings, graph: TemporalGraph, level: int, owner_type: str | None = None
) -> pl.DataFrame:
    """The primitives each owner (advertiser) serves: owner_id, primitive, entities (its
    own entities in the snapshot in that primitive, itself excluded) and their share.
    Owners are as of each row's `as_of` (no structural edge the snapshot could not see)."""
    nodes = snapshot_nodes(snapshot, graph)
    owners = OwnersAsOf(graph, owner_type).at(nodes, snapshot.table["as_of"].to_numpy())
    owned = (owners != NO_OWNER) & (owners != nodes)
    if not owned.any():
        raise InputError("no entity in the snapshot has an owner to serve primitives for")
    table = pl.DataFrame(
        {
            "owner_id": graph.node_ids_of(owners[owned]),
            "primitive": snapshot.clusters(level)[owned],
        }
    )
    return (
        table.group_by("owner_id", "primitive")
        .len("entities")
        .with_columns(share=pl.col("entities") / pl.col("entities").sum().over("owner_id"))
        .sort(["owner_id", "entities", "primitive"], descending=[False, True, False])
    )


def nearest(
    snapshot: EntityEmbeddings, row: int, k: int, *, node_type: str | None = None
) -> pl.DataFrame:
    """The `k` entities most similar (cosine) to the entity at `row`, itself excluded,
    among `node_type` (default: every type), ties by row."""
    z = snapshot.embeddings()
    candidates = np.arange(len(z)) if node_type is None else snapshot.of_type(node_type)
    candidates = candidates[candidates != row]
    scores = z[candidates] @ z[row]
    order = np.lexsort((candidates, -scores))[:k]
    picked = candidates[order]
    return (
        snapshot.table[picked]
        .select("node_type", "node_id")
        .with_columns(score=pl.Series(scores[order]))
    )
