"""Slices of the test examples that teams ask about before a launch.

"New" means new to the funnel: an entity's age is counted from its first **exposure**
(an edge of role `exposure`, e.g. `user -impression-> ad`), never from its first edge of
any kind. On a real log an advertiser appears through structural edges (it makes
products that users buy) long before its first ad is shown; counted from its first edge
it is never new, and the slices come out empty.

- cold-start ads: the ad's first exposure is at or after the cutoff (the test window's
  start);
- new ads: the ad's first exposure is less than `new_days` days before the request (its
  age at the request, not at the cutoff): the cold-start ads and those first shown
  shortly before the test window;
- cold-start advertisers, new advertisers: the same for the ad's owner as of the request
  (`OwnersAsOf`), whose first exposure is the first exposure of any ad it owned at that
  exposure's time (owners as of time, so an ad that moves to another owner does not
  carry its past into the new owner's age). With no owner type in the manifest (as on
  MovieLens-100K) each ad is its own owner: these would repeat the ad slices, and are
  left out;
- sparse users: fewer than `min_events` events (any type) before the cutoff;
- one slice per planted super-interest of the ad, when the dataset has a `truth/` folder
  (synthetic worlds do; only evaluation ever reads it).

A request at `t` is in a slice by edges before `t` only: an exposure at or after `t`
only moves a first exposure that is already at or after `t`, which counts as new either
way, and owners are read from structural edges before `t` (`OwnersAsOf`).
`slice_rules` states each rule in words for the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf
from hir_sdk.schema.columns import as_string, listed, read_table, refuse_rows, require_columns
from hir_sdk.schema.manifest import DAY

_LATE = np.iinfo(np.int64).max
COLD_ADS, COLD_OWNERS = "cold-start ads", "cold-start advertisers"


def new_ads_name(new_days: int) -> str:
    return f"new ads (first exposure < {new_days} days before the request)"


def new_owners_name(new_days: int) -> str:
    return f"new advertisers (first exposure < {new_days} days before the request)"


def sparse_name(min_events: int) -> str:
    return f"sparse users (< {min_events} events before cutoff)"


def _exposures(graph: TemporalGraph) -> tuple[np.ndarray, np.ndarray]:
    """`(ad, ts)` of every exposure edge, in time order."""
    mask = np.isin(graph.etype, graph.role_codes("exposure"))
    return graph.dst[mask], graph.ts[mask]


def _first_by(node: np.ndarray, ts: np.ndarray, num_nodes: int) -> np.ndarray:
    out = np.full(num_nodes, _LATE, dtype=np.int64)
    np.minimum.at(out, node, ts)
    return out


def first_exposure(graph: TemporalGraph) -> np.ndarray:
    """(N,) time of each node's first exposure as the exposed end (the ad), or int64 max."""
    ad, ts = _exposures(graph)
    return _first_by(ad, ts, graph.num_nodes)


def owner_first_exposure(graph: TemporalGraph, owners: OwnersAsOf) -> np.ndarray:
    """(N,) time of each owner's first exposure: of any ad it owned at that exposure's
    time; int64 max for nodes never exposed through an ad they owned."""
    ad, ts = _exposures(graph)
    owner = owners.at(ad, ts)
    known = owner != NO_OWNER
    return _first_by(owner[known], ts[known], graph.num_nodes)


@dataclass(frozen=True)
class PlantedInterests:
    """Each node's planted super-interest, read from a truth folder: its position in
    `names` (-1 for a node the truth does not list)."""

    code: np.ndarray  # (N,) int64
    names: tuple[str, ...]  # by super-interest id, ascending


def planted_interests(graph: TemporalGraph, truth: Path) -> PlantedInterests | None:
    """The planted super-interests of `graph`'s ads from the truth folder `truth`, or
    None when it has no taxonomy and entities or lists no ad. Read before any model is
    fitted, so that a truth folder that cannot be used stops the A/B before its work.

    The ids in the `super` columns are taken as given (3, 7, 12 as well as 0, 1, 2):
    each is mapped to its `super_name` through the taxonomy, never used as a position.
    Ids that cannot be mapped raise `InputError` naming the file, the column and the
    offending rows: a null id, an entity's id that the taxonomy lacks, an id with two
    names, or a name given to two ids (their slices would share one label)."""
    entities, taxonomy = truth / "entities.parquet", truth / "taxonomy.parquet"
    if not (entities.exists() and taxonomy.exists()):
        return None
    ids, names = _super_names(taxonomy)
    table = read_table(entities, ("node_type",))
    require_columns(table, ["node_type", "node_id", "super"], entities)
    ad_rows = table.filter(as_string(table, "node_type", entities) == "ad")
    if ad_rows.height == 0 or "ad" not in graph.node_types:
        return None
    _integer_ids(ad_rows, entities)
    refuse_rows(
        f"super-interest ids that {taxonomy.name} does not name (it names {listed(ids)})",
        ad_rows,
        ~ad_rows["super"].is_in(ids),
        file=entities,
        column="super",
        show=["node_type", "node_id", "super"],
    )
    try:
        index = graph.index("ad", ad_rows["node_id"].to_numpy())
    except InputError as err:
        problem = f"{err.problem}: the truth lists ads that the dataset does not have"
        raise InputError(problem, file=entities, column="node_id") from None
    code = np.full(graph.num_nodes, -1, dtype=np.int64)
    code[index] = np.searchsorted(np.asarray(ids), ad_rows["super"].to_numpy())
    return PlantedInterests(code, tuple(names))


