"""The funnel of timed, typed events: impression -> click -> add_to_cart -> purchase ->
pixel fire, plus structural edges between advertisers, campaigns, ads, products, pixels.

Ads are picked by a targeting system that follows the user's *current* interests only in
part (leaf, sibling leaf, same super-interest, or at random); each funnel step's
probability depends on how closely the ad's leaf matches the user's mixture at that time,
so conversions are rare and driven by fine-grained (leaf) match. With interest drift
(`hir_sdk.synth.drift`) the current interests include the slots' moves so far.
Conversions can land days or weeks after the exposure; events past the end of the world
are never written.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.schema.manifest import DAY
from hir_sdk.synth.config import SynthConfig
from hir_sdk.synth.drift import InterestMoves, apply_moves
from hir_sdk.synth.population import (
    LEAVES_PER_MID,
    LEAVES_PER_SUPER,
    SLOTS,
    Advertisers,
    Catalogue,
    Users,
    mid_of,
    super_of,
)

_KEY_SHIFT = np.int64(1) << np.int64(33)  # leaf * 2**33 + created seconds stays < 2**63


@dataclass(frozen=True)
class EdgeBlock:
    """Edges of one type: source and destination indices within their node types."""

    rel: str
    src: np.ndarray
    dst: np.ndarray
    ts: np.ndarray
    weight: np.ndarray | None = None


@dataclass(frozen=True)
class Impressions:
    user: np.ndarray
    ad: np.ndarray
    ts: np.ndarray
    match: np.ndarray  # 0 leaf, 1 mid, 2 super, 3 none


def _current_leaves(users: Users, user: np.ndarray, drift: np.ndarray) -> np.ndarray:
    """(n, SLOTS) leaves of each impression's user at its time; unused slots are -1."""
    leaves = np.where(drift[:, None], users.leaf_end[user], users.leaf_start[user])
    return np.where(users.weight[user] > 0, leaves, -1)


def _pick_ads(
    rng: np.random.Generator, cat: Catalogue, target: np.ndarray, ts: np.ndarray
) -> np.ndarray:
    """An ad created before `ts` in leaf `target` (uniform), or -1 where none exists yet;
    `target` -1 picks among all live ads."""
    order = np.lexsort((cat.ad_created, cat.ad_leaf))
    keys = cat.ad_leaf[order] * _KEY_SHIFT + cat.ad_created[order]
    by_created = np.argsort(cat.ad_created, kind="stable")
    created_sorted = cat.ad_created[by_created]
    u = rng.random(len(ts))
    picked = np.full(len(ts), -1, dtype=np.int64)
    leafy = target >= 0
    lo = np.searchsorted(keys, target[leafy] * _KEY_SHIFT, side="left")
    hi = np.searchsorted(keys, target[leafy] * _KEY_SHIFT + ts[leafy], side="left")
    live = hi > lo
    rows = np.flatnonzero(leafy)[live]
    picked[rows] = order[lo[live] + (u[rows] * (hi - lo)[live]).astype(np.int64)]
    rest = np.flatnonzero(picked < 0)
    count = np.searchsorted(created_sorted, ts[rest], side="left")
    ok = count > 0
    picked[rest[ok]] = by_created[(u[rest[ok]] * count[ok]).astype(np.int64)]
    return picked


def make_impressions(
    rng: np.random.Generator,
    cfg: SynthConfig,
    users: Users,
    cat: Catalogue,
    moves: InterestMoves | None = None,
) -> Impressions:
    user = np.repeat(np.arange(len(users.activity)), users.activity)
    n = len(user)
    lo = np.maximum(users.created[user], cfg.start)
    ts = lo + (rng.random(n) * (cfg.end - lo)).astype(np.int64)
    cum = np.cumsum(users.weight, axis=1)[user]
    slot = np.minimum((rng.random(n)[:, None] > cum).sum(axis=1), SLOTS - 1)
    drift = rng.random(n) < (ts - cfg.start) / (cfg.end - cfg.start)
    current = _current_leaves(users, user, drift)
    if moves is not None:
        current = apply_moves(moves, user, ts, current)
    leaf = current[np.arange(n), slot]
    t = cfg.targeting
    mode = np.searchsorted(
        np.cumsum([t.leaf, t.sibling, t.same_super]), rng.random(n), side="right"
    )
    sibling = mid_of(leaf) * LEAVES_PER_MID + rng.integers(0, LEAVES_PER_MID, n)
    cousin = super_of(leaf) * LEAVES_PER_SUPER + rng.integers(0, LEAVES_PER_SUPER, n)
    target = np.select([mode == 0, mode == 1, mode == 2], [leaf, sibling, cousin], -1)
    ad = _pick_ads(rng, cat, target, ts)
    keep = ad >= 0
    user, ad, ts, current = user[keep], ad[keep], ts[keep], current[keep]
    ad_leaf = cat.ad_leaf[ad][:, None]
    used = current >= 0
    match = np.select(
        [
            (current == ad_leaf).any(axis=1),
            ((mid_of(current) == mid_of(ad_leaf)) & used).any(axis=1),
            ((super_of(current) == super_of(ad_leaf)) & used).any(axis=1),
        ],
        [0, 1, 2],
        3,
    )
    return Impressions(user=user, ad=ad, ts=ts, match=match)


