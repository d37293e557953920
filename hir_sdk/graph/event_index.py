"""Vectorised as-of queries over timed events grouped by an integer key.

The primitive behind leak-free features and labels: "how many events of group g happened
strictly before t", "how many in (t, t + w]", "when was the last one before t", for
millions of (g, t) queries at once, with no per-row Python.

```
events  (group, ts)  --sort by (group, ts)-->  keys = compact(group) * SPAN + (ts - t0)
query   (group, t)   --> one binary search per query in `keys`
```

Time-decayed counts ("how many events before t, each weighted 2^(-age / half-life)") come
from one running sum per event, `S_i = 2^(-(ts_i - ts_{i-1}) / h) * S_{i-1} + 1` within
its group, computed once per half-life by a doubling scan (log2 of the longest group's
length vectorised passes, every value in [0, count]: no overflow however long the log);
a query reads the sum at its last earlier event and decays it to `t`.

Groups are often pairs (a user and an ad's owner). `pair_keys` packs a pair into one
group code as a radix-`(size + 1)` number with both digits shifted by one, so a missing
part (-1, an ad without an owner) is the digit 0 and cannot borrow from its neighbour:
`user * N + owner` made `(u, -1)` equal `(u - 1, N - 1)`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NEVER = np.iinfo(np.int64).min  # `last_before` of a group with no earlier event
_INT64_MAX = np.iinfo(np.int64).max


def pair_keys(first: np.ndarray, second: np.ndarray, size: int) -> np.ndarray:
    """One int64 key per pair `(first[i], second[i])`, equal only for equal pairs, ordered
    by `first` then `second`: `(first + 1) * (size + 1) + (second + 1)` (the two arrays
    broadcast).

    `second` must lie in `[-1, size)` and `first` in `[-1, ...)`; -1 stands for a missing
    part (an ad without an owner) and gets a key of its own. Raises ValueError on a part
    out of range or a key that would not fit in int64."""
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    size = int(size)
    if size < 0:
        raise ValueError(f"pair_keys: size must be >= 0, got {size}")
    if (first.size and int(first.min()) < -1) or (second.size and int(second.min()) < -1):
        raise ValueError("pair_keys: parts must be >= -1 (-1: missing)")
    if second.size and int(second.max()) >= size:
        raise ValueError(f"pair_keys: second part {int(second.max())} is not below {size}")
    top = int(first.max()) + 1 if first.size else 0
    if (top + 1) * (size + 1) - 1 > _INT64_MAX:
        raise ValueError(f"pair_keys: pairs of up to {top - 1} x {size} do not fit in int64")
    return (first + 1) * (size + 1) + (second + 1)


def split_pair_keys(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`(first, second)` back from `pair_keys(first, second, size)`."""
    keys = np.asarray(keys, dtype=np.int64)
    return keys // (size + 1) - 1, keys % (size + 1) - 1


