"""A plain vectorised torch temporal neighbour sampler: the peer of
`benchmarks/sampler_throughput.py`, written the way a user without hir-sdk would write it.

Its rule is that of PyG's temporal `NeighborLoader` (`time_attr`, disjoint per-seed
subgraphs, uniform, no replacement), with edges dated strictly before the seed's time:

- every seed (node, time t) gets its own subgraph;
- hop by hop, every node first reached in the previous hop draws min(fanout, d) of its d
  edges dated before t (both directions), uniformly without replacement (Floyd's
  algorithm, one vectorised step per draw);
- nodes are deduplicated within a subgraph and relabelled to local indices in the order
  they were reached (seed first); every drawn edge is kept, as (subgraph, local source,
  local destination).

Set-up (not timed by the benchmark, like PyG's CSR conversion): one CSR over both
directions with each node's edges sorted by time, and one search key per entry
(`node * span + time`), so a single `torch.searchsorted` finds every frontier node's
visible edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class SampledSubgraphs:
    """Per-seed subgraphs: node `i` belongs to subgraph `batch[i]`."""

    nodes: torch.Tensor  # (T,) global node ids, grouped by subgraph, seed first
    batch: torch.Tensor  # (T,) subgraph of each node
    edge_batch: torch.Tensor  # (E,) subgraph of each edge
    edge_src: torch.Tensor  # (E,) local index of the expanded node
    edge_dst: torch.Tensor  # (E,) local index of the drawn neighbour

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)


class TorchTemporalSampler:
    """Uniform temporal neighbour sampling over an edge list (src, dst, ts)."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, ts: np.ndarray, num_nodes: int) -> None:
        src_t, dst_t, ts_t = (
            torch.as_tensor(np.asarray(a), dtype=torch.int64) for a in (src, dst, ts)
        )
        node = torch.cat([src_t, dst_t])
        self.t0 = int(ts_t.min())
        self.span = int(ts_t.max()) - self.t0 + 2
        key, order = torch.sort(node * self.span + (torch.cat([ts_t, ts_t]) - self.t0))
        self.key = key
        self.other = torch.cat([dst_t, src_t])[order]
        self.ptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
        self.ptr[1:] = torch.cumsum(torch.bincount(node, minlength=num_nodes), 0)
        self.num_nodes = num_nodes

    def _draw(self, degree: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        """(F, k) distinct offsets in [0, degree) per row, uniform (Floyd); -1 past the
        row's min(k, degree)."""
        rows = len(degree)
        rand = torch.rand(rows, k, generator=generator, dtype=torch.float64)
        chosen = torch.empty(rows, k, dtype=torch.int64)
        for s in range(k):
            j = degree - k + s  # Floyd: draw t in [0, j]; if taken, take j itself
            t = (rand[:, s] * (j + 1).clamp(min=1)).long()
            taken = (chosen[:, :s] == t[:, None]).any(dim=1)
            chosen[:, s] = torch.where(taken, j, t)
        small = degree <= k  # every edge: offsets 0 .. degree-1
        steps = torch.arange(k).expand(rows, k)
        chosen = torch.where(small[:, None], steps, chosen)
        return torch.where(steps < degree.clamp(max=k)[:, None], chosen, -1)

    def sample(
        self,
        seeds: torch.Tensor,
        times: torch.Tensor,
        fanouts: tuple[int, ...],
        generator: torch.Generator,
    ) -> SampledSubgraphs:
        n = self.num_nodes
        slots = torch.arange(len(seeds))
        frontier_code = slots * n + seeds  # (subgraph, node) as one integer
        reached = [frontier_code]
        seen = frontier_code.sort().values
        parents, children = [], []
        for k in fanouts:
            if len(frontier_code) == 0:
                break
            slot, node = frontier_code // n, frontier_code % n
            start = self.ptr[node]
            end = torch.searchsorted(self.key, node * self.span + (times[slot] - self.t0))
            offset = self._draw(end - start, k, generator)  # (F, k)
            row, col = torch.nonzero(offset >= 0, as_tuple=True)
            neighbour = self.other[start[row] + offset[row, col]]
            child = slot[row] * n + neighbour
            parents.append(frontier_code[row])
            children.append(child)
            fresh = torch.unique(child)
            fresh = fresh[~torch.isin(fresh, seen)]
            reached.append(fresh)
            seen = torch.cat([seen, fresh]).sort().values
            frontier_code = fresh
        codes = torch.cat(reached)  # each (subgraph, node) once, in the order reached
        batch = codes // n
        order = torch.sort(batch, stable=True).indices
        codes, batch = codes[order], batch[order]
        first = torch.zeros(len(seeds) + 1, dtype=torch.int64)
        first[1:] = torch.cumsum(torch.bincount(batch, minlength=len(seeds)), 0)
        local = torch.arange(len(codes)) - first[batch]
        by_code = torch.sort(codes)
        parent = torch.cat(parents) if parents else torch.zeros(0, dtype=torch.int64)
        child = torch.cat(children) if children else torch.zeros(0, dtype=torch.int64)
        src = local[by_code.indices[torch.searchsorted(by_code.values, parent)]]
        dst = local[by_code.indices[torch.searchsorted(by_code.values, child)]]
        return SampledSubgraphs(codes % n, batch, parent // n, src, dst)