def _delay(rng: np.random.Generator, median_s: float, sigma: float, n: int) -> np.ndarray:
    return np.maximum(1, rng.lognormal(np.log(median_s), sigma, n)).astype(np.int64)


def make_funnel(
    rng: np.random.Generator,
    cfg: SynthConfig,
    adv: Advertisers,
    cat: Catalogue,
    users: Users,
    imp: Impressions,
) -> list[EdgeBlock]:
    """Click, add-to-cart, purchase and pixel-fire edges following the impressions."""
    rates = cfg.funnel
    n = len(imp.ts)
    p_click = (
        np.asarray(rates.click)[imp.match] * cat.ad_quality[imp.ad] * users.propensity[imp.user]
    )
    clicked = np.flatnonzero(rng.random(n) < np.minimum(p_click, 1.0))
    click_ts = imp.ts[clicked] + _delay(rng, 30.0, 1.0, len(clicked))
    match = imp.match[clicked]
    carted = rng.random(len(clicked)) < np.asarray(rates.add_to_cart)[match]
    cart_rows = clicked[carted]
    cart_ts = click_ts[carted] + _delay(rng, 1200.0, 1.5, len(cart_rows))
    ad = imp.ad[cart_rows]
    advertiser = cat.ad_adv[ad]
    first = np.searchsorted(cat.product_adv, advertiser)
    count = np.bincount(cat.product_adv, minlength=len(adv.leaf))[advertiser]
    other = first + (rng.random(len(ad)) * count).astype(np.int64)
    live_other = cat.product_created[other] < cart_ts
    product = np.where(
        (rng.random(len(ad)) < rates.other_product) & live_other, other, cat.ad_product[ad]
    )
    bought = rng.random(len(cart_rows)) < np.asarray(rates.purchase)[match[carted]]
    buy_ts = cart_ts[bought] + _delay(rng, float(DAY), 1.3, int(bought.sum()))
    buy_user, buy_product = imp.user[cart_rows][bought], product[bought]
    pixel = cat.adv_pixel[advertiser[bought]]
    fired = (pixel >= 0) & (rng.random(len(pixel)) < rates.pixel_fire)
    fire_ts = buy_ts[fired] + rng.integers(1, 60, int(fired.sum()))
    price = cat.product_price[buy_product]
    blocks = [
        EdgeBlock("click", imp.user[clicked], imp.ad[clicked], click_ts),
        EdgeBlock("add_to_cart", imp.user[cart_rows], product, cart_ts),
        EdgeBlock("purchase", buy_user, buy_product, buy_ts, np.log1p(price)),
        EdgeBlock("pixel_fire", buy_user[fired], pixel[fired], fire_ts),
    ]
    return [_before(block, cfg.end) for block in blocks]


def _before(block: EdgeBlock, end: int) -> EdgeBlock:
    keep = block.ts < end
    weight = None if block.weight is None else block.weight[keep]
    return EdgeBlock(block.rel, block.src[keep], block.dst[keep], block.ts[keep], weight)


def make_structure(cfg: SynthConfig, cat: Catalogue) -> list[EdgeBlock]:
    """Structural edges, dated when the child entity is first seen in the log."""

    def seen(created: np.ndarray) -> np.ndarray:
        return np.maximum(created, cfg.start)

    n_campaigns, n_products = len(cat.campaign_adv), len(cat.product_adv)
    n_ads, n_pixels = len(cat.ad_adv), len(cat.pixel_adv)
    return [
        EdgeBlock("creates", cat.campaign_adv, np.arange(n_campaigns), seen(cat.campaign_created)),
        EdgeBlock("contains", cat.ad_campaign, np.arange(n_ads), seen(cat.ad_created)),
        EdgeBlock("promotes", np.arange(n_ads), cat.ad_product, seen(cat.ad_created)),
        EdgeBlock("sells", cat.product_adv, np.arange(n_products), seen(cat.product_created)),
        EdgeBlock("owns", cat.pixel_adv, np.arange(n_pixels), seen(cat.pixel_created)),
    ]
