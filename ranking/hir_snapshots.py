"""HIR snapshots for the A/B: a trained encoder run embeds the entities at a few refresh
times, and the rankers read them as of each example's request time (`HirLookup`).

Default refresh times: the end of the encoder's training window (`trained_until`), the
validation start and the test start. Each snapshot only sees edges before its time, and
its BoM codebooks are fitted on that snapshot alone, so nothing later leaks in.

Between full refreshes, arrival snapshots (`hir_sdk.interests.arrivals`) embed the ads
created since the last full snapshot (`arrival_types`), every `arrivals_every` seconds
(default a day; None turns them off), with that snapshot's quantizer, and at most
`max_arrivals` times per full snapshot (default 120: where the span to the next one is
longer than that many days, they are spread evenly over it). Each embeds again the ads
created since the full snapshot and at most `arrival_max_age` before the arrival time
(default 120 days; an older ad keeps its latest arrival row until the next full
snapshot), those older than `arrival_fresh_age` (default 14 days) only where their age
doubles (`embed_arrivals`). Without the bounds a log whose windows run for years would
re-embed its ads thousands of times; spans of up to 14 days are embedded exactly as
without them.
Without arrival snapshots an ad launched after the test start would have no HIR
features for the whole test window.
They run in every window alike, so rankers fit on the same kind of features they are
tested on. New users wait for the next full refresh: in the `small` world, features of
day-old users made the sparse-user slice worse, not better. Each new ad is also embedded
once, `creation_latency` seconds after its creation (a creation snapshot,
`embed_on_creation`; default a minute), so it has features before its first daily
arrival: on `small` this took the cold-start advertisers' NE delta from -4.2% to -9.5%.

Several runs refresh the encoder too: each full snapshot is embedded by the newest run
whose training window ended at or before it (refresh runs, `hir fit --refresh --until
validation_start`, train until a later snapshot without reading anything after it), and
its arrival snapshots by the same run. The default times are then every run's
`trained_until` with the validation and test starts. Snapshots of a stale encoder
drift: on `small`, the ads' level-1 clusters matched the planted interests less well
with every snapshot after the encoder's window (NMI 0.919, 0.905, 0.890).

But a ranker is fitted once, on the features of the snapshots before the test window,
and a refreshed encoder changes what those features mean (a new space, clusters
numbered its own way). `refresh` (`Refresh`, in `ranking.refresh_policy`) says which space
each snapshot is in:

- `newest`: as above, each snapshot as its encoder embeds it;
- `aligned`: the newest encoder, each new encoder's space rotated onto the previous
  one's (orthogonal Procrustes on the entities both embed at the refresh time, the
  previous encoder's read window having ended before it), clusters assigned with the
  first encoder's prototypes (`ranking.snapshot_alignment`);
- `serving`: backfill: every snapshot embedded by the one encoder that serves the
  ranker, the run picked for the first snapshot. A ranker may only read an encoder that
  read nothing at or after its earliest fit example (`HirLookup.fit_from`), and its
  fit window starts at the first snapshot, so the serving encoder is the newest that
  ended by then; backfilling with a later one would feed the ranker features of an
  encoder that read its training labels. Later runs go unused until a ranker is refit
  on examples after them, which the A/B's windows leave no room for.

Measured in benchmarks/results/refresh_features.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import EntityEmbeddings, embed_entities
from hir_sdk.interests.arrivals import arrival_times, embed_arrivals, embed_on_creation
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.ranking.hir_lookup import HirLookup, read_until
from hir_sdk.ranking.refresh_policy import DEFAULT_REFRESH, Refresh
from hir_sdk.ranking.snapshot_alignment import Space
from hir_sdk.schema.manifest import DAY
from hir_sdk.training.as_of import run_trained_until
from hir_sdk.training.config import load_config
from hir_sdk.training.embedder import Embedder

# arrival snapshots per full snapshot: daily for four months, evenly spread beyond
MAX_ARRIVALS = 120
# the age up to which an arrival snapshot embeds an ad again
ARRIVAL_MAX_AGE = 120 * DAY
# the age up to which it embeds an ad again at every arrival snapshot; older, only where
# the ad's age doubles (`embed_arrivals`)
ARRIVAL_FRESH_AGE = 14 * DAY


RunPaths = str | Path | Sequence[str | Path]


def _runs(run: RunPaths) -> list[Path]:
    runs = [Path(run)] if isinstance(run, str | Path) else [Path(r) for r in run]
    if not runs:
        raise InputError("give at least one encoder run")
    for r in runs:
        if not (r / "config.toml").is_file():
            raise InputError("not a training run (no config.toml)", file=r)
    return runs


def _run_ends(run: RunPaths, graph: TemporalGraph) -> list[tuple[int, Path]]:
    """`(trained_until, run)` of each run, in the order given (each config read once)."""
    ends = []
    for r in _runs(run):
        config = load_config(r / "config.toml")
        until = run_trained_until(r, config.train_until, config.select, graph.manifest.time)
        ends.append((until, r))
    return ends


def _default_times(ends: list[tuple[int, Path]], graph: TemporalGraph) -> list[int]:
    t = graph.manifest.time
    return sorted({end for end, _ in ends} | {t.validation_start, t.test_start})


def _pick_encoders(ends: list[tuple[int, Path]], times: Sequence[int]) -> list[Path]:
    ordered = sorted((end, k, r) for k, (end, r) in enumerate(ends))
    picked = []
    for as_of in times:
        usable = [r for end, _, r in ordered if end <= as_of]
        picked.append(usable[-1] if usable else ordered[0][2])
    return picked


def snapshot_times(run: RunPaths, graph: TemporalGraph) -> list[int]:
    """The default refresh times for one run or several on a graph (see the module
    docstring)."""
    return _default_times(_run_ends(run, graph), graph)


def encoder_of_snapshots(run: RunPaths, graph: TemporalGraph, times: Sequence[int]) -> list[Path]:
    """The run that embeds each full snapshot: the one trained until the latest time at or
    before it, else (a snapshot before every run's window ended, which `HirLookup`'s fit
    check then guards) the earliest-ending run."""
    return _pick_encoders(_run_ends(run, graph), times)


def build_hir_lookup(
    run: RunPaths,
    data: str | Path,
    graph: TemporalGraph,
    *,
    times: Sequence[int] | None = None,
    node_types: Sequence[str] | None = None,
    codebooks: int = 8,
    codewords: int = 256,
    seed: int = 0,
    arrivals_every: int | None = DAY,
    max_arrivals: int | None = MAX_ARRIVALS,
    arrival_max_age: int | None = ARRIVAL_MAX_AGE,
    arrival_fresh_age: int | None = ARRIVAL_FRESH_AGE,
    arrival_types: Sequence[str] | None = None,
    creation_latency: int | None = 60,
    refresh: Refresh | str = DEFAULT_REFRESH,
    log: Callable[[str], None] | None = None,
) -> HirLookup:
    """Embed `node_types` at each refresh time with its run (one, or several: see the
    module docstring and `refresh`), the `arrival_types` created since at every
    `arrivals_every` seconds after it (at most `max_arrivals` times, evenly spaced where
    the span holds more; each the ones at most `arrival_max_age` seconds old, and those
    older than `arrival_fresh_age` only where their age doubles; None: at every one)
    and, each once, `creation_latency` seconds after its creation (a creation snapshot;
    None turns them off), and index the snapshots. `node_types` default to both ends of
    the exposure edge types (users and what they are shown), `arrival_types` to the
    exposed end (`DatasetManifest.exposed_types`)."""
    viewers, candidates = graph.manifest.exposed_types
    if node_types is None and not candidates:
        raise InputError(
            "the dataset declares no exposure edge type, so nothing says which node types "
            'are the users and which are ranked; declare one (role = "exposure")',
            file=graph.manifest.name,
        )
    node_types = [*viewers, *candidates] if node_types is None else list(node_types)
    arrival_types = candidates if arrival_types is None else arrival_types
    missing = [t for t in node_types if t not in graph.node_types]
    if missing:
        raise InputError(f"node types {missing} are not in the dataset {list(graph.node_types)}")
    refresh = Refresh.parse(refresh)
    ends = _run_ends(run, graph)
    full = sorted(int(t) for t in (times if times is not None else _default_times(ends, graph)))
    encoders = _pick_encoders(ends, full)
    if refresh is Refresh.SERVING:
        encoders = [encoders[0]] * len(full)
    snapshots = []
    arrivals = [t for t in arrival_types if t in node_types]
    embedders: dict[Path, Embedder] = {}  # one loaded run and dataset per run
    space: Space | None = None  # Refresh.ALIGNED: the first encoder's space
    stops = [*full[1:], graph.manifest.time.end]
    previous: Path | None = None
    for as_of, stop, encoder in zip(full, stops, encoders, strict=True):
        if encoder not in embedders:
            embedders[encoder] = Embedder(encoder, data, as_of)
        shared = embedders[encoder]
        base = embed_entities(
            encoder,
            data,
            as_of,
            node_types=list(node_types),
            codebooks=codebooks,
            codewords=codewords,
            seed=seed,
            embedder=shared,
        )
        if refresh is Refresh.ALIGNED:
            space = _space_for(space, base, previous, embedders, as_of, list(node_types))
            previous = encoder
        snapshots.append(base if space is None else space.apply(base))
        if log is not None:
            log(f"HIR snapshot as of {base.meta['as_of_iso']} (encoder {encoder.name})")
        refreshes = (
            arrival_times(as_of, stop, arrivals_every, max_arrivals)
            if arrivals_every and arrivals
            else []
        )
        arrived = [
            embed_arrivals(
                encoder,
                data,
                base,
                when,
                node_types=arrivals,
                embedder=shared,
                max_age=arrival_max_age,
                last=None if arrival_fresh_age is None else last,
                fresh_age=arrival_fresh_age or 0,
            )
            for last, when in zip([as_of, *refreshes], refreshes, strict=False)
        ]
        if creation_latency is not None and arrivals:
            arrived.append(
                embed_on_creation(
                    encoder,
                    data,
                    base,
                    stop,
                    latency=creation_latency,
                    node_types=arrivals,
                    embedder=shared,
                )
            )
        arrived = [a if space is None else space.apply(a) for a in arrived if a is not None]
        snapshots += arrived
        if log is not None and arrived:
            count = sum(len(a.table) for a in arrived)
            log(f"  {len(arrived)} arrival snapshots after it ({count:,} rows)")
    return HirLookup(graph, snapshots)


def _space_for(
    space: Space | None,
    base: EntityEmbeddings,
    previous: Path | None,
    embedders: dict[Path, Embedder],
    as_of: int,
    node_types: list[str],
) -> Space:
    """The space `base` is aligned into: its own for the first snapshot; for a snapshot
    of a new encoder, a rotation fitted on the entities of `base` that the `previous`
    encoder embeds as of the same time (its read window ended before it)."""
    if space is None or previous is None:
        return Space.of(base, read_until(base.meta))
    if Path(base.meta["run"]) == previous.resolve():
        return space
    old = embedders[previous].at(as_of)
    nodes = old.entities(node_types)
    # both embed every entity of node_types that exists at as_of, in the same order
    z_old, _ = old.embed(nodes)
    if not np.array_equal(nodes, snapshot_nodes(base, old.graph)):
        raise RuntimeError("aligned snapshots disagree on the entities at one time")
    return space.refreshed(base.embeddings(), z_old, read_until(base.meta))
