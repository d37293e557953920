"""Arrival snapshots: entities created after a snapshot, embedded when they appear.

A full snapshot (`embed_entities`) holds the entities that existed at its `as_of`. An ad
launched a day later has no row in it, so until the next full refresh a ranker would see
no HIR features for exactly the cold-start entities that need them most. An arrival
snapshot embeds only the entities of `node_types` created in [base.as_of, as_of), as of
`as_of` (only their edges before `as_of`, their content, their owners' structure), and
gives them BoM tokens from the base snapshot's quantizer, so their tokens, clusters and
embeddings compare with the base snapshot's rows. Refitting codebooks on a handful of new
entities would make tokens incomparable, and a full refresh costs as much as the
original snapshot.

`HirLookup` takes arrival snapshots like any other: for a request at t it reads an
entity from the latest snapshot at or before t that holds it, so a user comes from the
full snapshot and a new ad from the latest arrival snapshot before the request.

Daily arrival snapshots still leave an ad without features from its launch until the
next one, the hours in which it is shown to its first users. A creation snapshot
(`embed_on_creation`) embeds each entity created between the base snapshot and `stop`
once, `latency` seconds after its creation (only its content, its owners' structure and
the edges before that), as an ad service would when the ad is submitted. Its rows each
carry their own `as_of`, and `HirLookup` serves a row only to requests from that time
on. On `small`, 160 of the cold-start advertisers' 1,105 test examples (and 3 of their 8
conversions) came before their ad's first daily arrival snapshot.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.interests.entity_embeddings import EntityEmbeddings, snapshot_of
from hir_sdk.schema.manifest import iso_time
from hir_sdk.training.as_of import parse_as_of
from hir_sdk.training.embedder import Embedder

ARRIVALS_SINCE = "arrivals_since"  # metadata key: the as_of of the base full snapshot
ON_CREATION = "on_creation_latency"  # metadata key of creation snapshots: their latency (s)


def embed_arrivals(
    run: str | Path,
    data: str | Path,
    base: EntityEmbeddings,
    as_of: str | int,
    *,
    node_types: list[str] | None = None,
    checkpoint: str = "best",
    embedder: Embedder | None = None,
    max_age: int | None = None,
    last: int | None = None,
    fresh_age: int = 0,
) -> EntityEmbeddings | None:
    """The entities of `node_types` (default: those in `base`) created at or after
    `base.as_of` and before `as_of`, embedded as of `as_of` with `base`'s quantizer; None
    when there are none. With `max_age` (seconds), only those created at most that long
    before `as_of`: an older one keeps its row of an earlier arrival snapshot. With `last`
    (the time of the previous arrival snapshot), those created before it only while they
    are younger than `fresh_age` seconds, and then where their age doubles: counted in
    periods of `as_of - last`, when the number of binary digits of their age grows (ages
    1, 2, 4, 8, ... periods). An entity's features change fastest while it is young; an
    older one is embedded about log2(its age) times more rather than at every snapshot,
    and keeps its latest row in between. `embedder`: one of the same run, checkpoint and
    data to reuse (moved to `as_of`), which saves reloading them at every refresh."""
    if max_age is not None and max_age < 1:
        raise InputError(f"the arrivals' maximum age must be >= 1 second, got {max_age}")
    if embedder is None:
        embedder = Embedder(run, data, as_of, checkpoint=checkpoint)
    else:
        embedder = embedder.at(as_of)
    if embedder.as_of <= base.as_of:
        raise InputError(
            f"arrivals need an as_of after the base snapshot's ({base.meta['as_of_iso']}), "
            f"got {iso_time(embedder.as_of)}"
        )
    types = node_types or sorted(base.table["node_type"].cast(pl.String).unique().to_list())
    since = base.as_of if max_age is None else max(base.as_of, embedder.as_of - max_age)
    nodes = embedder.entities(types)
    nodes = nodes[embedder.graph.created_ts[nodes] >= since]
    if last is not None:
        created = embedder.graph.created_ts[nodes]
        nodes = nodes[_age_doubled(created, last, embedder.as_of, fresh_age)]
    if len(nodes) == 0:
        return None
    return _added_to(base, embedder, nodes, run=run, checkpoint=checkpoint)


def _age_doubled(created: np.ndarray, last: int, now: int, fresh_age: int) -> np.ndarray:
    """Whether each entity created at `created` is new since `last`, younger than
    `fresh_age` seconds at `now`, or has an age in periods of `now - last` that gained a
    binary digit since `last`."""
    if not last < now:
        raise InputError(f"the previous arrival time must come before {iso_time(now)}")
    period = now - last
    digits_now = _bit_length((now - created) // period)
    digits_then = _bit_length(np.maximum(last - created, 0) // period)
    return (created >= last) | (now - created < fresh_age) | (digits_now > digits_then)


_POWERS_OF_TWO = 2 ** np.arange(63, dtype=np.int64)


def _bit_length(values: np.ndarray) -> np.ndarray:
    """`int.bit_length` of each non-negative int64: how many powers of two are <= it."""
    return np.searchsorted(_POWERS_OF_TWO, values, side="right")


def embed_on_creation(
    run: str | Path,
    data: str | Path,
    base: EntityEmbeddings,
    stop: str | int,
    *,
    latency: int = 60,
    node_types: list[str] | None = None,
    checkpoint: str = "best",
    embedder: Embedder | None = None,
) -> EntityEmbeddings | None:
    """The entities of `node_types` (default: those in `base`) created at or after
    `base.as_of` and before `stop`, each embedded as of its creation time + `latency`
    seconds (and only those whose time falls before `stop`), with `base`'s quantizer; None
    when there are none. The rows' `as_of` column holds those times. World knowledge is
    pooled as of `base.as_of`, before every row's time. `embedder`: as in `embed_arrivals`."""
    if latency < 1:
        raise InputError(f"the creation latency must be >= 1 second, got {latency}")
    if embedder is None:
        embedder = Embedder(run, data, base.as_of, checkpoint=checkpoint)
    else:
        embedder = embedder.at(base.as_of)
    stop = parse_as_of(stop, embedder.graph.manifest.time)
    if stop <= base.as_of:
        raise InputError(
            f"creation snapshots need a stop after the base snapshot's "
            f"({base.meta['as_of_iso']}), got {iso_time(stop)}"
        )
    types = node_types or sorted(base.table["node_type"].cast(pl.String).unique().to_list())
    created = embedder.graph.created_ts
    nodes = embedder.entities(types, before=stop)
    nodes = nodes[created[nodes] >= base.as_of]
    times = created[nodes] + latency
    keep = times < stop
    nodes, times = nodes[keep], times[keep]
    if len(nodes) == 0:
        return None
    return _added_to(
        base, embedder, nodes, run=run, checkpoint=checkpoint, times=times, latency=latency
    )


