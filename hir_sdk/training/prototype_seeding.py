"""Seeding the prototype hierarchy from the embeddings: hierarchical k-means.

Randomly initialised prototypes are random directions: Sinkhorn still spreads the batch
evenly over them, so the clusters are balanced from the first step, but they cut the
sphere wherever the random directions fall, and the slow teacher takes thousands of
steps to move them onto the interests the embeddings have learned. Seeding puts every
prototype on a dense region of the current teacher embeddings, coarse to fine:

```
level 0:  k-means of all rows into K_0 centres c_0 (the best of `restarts` starts: the
          coarse cut decides every level below it)
level l:  the rows of each level-(l-1) cluster p into K_l / K_{l-1} centres, children of p
          (a cluster with fewer rows than children: its rows, then p's own centre, jittered)
coarse   <- c_0
residual <- c_l[k] - P_{l-1}[parent(k)]        so that P_l[k] = normalize(c_l[k])
```
Distillation then refines the seeded prototypes as usual. Deterministic in (rows, seed).

The rows are the teacher's embeddings of training anchors of the *engaged-with* node
types (the destinations of exposure, click, engagement and conversion edges: ads,
products, pixels), not users: an ad sits on one interest, while a user's embedding is a
mixture of several, and centres fitted on mixtures merge interests (on `small`, seeding on
all anchors put two planted super-interests in one coarse cluster; seeding on ads and
products recovers all six, see docs/training.md).
"""

from __future__ import annotations

import numpy as np
import torch

from hir_sdk.bom.kmeans import kmeans
from hir_sdk.graph import TemporalGraph
from hir_sdk.model.heads import PrototypeHeads
from hir_sdk.training.preflight import check_seed_types

JITTER = 0.01  # spread of children that have no rows of their own
ENGAGED_ROLES = ("exposure", "click", "engagement", "conversion")


def seeding_type_codes(graph: TemporalGraph, seed_types: tuple[str, ...] = ()) -> np.ndarray:
    """Type codes of the node types whose anchors seed the prototypes: `seed_types`, or
    by default the destination types of the engaged-with edge roles."""
    manifest = graph.manifest
    names = seed_types or tuple(
        sorted({spec.dst for role in ENGAGED_ROLES for spec in manifest.edge_types_with_role(role)})
    )
    check_seed_types(names, manifest)
    return np.array([graph.type_code(name) for name in names], dtype=np.int64)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def hierarchical_centres(
    z: np.ndarray,
    sizes: tuple[int, ...],
    *,
    seed: int = 0,
    iterations: int = 10,
    restarts: int = 4,
) -> list[np.ndarray]:
    """Unit-norm centres (K_l, D) per level; child `k` of level `l` belongs to parent
    `k // (K_l / K_{l-1})`, as in `PrototypeHeads`.

    Args:
        z: (N, D) rows (unit norm or not; they are normalized), N >= K_0.
        sizes: prototypes per level, coarse to fine, each a multiple of the one before.
        seed: seeds every k-means start and the jitter.
        iterations: Lloyd iterations per k-means (the coarse level gets three times as many).
        restarts: k-means starts at the coarse level; the lowest inertia wins.
    """
    x = _unit(np.ascontiguousarray(z, dtype=np.float32))
    if len(x) < sizes[0]:
        raise ValueError(f"seeding {sizes[0]} prototypes needs at least as many rows, got {len(x)}")
    rng = np.random.default_rng([seed, 0x5EED])
    top = min(
        (
            kmeans(
                x, sizes[0], iterations=3 * iterations, seed=np.random.SeedSequence([seed, 0, r])
            )
            for r in range(restarts)
        ),
        key=lambda fit: fit.inertia,
    )
    levels = [_unit(top.centroids)]
    labels = top.labels
    for level in range(1, len(sizes)):
        per = sizes[level] // sizes[level - 1]
        centres = np.empty((sizes[level], x.shape[1]), dtype=np.float32)
        child = np.empty(len(x), dtype=np.int64)
        for parent in range(sizes[level - 1]):
            mine = np.flatnonzero(labels == parent)
            first = parent * per
            fitted = min(per, len(mine))
            if fitted:
                split = kmeans(
                    x[mine],
                    fitted,
                    iterations=iterations,
                    seed=np.random.SeedSequence([seed, level, parent]),
                )
                centres[first : first + fitted] = split.centroids
                child[mine] = first + split.labels
            spare = per - fitted
            noise = rng.standard_normal((spare, x.shape[1])).astype(np.float32)
            centres[first + fitted : first + per] = levels[-1][parent] + JITTER * noise
        levels.append(_unit(centres))
        labels = child
    return levels


@torch.no_grad()
def seed_prototypes(heads: PrototypeHeads, z: np.ndarray, *, seed: int = 0) -> None:
    """Set `heads`' prototypes (in place) to the hierarchical centres of rows `z`."""
    centres = hierarchical_centres(z, tuple(heads.config.sizes), seed=seed)
    device = heads.coarse.device
    heads.coarse.copy_(torch.from_numpy(centres[0]).to(device))
    for level, residual in enumerate(heads.residuals, start=1):
        parent = heads.prototypes()[level - 1][heads.parents(level).to(device)]
        residual.copy_(torch.from_numpy(centres[level]).to(device) - parent)