def _super_names(taxonomy: Path) -> tuple[list[int], list[str]]:
    """The taxonomy's super-interest ids, sorted, and the name of each."""
    table = read_table(taxonomy)
    require_columns(table, ["super", "super_name"], taxonomy)
    _integer_ids(table, taxonomy)
    as_string(table, "super_name", taxonomy)
    pairs = table.select("super", "super_name").unique(["super", "super_name"])
    for column, other, problem in (
        ("super", "super_name", "super-interest ids with more than one name (a slice has one)"),
        ("super_name", "super", "names of more than one super-interest id (one slice each)"),
    ):
        shared = pairs.filter(pl.col(column).is_duplicated())[column]
        refuse_rows(
            problem,
            table,
            table[column].is_in(shared.implode()),
            file=taxonomy,
            column=other,
            show=["super", "super_name"],
        )
    pairs = pairs.sort("super")
    return pairs["super"].to_list(), pairs["super_name"].to_list()


def _integer_ids(table: pl.DataFrame, file: Path) -> None:
    """The `super` column of a truth table holds integer ids, none null."""
    if not table["super"].dtype.is_integer():
        raise InputError(
            f"super-interest ids must be integers, found {table['super'].dtype}",
            file=file,
            column="super",
        )
    refuse_rows(
        "null super-interest ids",
        table,
        table["super"].is_null(),
        file=file,
        column="super",
        show=["super"],
    )


def _has_owner_type(graph: TemporalGraph) -> bool:
    return graph.manifest.owner_type is not None


def slice_rules(
    graph: TemporalGraph, *, min_events: int = 5, new_days: int = 14, planted: bool = False
) -> dict[str, str]:
    """Slice name -> its rule in words, for the slices `test_slices` returns on `graph`
    (super-interest slices, with `planted` truth, under one entry), so the report says
    how each is defined."""
    first = "first exposure (an edge of role exposure)"
    rules = {
        COLD_ADS: f"the ad's {first} is at or after the test start",
        new_ads_name(new_days): f"the ad's {first} is less than {new_days} days before the "
        "request (its age at the request)",
    }
    if _has_owner_type(graph):
        owner = graph.manifest.owner_type
        whose = (
            f"the ad's {owner} (as of the request); {_article(owner)} {owner}'s first exposure "
            "is the first exposure of any ad it owned at that exposure's time"
        )
        rules[COLD_OWNERS] = f"{whose}, at or after the test start"
        rules[new_owners_name(new_days)] = f"{whose}, less than {new_days} days before the request"
    else:
        rules["advertisers"] = (
            "no owner type in the manifest: each ad is its own owner, so the advertiser "
            "slices would equal the ad slices and are left out"
        )
    rules[sparse_name(min_events)] = (
        f"the user has fewer than {min_events} edges of any type before the test start"
    )
    if planted:
        rules["super-interest: ..."] = "the ad's planted super-interest (synthetic worlds only)"
    return rules


def test_slices(
    graph: TemporalGraph,
    user: np.ndarray,
    ad: np.ndarray,
    owner: np.ndarray,
    ts: np.ndarray,
    *,
    cutoff: int,
    min_events: int = 5,
    new_days: int = 14,
    planted: PlantedInterests | None = None,
    owners: OwnersAsOf | None = None,
) -> dict[str, np.ndarray]:
    """Name -> boolean mask over the examples (`ts`: each example's request time; `owner`:
    each ad's owner as of it, from `owners`, built here when not given), with one slice
    per `planted` super-interest, labelled with its name."""
    if new_days < 1:
        raise ValueError(f"test_slices: new_days must be >= 1, got {new_days}")
    ts = np.asarray(ts, dtype=np.int64)
    recent = ts - new_days * DAY
    ad_first = first_exposure(graph)[ad]
    slices = {COLD_ADS: ad_first >= cutoff, new_ads_name(new_days): ad_first > recent}
    if _has_owner_type(graph):
        owned = owner >= 0  # an ad without an owner is in neither advertiser slice
        first = owner_first_exposure(graph, owners if owners is not None else OwnersAsOf(graph))
        owner_first = np.where(owned, first[np.maximum(owner, 0)], _LATE)
        slices[COLD_OWNERS] = owned & (owner_first >= cutoff)
        slices[new_owners_name(new_days)] = owned & (owner_first > recent)
    slices[sparse_name(min_events)] = graph.at(cutoff).degree()[user] < min_events
    if planted is not None:
        codes = planted.code[ad]
        for code, name in enumerate(planted.names):
            slices[f"super-interest: {name}"] = codes == code
    return slices


def _article(word: str) -> str:
    """'a' or 'an' before `word` in a slice's rule, by its first letter."""
    return "an" if word[:1].lower() in "aeiou" else "a"