def _added_to(
    base: EntityEmbeddings,
    embedder: Embedder,
    nodes: np.ndarray,
    *,
    run: str | Path,
    checkpoint: str,
    times: np.ndarray | None = None,
    latency: int | None = None,
) -> EntityEmbeddings:
    """`nodes` embedded (as of `times`, default the embedder's) into a snapshot that
    extends `base` with its quantizer."""
    z, logits = embedder.embed(nodes, times)
    meta = {ARRIVALS_SINCE: base.as_of, f"{ARRIVALS_SINCE}_iso": base.meta["as_of_iso"]}
    if latency is not None:
        meta[ON_CREATION] = latency
    return snapshot_of(
        embedder,
        nodes,
        z,
        logits,
        base.quantizer,
        run=run,
        checkpoint=checkpoint,
        meta=meta,
        times=times,
    )


def arrival_times(start: int, stop: int, every: int, most: int | None = None) -> list[int]:
    """Refresh times start + every, start + 2 * every, ... strictly before `stop`; with
    `most`, at most that many: where the span holds more, `every` widens to the span over
    `most + 1`, so the times stay evenly spaced. Each arrival snapshot embeds entities
    created since `start` again, so their count bounds the work of a long span (a log
    whose training window runs for years)."""
    if every < 1:
        raise ValueError(f"every must be >= 1 second, got {every}")
    if most is not None:
        if most < 0:
            raise ValueError(f"most must be >= 0, got {most}")
        if most == 0:
            return []
        every = max(every, -(-(stop - start) // (most + 1)))
    return np.arange(start + every, stop, every, dtype=np.int64).tolist()
