"""Assemble the synthetic ads world into the input contract, plus its hidden truth.

```
OUT/
  manifest.toml  nodes.parquet  edges.parquet  content.parquet
  truth/         taxonomy.parquet  entities.parquet  users.parquet   (never read by training)
                 [text_leaves.parquet: content_reveal < 1] [interest_moves.parquet: drift > 0]
```
Same config and seed give byte-identical files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hir_sdk.errors import InputError
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.schema.dataset import CONTENT_FILE, EDGES_FILE, NODES_FILE
from hir_sdk.schema.manifest import MANIFEST_FILE, DatasetManifest, EdgeTypeSpec, TimeSplits
from hir_sdk.synth.config import SynthConfig
from hir_sdk.synth.content import ad_texts, advertiser_texts, brand_names, product_texts
from hir_sdk.synth.drift import InterestMoves, make_moves
from hir_sdk.synth.events import EdgeBlock, make_funnel, make_impressions, make_structure
from hir_sdk.synth.population import Advertisers, Catalogue, Users, make_population
from hir_sdk.synth.reveal import TextLeaves, text_leaves
from hir_sdk.synth.taxonomy import leaf_at, leaf_paths, mid_at, super_at

NODE_TYPES = ("user", "ad", "advertiser", "campaign", "product", "pixel")
EDGE_TYPES = (
    EdgeTypeSpec("user", "impression", "ad", "exposure", 14.0),
    EdgeTypeSpec("user", "click", "ad", "click", 14.0),
    EdgeTypeSpec("user", "add_to_cart", "product", "engagement", 7.0),
    EdgeTypeSpec("user", "purchase", "product", "conversion", 30.0),
    EdgeTypeSpec("user", "pixel_fire", "pixel", "conversion", 30.0),
    EdgeTypeSpec("advertiser", "creates", "campaign", "structural", 365.0),
    EdgeTypeSpec("campaign", "contains", "ad", "structural", 365.0),
    EdgeTypeSpec("ad", "promotes", "product", "structural", 365.0),
    EdgeTypeSpec("advertiser", "sells", "product", "structural", 365.0),
    EdgeTypeSpec("advertiser", "owns", "pixel", "structural", 365.0),
)
TRUTH_DIR = "truth"
_PARQUET = {"compression": "zstd", "compression_level": 3}


@dataclass(frozen=True)
class World:
    """The generated tables (arrow) and the hidden truth, before anything is written."""

    manifest: DatasetManifest
    nodes: pa.Table
    edges: pa.Table
    content: pa.Table
    truth: dict[str, pa.Table]


def world_manifest(cfg: SynthConfig) -> DatasetManifest:
    return DatasetManifest(
        name=f"synthetic-{cfg.scale}",
        node_types=NODE_TYPES,
        edge_types=EDGE_TYPES,
        time=TimeSplits(cfg.start, cfg.validation_start, cfg.test_start, cfg.end),
        attribution_window_days=cfg.attribution_window_days,
        owner_type="advertiser",
    )


def _dictionary(codes: np.ndarray, names: tuple[str, ...] | list[str]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names))


def _sizes(adv: Advertisers, cat: Catalogue, users: Users) -> dict[str, int]:
    return {
        "user": len(users.created),
        "ad": len(cat.ad_adv),
        "advertiser": len(adv.leaf),
        "campaign": len(cat.campaign_adv),
        "product": len(cat.product_adv),
        "pixel": len(cat.pixel_adv),
    }


def _nodes_table(adv: Advertisers, cat: Catalogue, users: Users) -> pa.Table:
    sizes = _sizes(adv, cat, users)
    created = {
        "user": users.created,
        "ad": cat.ad_created,
        "advertiser": adv.created,
        "campaign": cat.campaign_created,
        "product": cat.product_created,
        "pixel": cat.pixel_created,
    }
    type_code = np.concatenate([np.full(sizes[t], i) for i, t in enumerate(NODE_TYPES)])
    total = len(type_code)
    price = np.full(total, np.nan)
    bid = np.full(total, np.nan)
    offsets = np.cumsum([0, *[sizes[t] for t in NODE_TYPES]])
    ad_at, product_at = NODE_TYPES.index("ad"), NODE_TYPES.index("product")
    bid[offsets[ad_at] : offsets[ad_at + 1]] = cat.ad_bid
    price[offsets[product_at] : offsets[product_at + 1]] = cat.product_price
    return pa.table(
        {
            "node_type": _dictionary(type_code, NODE_TYPES),
            "node_id": np.concatenate([np.arange(sizes[t]) for t in NODE_TYPES]),
            "created_ts": np.concatenate([created[t] for t in NODE_TYPES]).astype(np.int64),
            "price": pa.array(price, from_pandas=True),
            "bid": pa.array(bid, from_pandas=True),
        }
    )


def _edges_table(blocks: list[EdgeBlock]) -> pa.Table:
    specs = {spec.rel: spec for spec in EDGE_TYPES}
    rels = [spec.rel for spec in EDGE_TYPES]
    code = np.concatenate([np.full(len(b.ts), rels.index(b.rel)) for b in blocks])
    ts = np.concatenate([b.ts for b in blocks]).astype(np.int64)
    order = np.argsort(ts, kind="stable")
    code = code[order]
    src_type = np.array([NODE_TYPES.index(specs[r].src) for r in rels])[code]
    dst_type = np.array([NODE_TYPES.index(specs[r].dst) for r in rels])[code]
    weight = np.concatenate([np.ones(len(b.ts)) if b.weight is None else b.weight for b in blocks])
    return pa.table(
        {
            "src_type": _dictionary(src_type, NODE_TYPES),
            "src_id": np.concatenate([b.src for b in blocks]).astype(np.int64)[order],
            "dst_type": _dictionary(dst_type, NODE_TYPES),
            "dst_id": np.concatenate([b.dst for b in blocks]).astype(np.int64)[order],
            "edge_type": _dictionary(code, rels),
            "ts": ts[order],
            "weight": weight[order],
        }
    )


def _text_leaves(
    rng: np.random.Generator, reveal: float, adv: Advertisers, cat: Catalogue
) -> dict[str, TextLeaves]:
    """The leaves each advertiser's, product's and ad's text is drawn from."""
    return {
        "advertiser": text_leaves(rng, reveal, adv.leaf, adv.leaf2),
        "product": text_leaves(rng, reveal, cat.product_leaf),
        "ad": text_leaves(rng, reveal, cat.ad_leaf),
    }


