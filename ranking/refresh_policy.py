"""`Refresh`: which encoder's space each full HIR snapshot is in, with several encoder
runs (described in `hir_sdk.ranking.hir_snapshots`, which builds the snapshots).

A module of its own, without numpy or torch, so that `hir ab` builds its choices from it
at start-up."""

from __future__ import annotations

import enum

from hir_sdk.errors import InputError


class Refresh(enum.Enum):
    """Which encoder's space each full snapshot is in, with several runs (see
    `hir_sdk.ranking.hir_snapshots`)."""

    NEWEST = "newest"  # the newest run trained before it, as it is
    ALIGNED = "aligned"  # the newest, rotated onto the first run's space
    SERVING = "serving"  # one run for all: the newest trained before the first snapshot

    @classmethod
    def parse(cls, value: str | Refresh) -> Refresh:
        try:
            return cls(value)
        except ValueError:
            raise InputError(
                f"unknown refresh policy {value!r}; choose from {[r.value for r in cls]}"
            ) from None


# no other mode beat it, paired, in benchmarks/results/refresh_features.md
DEFAULT_REFRESH = Refresh.NEWEST
