"""Random inputs of the online ranker, for tests, benchmarks and the sharding self-check.

Shapes and value ranges as real requests have them; `fill` < 1 leaves event slots empty
(padding: item and action -1, age 0, HIR zeros), `owners=False` gives every candidate an
empty owner bag.
"""

from __future__ import annotations

import torch

from hir_sdk.ranking.sequence.online_ranker import CandidateInputs
from hir_sdk.schema.manifest import DAY


def random_events(
    n: int,
    length: int,
    *,
    hir_dim: int,
    num_actions: int,
    generator: torch.Generator,
    fill: float = 1.0,
    items: int = 100_000,
) -> tuple[torch.Tensor, ...]:
    """(item, action, age, mask, hir, hir_found), each (n, length, ...)."""
    mask = torch.rand(n, length, generator=generator) < fill
    return (
        torch.where(mask, torch.randint(0, items, (n, length), generator=generator), -1),
        torch.where(mask, torch.randint(0, num_actions, (n, length), generator=generator), -1),
        torch.where(mask, torch.randint(60, 60 * DAY, (n, length), generator=generator), 0),
        mask,
        torch.randn(n, length, hir_dim, generator=generator) * mask[..., None],
        mask.clone(),
    )


def random_candidates(
    n: int,
    *,
    hir_dim: int,
    dense_dim: int,
    codebooks: int,
    codewords: int,
    routes: int,
    generator: torch.Generator,
    items: int = 100_000,
    owners: int = 5_000,
) -> CandidateInputs:
    """`n` candidates with BoM tokens `m * codewords + k` and routes in [-1, routes)."""
    return CandidateInputs(
        ad=torch.randint(0, items, (n,), generator=generator),
        owner=torch.randint(-1, owners, (n,), generator=generator),
        bom=torch.arange(codebooks)[None] * codewords
        + torch.randint(0, codewords, (n, codebooks), generator=generator),
        hir=torch.randn(n, hir_dim, generator=generator),
        hir_found=torch.ones(n, dtype=torch.bool),
        route=torch.randint(-1, routes, (n,), generator=generator),
        dense=torch.randn(n, dense_dim, generator=generator),
    )