def _content_table(
    rng: np.random.Generator, adv: Advertisers, cat: Catalogue, shown: dict[str, TextLeaves]
) -> pa.Table:
    brands = brand_names(rng, len(adv.leaf))
    parts = [
        (
            "advertiser",
            advertiser_texts(rng, brands, shown["advertiser"].leaf, shown["advertiser"].leaf2),
        ),
        ("product", product_texts(rng, brands, cat.product_adv, shown["product"].leaf)),
        ("ad", ad_texts(rng, brands, cat.ad_adv, shown["ad"].leaf)),
    ]
    codes = np.concatenate([np.full(len(t), NODE_TYPES.index(k)) for k, t in parts])
    return pa.table(
        {
            "node_type": _dictionary(codes, NODE_TYPES),
            "node_id": np.concatenate([np.arange(len(t)) for _, t in parts]),
            "text": pa.array([text for _, texts in parts for text in texts]),
        }
    )


def _text_leaves_table(shown: dict[str, TextLeaves]) -> pa.Table:
    kinds = list(shown)
    codes = np.concatenate([np.full(len(shown[k].leaf), NODE_TYPES.index(k)) for k in kinds])
    return pa.table(
        {
            "node_type": _dictionary(codes, NODE_TYPES),
            "node_id": np.concatenate([np.arange(len(shown[k].leaf)) for k in kinds]),
            "text_leaf": np.concatenate([shown[k].leaf for k in kinds]),
            "text_leaf2": np.concatenate([shown[k].leaf2 for k in kinds]),
            "reveals": np.concatenate([shown[k].reveals for k in kinds]),
        }
    )


def _moves_table(moves: InterestMoves) -> pa.Table:
    return pa.table(
        {
            "node_id": moves.user,
            "slot": moves.slot,
            "ts": moves.ts,
            "leaf_from": moves.leaf_from,
            "leaf_to": moves.leaf_to,
        }
    )


