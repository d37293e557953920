"""HIR snapshots for the A/B: a trained encoder run embeds the entities at a few refresh
times, and the rankers read them as of each example's request time (`HirLookup`).

Default refresh times: the end of the encoder's training window (`trained_until`), the
validation start and the test start. Each snapshot only sees edges before its time, and
its BoM codebooks are fitted on that snapshot alone, so nothing later leaks in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import embed_entities
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.training.as_of import trained_until
from hir_sdk.training.config import load_config

DEFAULT_TYPES = ("user", "ad")


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
    log: Callable[[str], None] | None = None,
) -> HirLookup:
    """Embed `node_types` with the run at each refresh time and index the snapshots."""
    missing = [t for t in node_types if t not in graph.node_types]
    if missing:
        raise InputError(f"node types {missing} are not in the dataset {list(graph.node_types)}")
    snapshots = []
    for as_of in times if times is not None else snapshot_times(run, graph):
        snapshots.append(
            embed_entities(
                run,
                data,
                int(as_of),
                node_types=list(node_types),
                codebooks=codebooks,
                codewords=codewords,
                seed=seed,
            )
        )
        if log is not None:
            log(f"HIR snapshot as of {snapshots[-1].meta['as_of_iso']}")
    return HirLookup(graph, snapshots)
