"""A peer recommender's embeddings as a HIR snapshot, so XGBoost reads them through the
same feature code as HIR's (`hir_sdk.ranking.hir_features`) in the A/B.

A peer trained only on the ratings before a time T gives a vector per user and per movie
it saw; the snapshot as of T holds exactly those users and movies (graph node ids), with

- the vectors L2-normalised, so `hir_cos` is their cosine (the peers themselves score by
  the raw dot product: the norms, which carry popularity in matrix factorisation, are
  dropped, as HIR's unit-norm embeddings have none);
- interest prototypes from `hierarchical_centres` of the movies' vectors at HIR's
  prototype sizes, seeded on the engaged-with type as HIR seeds its own
  (`prototype_seeding`), and each row's cluster the prototype of largest cosine per level;
- Bag-of-Meaning tokens from an additive quantizer fitted on the snapshot's rows (8
  codebooks, the codeword count `hir embed` picks for that many rows);
- metadata saying the model read nothing from T on (`trained_until = selected_until =
  T`), which `HirLookup.fit_from` reads.

A user or movie with no rating before T is absent, so its features are NaN (missing for
XGBoost) until a later snapshot: these peers are transductive, they cannot embed an
entity they never saw, where HIR's encoder embeds new ads from their links and content.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.bom import AdditiveQuantizer, codebook_size
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.interests.entity_embeddings import snapshot_of
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.training.config import ModelSizes
from hir_sdk.training.prototype_seeding import hierarchical_centres


@dataclass(frozen=True)
class PeerEmbeddings:
    """One peer fit: the vectors of the users and movies (graph node ids) it learned from
    the ratings before `trained_until`."""

    name: str
    users: np.ndarray  # (U,) node ids
    user_vectors: np.ndarray  # (U, D)
    ads: np.ndarray  # (A,) node ids
    ad_vectors: np.ndarray  # (A, D)
    trained_until: int


@dataclass(frozen=True)
class _PeerEncoder:
    """What `snapshot_of` reads from an `Embedder`, for a peer fitted before `as_of`."""

    graph: TemporalGraph
    as_of: int
    prototypes: list[np.ndarray]
    trained_on: str
    step: int = 0
    trained_until: int = 0
    selected_until: int = 0
    encoder_hash: str = ""  # no encoder: the peer's own vectors


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def peer_snapshot(
    graph: TemporalGraph,
    peer: PeerEmbeddings,
    *,
    sizes: tuple[int, ...] = ModelSizes().prototypes,
    codebooks: int = 8,
    codewords: int = 256,
    seed: int = 0,
) -> EntityEmbeddings:
    """The snapshot of `peer` as of its `trained_until` (see the module docstring)."""
    if len(peer.users) != len(peer.user_vectors) or len(peer.ads) != len(peer.ad_vectors):
        raise ValueError(f"{peer.name}: one vector per user and per movie expected")
    nodes = np.concatenate([peer.users, peer.ads]).astype(np.int64)
    z = _unit(np.concatenate([peer.user_vectors, peer.ad_vectors]))
    if not np.isfinite(z).all():
        raise ValueError(f"{peer.name}: non-finite embeddings")
    prototypes = hierarchical_centres(z[len(peer.users) :], tuple(sizes), seed=seed)
    logits = [z @ p.T for p in prototypes]  # cosines: both sides are unit norm
    size = codebook_size(len(z), codewords)
    quantizer = AdditiveQuantizer(codebooks, size).fit(z, seed=seed)
    T = int(peer.trained_until)
    encoder = _PeerEncoder(
        graph, T, prototypes, graph.fingerprint, trained_until=T, selected_until=T
    )
    return snapshot_of(
        encoder,  # type: ignore[arg-type]  # the Embedder fields snapshot_of reads
        nodes,
        z,
        logits,
        quantizer,
        run=peer.name,
        checkpoint="last",
        meta={"run": peer.name, "peer": peer.name, "normalised": "L2"},
    )


def check_snapshot(graph: TemporalGraph, snapshot: EntityEmbeddings, expected: np.ndarray) -> None:
    """Refuse a snapshot that does not hold exactly the `expected` nodes (every user and
    movie rated before its time), or whose encoder read past its time."""
    name = snapshot.meta.get("peer", "peer")
    held = np.sort(snapshot_nodes(snapshot, graph))
    if not np.array_equal(held, np.sort(np.unique(expected))):
        missing = np.setdiff1d(expected, held)
        extra = np.setdiff1d(held, expected)
        raise RuntimeError(
            f"{name} snapshot as of {snapshot.meta['as_of_iso']}: {len(missing)} users or "
            f"movies rated before it are missing, {len(extra)} that were not are present"
        )
    if int(snapshot.meta["trained_until"]) > snapshot.as_of:
        raise RuntimeError(f"{name} snapshot as of {snapshot.meta['as_of_iso']} read past it")
    norms = np.linalg.norm(snapshot.embeddings(), axis=1)
    if not np.allclose(norms, 1.0, atol=1e-4):
        raise RuntimeError(f"{name} snapshot: embeddings are not unit norm")
