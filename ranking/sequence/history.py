"""Users' event histories as of a time: the input of the sequence ranker.

An event is one engagement edge out of a user (an exposure, a click, a conversion, ...):
the item engaged with, the edge type (the action) and the time. `EventHistory` keeps them
sorted by (user, time) and answers "the last L events of user u strictly before t" for a
whole batch of (u, t) at once:

```
users (B,)  cutoffs (B,)  length L
  --> item   (B, L)  global node index, right-aligned (newest last), -1 on padding
      action (B, L)  edge type code, -1 on padding
      age    (B, L)  cutoff - ts in seconds (> 0), 0 on padding
      mask   (B, L)  True where there is an event
```

Only events with `ts < cutoff` are ever returned: nothing at or after the request time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex

HISTORY_ROLES = ("exposure", "click", "engagement", "conversion")


@dataclass(frozen=True)
class EventWindow:
    item: np.ndarray  # (B, L) int64
    action: np.ndarray  # (B, L) int64
    age: np.ndarray  # (B, L) int64 seconds
    mask: np.ndarray  # (B, L) bool

    @property
    def lengths(self) -> np.ndarray:
        return self.mask.sum(axis=1)

    def trimmed(self) -> EventWindow:
        """The same events without the leading columns that are padding in every row
        (windows are right-aligned), so a batch of short histories costs what they hold."""
        used = self.mask.any(axis=0)
        first = int(used.argmax()) if used.any() else self.mask.shape[1] - 1
        return EventWindow(*(a[:, first:] for a in (self.item, self.action, self.age, self.mask)))


class EventHistory:
    """Engagement events out of each user, sorted by (user, time).

    Args:
        graph: the temporal graph.
        roles: edge roles that count as events (default: exposures, clicks, engagements
            and conversions).
    """

    def __init__(self, graph: TemporalGraph, roles: tuple[str, ...] = HISTORY_ROLES) -> None:
        codes = graph.role_codes(*roles)
        edges = np.flatnonzero(np.isin(graph.etype, codes))  # time-ordered edge ids
        self._index = EventIndex(graph.src[edges], graph.ts[edges])  # by (user, time, id)
        edges = edges[self._index.order]
        self.num_actions = len(graph.edge_types)
        self.item = graph.dst[edges]
        self.action = graph.etype[edges].astype(np.int64)
        self.ts = graph.ts[edges]

    def count_before(self, users: np.ndarray, cutoffs: np.ndarray) -> np.ndarray:
        """Number of events of each user strictly before its cutoff."""
        return self._index.count_before(users, cutoffs)

    def window(self, users: np.ndarray, cutoffs: np.ndarray, length: int) -> EventWindow:
        """The last `length` events of each user before its cutoff (see the module doc)."""
        if length < 1:
            raise ValueError(f"history length must be >= 1, got {length}")
        users = np.asarray(users, dtype=np.int64)
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        first, end = self._index.rows_before(users, cutoffs)
        start = np.maximum(end - length, first)
        index = end[:, None] - length + np.arange(length)[None, :]  # (B, L)
        mask = index >= start[:, None]
        index = np.where(mask, index, 0)
        if len(self.item) == 0:
            mask = np.zeros_like(mask)
            index = np.zeros_like(index)
            empty = np.zeros(1, dtype=np.int64)
            item, action, ts = empty, empty, empty
        else:
            item, action, ts = self.item, self.action, self.ts
        return EventWindow(
            item=np.where(mask, item[index], -1),
            action=np.where(mask, action[index], -1),
            age=np.where(mask, cutoffs[:, None] - ts[index], 0),
            mask=mask,
        )
