"""Aligning a refreshed encoder's snapshots onto the space a ranker was fitted in.

A refreshed encoder learns a new space: the same entities land elsewhere (a rotation,
at best), and its prototype heads number the clusters their own way. A ranker fitted on
the old encoder's columns then reads cluster ids that mean something else. Alignment
maps the new space onto the old one before the ranker sees it:

```
at a refresh time T, both encoders embed the same entities as of T:
    A (n, D)   the new encoder's embeddings
    B (n, D)   the old encoder's, already aligned onto the first encoder's space
R = argmin ||A R - B|| over orthogonal R (D, D) = U V^T,  U S V^T = svd(A^T B)
every row the new encoder embeds from T on:  z -> z R,  cluster_l = argmax(z R P_l^T)
    with P_l the first encoder's unit-norm prototypes at level l
```
Cosines are unchanged by a rotation; the cluster columns (and with them the
same-cluster and interest-history columns) then number clusters as the first encoder
did. BoM tokens stay the snapshot's own (its quantizer is fitted on it alone, and the
columns read only whether two tokens are equal). The old encoder's read window ended
before T, and R reads only embeddings as of T, so a snapshot at T still holds nothing
from T on; each aligned snapshot records, as `aligned_read_until`, the latest end of
what the encoders it was aligned through read (`HirLookup.fit_from` counts it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.interests import EntityEmbeddings
from hir_sdk.ranking.hir_lookup import ALIGNED_READ_UNTIL

ALIGNED_TO = "aligned_to"  # metadata key: the run whose space the snapshot is in


def procrustes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(D, D) orthogonal `R` minimising `||a R - b||` (rows of `a` and `b` pair up)."""
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"procrustes: shapes {a.shape} and {b.shape} must be equal (n, D)")
    u, _, vt = np.linalg.svd(a.astype(np.float64).T @ b.astype(np.float64))
    return u @ vt


@dataclass(frozen=True)
class Space:
    """The space snapshots are aligned onto: the rotation from the current encoder's
    space, the first encoder's prototypes, and where the chain came from."""

    rotation: np.ndarray  # (D, D) orthogonal
    prototypes: list[np.ndarray]  # per level (K_l, D), unit norm
    run: str  # the first encoder's run
    read_until: int  # the latest end of what every encoder of the chain read

    @classmethod
    def of(cls, snapshot: EntityEmbeddings, read_until: int) -> Space:
        """The space of `snapshot`'s own encoder (no rotation)."""
        dim = snapshot.embeddings().shape[1]
        return cls(np.eye(dim), list(snapshot.prototypes), snapshot.meta["run"], read_until)

    def refreshed(self, new: np.ndarray, old: np.ndarray, read_until: int) -> Space:
        """The space for a new encoder: `new` (n, D) its embeddings of entities that `old`
        (n, D, the previous encoder's, not yet rotated) holds at the same time."""
        rotation = procrustes(new, old @ self.rotation)
        return dataclasses.replace(
            self, rotation=rotation, read_until=max(self.read_until, read_until)
        )

    def apply(self, snapshot: EntityEmbeddings) -> EntityEmbeddings:
        """`snapshot` rotated into this space, its clusters assigned with its prototypes."""
        z = (snapshot.embeddings().astype(np.float64) @ self.rotation).astype(np.float32)
        columns = {"embedding": pl.Series(z, dtype=pl.Array(pl.Float32, z.shape[1]))}
        for level, prototypes in enumerate(self.prototypes):
            columns[f"cluster_l{level}"] = pl.Series(
                (z @ prototypes.T).argmax(axis=1), dtype=pl.Int32
            )
        table = snapshot.table.with_columns(**columns)
        meta = {**snapshot.meta, ALIGNED_TO: self.run, ALIGNED_READ_UNTIL: self.read_until}
        return dataclasses.replace(snapshot, table=table, prototypes=self.prototypes, meta=meta)
