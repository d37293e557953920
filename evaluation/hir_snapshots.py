"""HIR snapshots for the A/B: a trained encoder run embeds the entities at a few refresh
times, and the rankers read them as of each example's request time (`HirLookup`).

Default refresh times: the end of the encoder's training window (`trained_until`), the
validation start and the test start. Each snapshot only sees edges before its time, and
its BoM codebooks are fitted on that snapshot alone, so nothing later leaks in.

Between full refreshes, arrival snapshots (`hir_sdk.interests.arrivals`) embed the ads
created since the last full snapshot (`arrival_types`), every `arrivals_every` seconds
(default a day; None turns them off), with that snapshot's quantizer. Without them an ad
launched after the test start would have no HIR features for the whole test window.
They run in every window alike, so rankers fit on the same kind of features they are
tested on. New users wait for the next full refresh: in the `small` world, features of
day-old users made the sparse-user slice worse, not better.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import embed_entities
from hir_sdk.interests.arrivals import arrival_times, embed_arrivals
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.training.as_of import trained_until
from hir_sdk.training.config import load_config
from hir_sdk.training.embedder import Embedder

DEFAULT_TYPES = ("user", "ad")
DAY = 86_400


def snapshot_times(run: str | Path, graph: TemporalGraph) -> list[int]:
    """The default refresh times for a run on a graph (see the module docstring)."""
    config_file = Path(run) / "config.toml"
    if not config_file.is_file():
        raise InputError("not a training run (no config.toml)", file=run)
    t = graph.manifest.time
    until = trained_until(load_config(config_file).train_until, t)
    return sorted({until, t.validation_start, t.test_start})


def build_hir_lookup(
    run: str | Path,
    data: str | Path,
    graph: TemporalGraph,
    *,
    times: Sequence[int] | None = None,
    node_types: Sequence[str] = DEFAULT_TYPES,
    codebooks: int = 8,
    codewords: int = 256,
    seed: int = 0,
    arrivals_every: int | None = DAY,
    arrival_types: Sequence[str] = ("ad",),
    log: Callable[[str], None] | None = None,
) -> HirLookup:
    """Embed `node_types` with the run at each refresh time, and the `arrival_types`
    created since at every `arrivals_every` seconds after it, and index the snapshots."""
    missing = [t for t in node_types if t not in graph.node_types]
    if missing:
        raise InputError(f"node types {missing} are not in the dataset {list(graph.node_types)}")
    full = sorted(int(t) for t in (times if times is not None else snapshot_times(run, graph)))
    snapshots = []
    arrivals = [t for t in arrival_types if t in node_types]
    # one loaded run and dataset for every refresh
    shared = Embedder(run, data, full[0]) if full else None
    for as_of, stop in zip(full, [*full[1:], graph.manifest.time.end], strict=True):
        base = embed_entities(
            run,
            data,
            as_of,
            node_types=list(node_types),
            codebooks=codebooks,
            codewords=codewords,
            seed=seed,
            embedder=shared,
        )
        snapshots.append(base)
        if log is not None:
            log(f"HIR snapshot as of {base.meta['as_of_iso']}")
        refreshes = (
            arrival_times(as_of, stop, arrivals_every) if arrivals_every and arrivals else []
        )
        arrived = [
            embed_arrivals(run, data, base, when, node_types=arrivals, embedder=shared)
            for when in refreshes
        ]
        arrived = [a for a in arrived if a is not None]
        snapshots += arrived
        if log is not None and refreshes:
            count = sum(len(a.table) for a in arrived)
            log(f"  {len(refreshes)} arrival refreshes after it ({count:,} rows)")
    return HirLookup(graph, snapshots)