class EventIndex:
    """Events keyed by an int64 group code, sorted by (group, time).

    Args:
        groups: (n,) int64 group code of each event (any values, e.g. `pair_keys(user,
            owner, N)`).
        ts: (n,) int64 event times.
    """

    def __init__(self, groups: np.ndarray, ts: np.ndarray) -> None:
        groups = np.asarray(groups, dtype=np.int64)
        ts = np.asarray(ts, dtype=np.int64)
        if groups.shape != ts.shape or groups.ndim != 1:
            raise ValueError("EventIndex: groups and ts must be 1-D arrays of one length")
        self._groups, compact = np.unique(groups, return_inverse=True)
        self._t0 = int(ts.min()) if len(ts) else 0
        self._span = (int(ts.max()) - self._t0 + 2) if len(ts) else 2
        if len(self._groups) and len(self._groups) * self._span >= 2**62:
            raise ValueError("EventIndex: too many groups for the time span")
        keys = compact.astype(np.int64) * self._span + (ts - self._t0)
        order = np.argsort(keys, kind="stable")
        self.order = order  # (n,) input row of each sorted event; ties keep input order
        self._keys = keys[order]
        self._ts = ts[order]
        self._running: dict[float, np.ndarray] = {}  # half-life -> running decayed sums

    def __len__(self) -> int:
        return len(self._keys)

    def _position(self, groups: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index of the first event of each query's group at or after t, group start)."""
        groups = np.asarray(groups, dtype=np.int64)
        t = np.broadcast_to(np.asarray(t, dtype=np.int64), groups.shape)
        slot = np.searchsorted(self._groups, groups)
        slot = np.minimum(slot, max(len(self._groups) - 1, 0))
        known = (
            (self._groups[slot] == groups)
            if len(self._groups)
            else np.zeros(groups.shape, dtype=bool)
        )
        base = slot.astype(np.int64) * self._span
        # clip before subtracting: a query time far from the events must not wrap around
        offset = np.clip(t, self._t0, self._t0 + self._span - 1) - self._t0
        at = np.searchsorted(self._keys, base + offset, side="left")
        start = np.searchsorted(self._keys, base, side="left")
        at = np.where(known, at, 0)
        start = np.where(known, start, 0)
        return at, start

    def rows_before(self, groups: np.ndarray, t: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) per query: its group's events with `ts < t` are the sorted events
        `[start, end)`, i.e. input rows `order[start:end]`, oldest first."""
        at, start = self._position(groups, t)
        return start, at

    def count_before(self, groups: np.ndarray, t: np.ndarray | int) -> np.ndarray:
        """Number of events of each query's group with `ts < t`."""
        at, start = self._position(groups, t)
        return at - start

    def count_between(
        self, groups: np.ndarray, after: np.ndarray | int, until: np.ndarray | int
    ) -> np.ndarray:
        """Number of events with `after < ts <= until` (the attribution window shape)."""
        after = np.asarray(after, dtype=np.int64) + 1
        until = np.asarray(until, dtype=np.int64) + 1
        return self.count_before(groups, until) - self.count_before(groups, after)

    def decayed_count_before(
        self, groups: np.ndarray, t: np.ndarray | int, half_life: float
    ) -> np.ndarray:
        """Sum over each query's group's events with `ts < t` of `2^(-(t - ts) / half_life)`
        (seconds): a count in which an event `half_life` old weighs one half."""
        return self.counts_before(groups, t, (half_life,))[1][0]

    def counts_before(
        self, groups: np.ndarray, t: np.ndarray | int, half_lives: Sequence[float]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """`count_before` and `decayed_count_before` for each of `half_lives` (seconds),
        from one search per query: (counts, [decayed counts per half-life])."""
        bad = [h for h in half_lives if not h > 0]
        if bad:
            raise ValueError(f"EventIndex: half_life must be > 0 seconds, got {bad[0]}")
        at, start = self._position(groups, t)
        has = at > start
        last = at[has] - 1
        age = np.broadcast_to(np.asarray(t, dtype=np.int64), at.shape)[has] - self._ts[last]
        decayed = []
        for half_life in half_lives:
            out = np.zeros(at.shape, dtype=np.float64)
            if has.any():
                running = self._running_sums(float(half_life))
                out[has] = running[last] * np.exp2(-age / half_life)
            decayed.append(out)
        return at - start, decayed

    def _running_sums(self, half_life: float) -> np.ndarray:
        """(n,) per sorted event: the decayed count of its group's events up to and
        including it, as of its own time (see the module docstring)."""
        cached = self._running.get(half_life)
        if cached is not None:
            return cached
        n = len(self._keys)
        total = np.ones(n, dtype=np.float64)
        # carry[i]: the factor from event i - d's sum to event i's (0 across groups)
        carry = np.zeros(n, dtype=np.float64)
        if n > 1:
            same = np.flatnonzero((self._keys[1:] // self._span) == (self._keys[:-1] // self._span))
            # within a group only: across groups the times run backwards, and 2^(-gap)
            # of a gap of years in the past overflows
            gap = (self._ts[same + 1] - self._ts[same]).astype(np.float64)
            carry[same + 1] = np.exp2(-gap / half_life)
        step = 1
        while step < n and carry[step:].any():
            total[step:] = total[step:] + carry[step:] * total[:-step]
            carry[step:] = carry[step:] * carry[:-step]
            step *= 2
        self._running[half_life] = total
        return total

    def last_before(self, groups: np.ndarray, t: np.ndarray | int) -> np.ndarray:
        """Time of the latest event with `ts < t`, or `NEVER` when there is none."""
        at, start = self._position(groups, t)
        has = at > start
        out = np.full(at.shape, NEVER, dtype=np.int64)
        out[has] = self._ts[at[has] - 1]
        return out