def _truth_tables(adv: Advertisers, cat: Catalogue, users: Users) -> dict[str, pa.Table]:
    paths = np.array(leaf_paths())
    leaves = np.arange(len(paths))
    mids = paths[:, 0] * 4 + paths[:, 1]
    taxonomy = pa.table(
        {
            "leaf": leaves,
            "mid": mids,
            "super": paths[:, 0],
            "leaf_name": [leaf_at(i).name for i in leaves],
            "mid_name": [mid_at(i).name for i in mids],
            "super_name": [super_at(i).name for i in paths[:, 0]],
        }
    )
    owners = {
        "advertiser": (adv.leaf, adv.leaf2),
        "campaign": (adv.leaf[cat.campaign_adv], adv.leaf2[cat.campaign_adv]),
        "ad": (cat.ad_leaf, np.full(len(cat.ad_leaf), -1)),
        "product": (cat.product_leaf, np.full(len(cat.product_leaf), -1)),
        "pixel": (adv.leaf[cat.pixel_adv], adv.leaf2[cat.pixel_adv]),
    }
    kinds = list(owners)
    entity_type = np.concatenate([np.full(len(owners[k][0]), NODE_TYPES.index(k)) for k in kinds])
    leaf = np.concatenate([owners[k][0] for k in kinds])
    cold = np.concatenate(
        [
            adv.cold_start,
            adv.cold_start[cat.campaign_adv],
            adv.cold_start[cat.ad_adv],
            adv.cold_start[cat.product_adv],
            adv.cold_start[cat.pixel_adv],
        ]
    )
    entities = pa.table(
        {
            "node_type": _dictionary(entity_type, NODE_TYPES),
            "node_id": np.concatenate([np.arange(len(owners[k][0])) for k in kinds]),
            "leaf": leaf,
            "leaf2": np.concatenate([owners[k][1] for k in kinds]),
            "mid": mids[leaf],
            "super": paths[leaf, 0],
            "cold_start": cold,
        }
    )
    n, slots = users.weight.shape
    used = users.weight.reshape(-1) > 0
    user_truth = pa.table(
        {
            "node_id": np.repeat(np.arange(n), slots)[used],
            "slot": np.tile(np.arange(slots), n)[used],
            "leaf_start": users.leaf_start.reshape(-1)[used],
            "leaf_end": users.leaf_end.reshape(-1)[used],
            "weight": users.weight.reshape(-1)[used],
        }
    )
    return {"taxonomy": taxonomy, "entities": entities, "users": user_truth}


def generate_world(cfg: SynthConfig, seed: int) -> World:
    """Generate every table in memory; deterministic in (`cfg`, `seed`), a non-negative
    integer (numpy's seed sequences take no negative seeds)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}")
    # one stream per concern; the reveal and drift streams are drawn from only when their
    # knob is off its default, so the default world is the one from before the knobs
    pop_rng, event_rng, text_rng, reveal_rng, drift_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )
    adv, cat, users = make_population(pop_rng, cfg)
    moves = make_moves(drift_rng, cfg, users)
    impressions = make_impressions(event_rng, cfg, users, cat, moves)
    blocks = [
        EdgeBlock("impression", impressions.user, impressions.ad, impressions.ts),
        *make_funnel(event_rng, cfg, adv, cat, users, impressions),
        *make_structure(cfg, cat),
    ]
    shown = _text_leaves(reveal_rng, cfg.content_reveal, adv, cat)
    truth = _truth_tables(adv, cat, users)
    if cfg.content_reveal < 1.0:
        truth["text_leaves"] = _text_leaves_table(shown)
    if cfg.interest_drift > 0.0:
        truth["interest_moves"] = _moves_table(moves)
    return World(
        manifest=world_manifest(cfg),
        nodes=_nodes_table(adv, cat, users),
        edges=_edges_table(blocks),
        content=_content_table(text_rng, adv, cat, shown),
        truth=truth,
    )


def write_world(world: World, out: str | Path, *, overwrite: bool = False) -> Path:
    """Write the world atomically: `out` appears complete or not at all. `overwrite`
    replaces only a dataset folder that hir-sdk wrote (see `hir_sdk.io.output_folder`)."""
    with atomic_output_dir(out, kind="dataset", overwrite=overwrite) as tmp:
        (tmp / MANIFEST_FILE).write_text(world.manifest.to_toml(), encoding="utf-8")
        pq.write_table(world.nodes, tmp / NODES_FILE, **_PARQUET)
        pq.write_table(world.edges, tmp / EDGES_FILE, **_PARQUET)
        pq.write_table(world.content, tmp / CONTENT_FILE, **_PARQUET)
        if world.truth:  # synthetic worlds only: the planted hierarchy
            (tmp / TRUTH_DIR).mkdir()
        for name, table in world.truth.items():
            pq.write_table(table, tmp / TRUTH_DIR / f"{name}.parquet", **_PARQUET)
    return Path(out)
