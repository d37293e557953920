"""Progress of a job: each finished stage with the elapsed time and an estimate of what
remains."""

from __future__ import annotations

import time

# the stages' shares of a whole job, for the estimate of what remains: about the seconds
# each took in the recorded `hir run` jobs on MovieLens-100K and ml-latest-small
# (benchmarks/results/movielens_run.md), in stage order: graph, training, snapshots,
# retrieval, A/B, export
STAGE_SHARES = [4.0, 135.0, 60.0, 1.0, 18.0, 17.0]


class Progress:
    """Prints each finished stage with the elapsed time and, from the stages' expected
    shares of the whole, an estimate of what remains."""

    def __init__(self, shares: list[float]) -> None:
        self.started = time.perf_counter()
        self.shares, self.done = shares, 0

    def __call__(self, name: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        share = sum(self.shares[: self.done]) / sum(self.shares)
        left = "" if self.done == len(self.shares) else f", ~{elapsed / share - elapsed:.0f}s left"
        print(f"[{self.done}/{len(self.shares)} {elapsed:6.1f}s{left}] {name}", flush=True)
