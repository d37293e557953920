"""`CellRouter`: which codebook-0 cells to probe for a query, learned from sample queries.

An IVF-style query (`probe_bags` of codebook 0, `gather_codebooks=1`) re-scores every item
of its P best cells, so its recall is the share of the true top k that sits in those
cells. Ranking cells by the query's inner product with their centroids works when queries
look like items. Users are not ads: in the `medium` world a user's 100 nearest ads and
products lie in cells the centroid ranking puts far down the list (24 cells hold 0.89 of
them by centroid, 8 cells by the best possible order).

The router learns the order from a sample of queries of the kind that will be served
(users, disjoint from those it will answer). For each sample query it finds the exact top
k (`exact_knn`) and the cells holding them, then fits a softmax over cells,

    score_c(q) = s * (q . w_c) + b_c      trained so that softmax_c(score(q)) matches
                                          the share of q's top k in cell c

(cross-entropy, Adam, `steps` steps of `batch_size` queries), starting from w_c = unit(mean of the
sample queries that hit c, weighted by their hits) + unit(centroid of c), b = 0, s = 20.
Its scores are per-cell relevance scores: `probe_bags(router.scores(q)[:, None, :], P)`.
Deterministic for a given input and thread count (seeded, CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F  # noqa: N812

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.exact import exact_knn
from hir_sdk.ranking.retrieval.input_checks import ArrayLike, as_embeddings, check_positive
from hir_sdk.ranking.retrieval.saved_arrays import read_arrays, write_arrays
from hir_sdk.sampling.blas_threads import one_blas_thread

FORMAT = "hir-sdk/cell-router"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class CellRouter:
    """Per-cell routing vectors `weights` (K, D), `bias` (K,) and `scale`."""

    weights: np.ndarray
    bias: np.ndarray
    scale: float

    @classmethod
    def fit(
        cls,
        queries: ArrayLike,
        embeddings: ArrayLike,
        cells: ArrayLike,
        num_cells: int,
        *,
        k: int = 100,
        steps: int = 300,
        batch_size: int = 2048,
        learning_rate: float = 0.01,
        seed: int = 0,
    ) -> CellRouter:
        """Learn the cell order from sample queries.

        Args:
            queries: (Q, D) sample queries (not those the router will answer).
            embeddings: (N, D) the indexed items' embeddings.
            cells: (N,) each item's codebook-0 code, in [0, num_cells).
            num_cells: K, the codebook-0 size.
            k: the top k whose cells a query should probe.
            steps: Adam steps, each on `batch_size` sample queries (a seeded draw).
            batch_size: queries per step (the whole sample when it is smaller).
            learning_rate: Adam's.
            seed: the draw of each step's queries.
        """
        num_cells = check_positive(num_cells, "num_cells")
        check_positive(steps, "steps")
        items = as_embeddings(embeddings, "embeddings")
        sample = as_embeddings(queries, "queries", dim=items.shape[1])
        cell = np.asarray(cells)
        if cell.shape != (len(items),) or cell.dtype.kind not in "iu":
            raise InputError(f"cells must be ({len(items)},) integers, got {cell.shape}")
        if len(cell) and (cell.min() < 0 or cell.max() >= num_cells):
            raise InputError(f"cells must lie in [0, num_cells = {num_cells})")
        top = exact_knn(sample, items, min(check_positive(k, "k"), len(items))).rows
        hits = np.zeros((len(sample), num_cells), dtype=np.float32)  # (Q, K)
        np.add.at(hits, (np.repeat(np.arange(len(sample)), top.shape[1]), cell[top].ravel()), 1)
        sums = np.zeros((num_cells, items.shape[1]), dtype=np.float32)
        np.add.at(sums, cell, items)
        target = torch.from_numpy(hits / hits.sum(axis=1, keepdims=True))
        q = torch.from_numpy(sample)
        start = F.normalize(torch.from_numpy(hits.T @ sample), dim=1) + F.normalize(
            torch.from_numpy(sums), dim=1
        )
        weights = start.clone().requires_grad_(True)
        bias = torch.zeros(num_cells, requires_grad=True)
        scale = torch.tensor(20.0, requires_grad=True)
        optimizer = torch.optim.Adam([weights, bias, scale], lr=learning_rate)
        draw = torch.Generator().manual_seed(seed)
        size = min(check_positive(batch_size, "batch_size"), len(sample))
        for _ in range(steps):
            rows = torch.randperm(len(sample), generator=draw)[:size]
            optimizer.zero_grad()
            log_p = torch.log_softmax(scale * (q[rows] @ weights.T) + bias, dim=1)
            loss = -(target[rows] * log_p).sum(dim=1).mean()
            loss.backward()
            optimizer.step()
        return cls(
            weights=weights.detach().numpy().copy(),
            bias=bias.detach().numpy().copy(),
            scale=float(scale.detach()),
        )

    def scores(self, queries: ArrayLike) -> np.ndarray:
        """(B, K) float32 cell scores, higher = probe first."""
        q = as_embeddings(queries, "queries", dim=self.weights.shape[1])
        with one_blas_thread():  # a multi-threaded BLAS's spinning threads slow the search
            products = q @ self.weights.T
        return (np.float32(self.scale) * products + self.bias).astype(np.float32)

    def save(self, path: str | Path) -> None:
        """Write the router to `path` (.npz) atomically: temp file, then rename."""
        arrays = {"weights": self.weights, "bias": self.bias, "scale": np.array(self.scale)}
        write_arrays(path, FORMAT, FORMAT_VERSION, arrays)

    @classmethod
    def load(cls, path: str | Path) -> CellRouter:
        """Read a router written by `save` (no pickle); raises `InputError` naming the file."""
        arrays = read_arrays(
            path, FORMAT, FORMAT_VERSION, ("weights", "bias", "scale"), "cell router"
        )
        weights, bias = arrays["weights"], arrays["bias"]
        if weights.ndim != 2 or bias.shape != (weights.shape[0],):
            raise InputError(f"weights {weights.shape} and bias {bias.shape} disagree", file=path)
        return cls(weights=weights, bias=bias, scale=float(arrays["scale"]))
