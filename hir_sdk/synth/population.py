"""Entities of the synthetic world and their planted interests (the hidden truth).

Advertisers serve one or two leaf interests and own campaigns, ads, a product catalogue
and usually a pixel. Users hold a sparse mixture over up to four leaf "slots" in one or two
super-interests; one slot drifts slowly to another leaf over the 60 days. Activity is
power-law. Everything is vectorised numpy drawn from one `Generator`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.schema.manifest import DAY
from hir_sdk.synth.config import SynthConfig
from hir_sdk.synth.taxonomy import LEAVES_PER_MID, MIDS_PER_SUPER, N_LEAVES, N_SUPERS

SLOTS = 4  # leaf slots in a user's interest mixture
LEAVES_PER_SUPER = MIDS_PER_SUPER * LEAVES_PER_MID


def mid_of(leaf: np.ndarray) -> np.ndarray:
    return leaf // LEAVES_PER_MID


def super_of(leaf: np.ndarray) -> np.ndarray:
    return leaf // LEAVES_PER_SUPER


@dataclass(frozen=True)
class Advertisers:
    leaf: np.ndarray  # (A,) primary leaf
    leaf2: np.ndarray  # (A,) second leaf or -1
    created: np.ndarray  # (A,) seconds; before the world start for established advertisers
    cold_start: np.ndarray  # (A,) bool: launched during the last weeks
    has_pixel: np.ndarray  # (A,) bool


@dataclass(frozen=True)
class Catalogue:
    """Campaigns, products, ads and pixels, each row pointing at its advertiser."""

    campaign_adv: np.ndarray  # (C,)
    campaign_created: np.ndarray  # (C,)
    product_adv: np.ndarray  # (P,)
    product_leaf: np.ndarray  # (P,)
    product_created: np.ndarray  # (P,)
    product_price: np.ndarray  # (P,) float
    ad_campaign: np.ndarray  # (D,)
    ad_adv: np.ndarray  # (D,)
    ad_product: np.ndarray  # (D,)
    ad_leaf: np.ndarray  # (D,) the promoted product's leaf
    ad_created: np.ndarray  # (D,)
    ad_quality: np.ndarray  # (D,) multiplies the click probability, mean ~1
    ad_bid: np.ndarray  # (D,) float
    pixel_adv: np.ndarray  # (X,)
    pixel_created: np.ndarray  # (X,)
    adv_pixel: np.ndarray  # (A,) pixel index of each advertiser or -1


@dataclass(frozen=True)
class Users:
    created: np.ndarray  # (U,)
    leaf_start: np.ndarray  # (U, SLOTS) leaf per slot at the world start
    leaf_end: np.ndarray  # (U, SLOTS) leaf per slot at the world end (one slot drifts)
    weight: np.ndarray  # (U, SLOTS) slot weights, 0 for unused slots, rows sum to 1
    activity: np.ndarray  # (U,) number of impressions
    propensity: np.ndarray  # (U,) multiplies the click probability, mean ~1


def _leaf_popularity(rng: np.random.Generator) -> np.ndarray:
    weights = rng.gamma(2.0, 1.0, N_LEAVES)
    return weights / weights.sum()


def related_leaf(rng: np.random.Generator, leaf: np.ndarray) -> np.ndarray:
    """A different leaf: a sibling in the same mid (70%) or another in the same super."""
    sibling = (
        mid_of(leaf) * LEAVES_PER_MID
        + (leaf % LEAVES_PER_MID + rng.integers(1, LEAVES_PER_MID, leaf.shape)) % LEAVES_PER_MID
    )
    cousin = (
        super_of(leaf) * LEAVES_PER_SUPER
        + (leaf % LEAVES_PER_SUPER + rng.integers(1, LEAVES_PER_SUPER, leaf.shape))
        % LEAVES_PER_SUPER
    )
    return np.where(rng.random(leaf.shape) < 0.7, sibling, cousin)


def make_advertisers(
    rng: np.random.Generator, cfg: SynthConfig, popularity: np.ndarray
) -> Advertisers:
    n = cfg.n_advertisers
    leaf = rng.choice(N_LEAVES, size=n, p=popularity)
    leaf2 = np.where(rng.random(n) < 0.4, related_leaf(rng, leaf), -1)
    cold = rng.random(n) < cfg.cold_start_share
    established = cfg.start - rng.integers(DAY, 365 * DAY, n)
    launch_lo = cfg.end - cfg.cold_start_days * DAY
    launched = rng.integers(launch_lo, cfg.end - 3 * DAY, n)
    created = np.where(cold, launched, established)
    return Advertisers(
        leaf=leaf, leaf2=leaf2, created=created, cold_start=cold, has_pixel=rng.random(n) < 0.8
    )


def _children(
    rng: np.random.Generator,
    parent_created: np.ndarray,
    counts: np.ndarray,
    cfg: SynthConfig,
    late_share: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Parent index and creation time of `counts[i]` children per parent: at the parent's
    creation, or (with `late_share`) later during the world."""
    parent = np.repeat(np.arange(len(counts)), counts)
    born = parent_created[parent]
    late_from = np.maximum(born, cfg.start)
    late = late_from + (rng.random(len(parent)) * (cfg.end - 2 * DAY - late_from)).astype(np.int64)
    settled = born + rng.integers(0, DAY, len(parent))
    created = np.where((rng.random(len(parent)) < late_share) & (late > born), late, settled)
    return parent, created


def make_catalogue(rng: np.random.Generator, cfg: SynthConfig, adv: Advertisers) -> Catalogue:
    n = len(adv.leaf)
    campaign_adv, campaign_created = _children(
        rng, adv.created, 1 + rng.poisson(1.5, n), cfg, late_share=0.3
    )
    product_adv, product_created = _children(
        rng, adv.created, 2 + rng.poisson(5.0, n), cfg, late_share=0.15
    )
    use_second = (adv.leaf2[product_adv] >= 0) & (rng.random(len(product_adv)) < 0.4)
    product_leaf = np.where(use_second, adv.leaf2[product_adv], adv.leaf[product_adv])
    product_price = np.round(np.exp(rng.normal(3.5, 0.9, len(product_adv))), 2)
    ads_per_campaign = 1 + rng.poisson(2.0, len(campaign_adv))
    ad_campaign, ad_created = _children(
        rng, campaign_created, ads_per_campaign, cfg, late_share=0.2
    )
    ad_adv = campaign_adv[ad_campaign]
    # each ad promotes one product of its advertiser, created no later than the ad
    first_product = np.searchsorted(product_adv, np.arange(n))
    n_products = np.bincount(product_adv, minlength=n)
    ad_product = first_product[ad_adv] + (rng.random(len(ad_adv)) * n_products[ad_adv]).astype(
        np.int64
    )
    ad_created = np.maximum(ad_created, product_created[ad_product])
    pixel_owner = np.flatnonzero(adv.has_pixel)
    adv_pixel = np.full(n, -1, dtype=np.int64)
    adv_pixel[pixel_owner] = np.arange(len(pixel_owner))
    return Catalogue(
        campaign_adv=campaign_adv,
        campaign_created=campaign_created,
        product_adv=product_adv,
        product_leaf=product_leaf,
        product_created=product_created,
        product_price=product_price,
        ad_campaign=ad_campaign,
        ad_adv=ad_adv,
        ad_product=ad_product,
        ad_leaf=product_leaf[ad_product],
        ad_created=ad_created,
        ad_quality=rng.lognormal(-0.125, 0.5, len(ad_adv)),
        ad_bid=np.round(rng.lognormal(0.0, 0.6, len(ad_adv)), 3),
        pixel_adv=pixel_owner,
        pixel_created=adv.created[pixel_owner] + rng.integers(0, DAY, len(pixel_owner)),
        adv_pixel=adv_pixel,
    )


def make_users(rng: np.random.Generator, cfg: SynthConfig, popularity: np.ndarray) -> Users:
    n = cfg.n_users
    super_pop = popularity.reshape(N_SUPERS, LEAVES_PER_SUPER).sum(axis=1)
    first = rng.choice(N_SUPERS, size=n, p=super_pop)
    second = np.where(rng.random(n) < 0.4, (first + rng.integers(1, N_SUPERS, n)) % N_SUPERS, first)
    used = rng.integers(2, SLOTS + 1, n)  # 2..4 slots
    slot_super = np.where(np.arange(SLOTS)[None, :] % 2 == 0, first[:, None], second[:, None])
    # leaves cluster: slots draw mids mostly from the user's favourite mid of that super
    fav_mid = rng.integers(0, MIDS_PER_SUPER, (n, SLOTS))
    fav_mid[:, 2:] = np.where(rng.random((n, 2)) < 0.6, fav_mid[:, :2], fav_mid[:, 2:])
    leaf_start = (
        slot_super * LEAVES_PER_SUPER
        + fav_mid * LEAVES_PER_MID
        + rng.integers(0, LEAVES_PER_MID, (n, SLOTS))
    )
    weight = rng.dirichlet(np.ones(SLOTS), n) * (np.arange(SLOTS)[None, :] < used[:, None])
    weight /= weight.sum(axis=1, keepdims=True)
    drifting = (rng.random(n) * used).astype(np.int64)
    leaf_end = leaf_start.copy()
    rows = np.arange(n)
    leaf_end[rows, drifting] = related_leaf(rng, leaf_start[rows, drifting])
    joined_late = rng.random(n) < 0.15
    created = np.where(
        joined_late,
        cfg.start + rng.integers(0, cfg.end - cfg.start - 7 * DAY, n),
        cfg.start - rng.integers(DAY, 720 * DAY, n),
    )
    raw = rng.pareto(1.6, n) + 1.0  # power-law activity
    raw = np.minimum(raw, 200.0)
    activity = np.maximum(1, np.round(raw / raw.mean() * cfg.impressions_per_user)).astype(np.int64)
    return Users(
        created=created,
        leaf_start=leaf_start,
        leaf_end=leaf_end,
        weight=weight,
        activity=activity,
        propensity=rng.lognormal(-0.125, 0.5, n),
    )


def make_population(
    rng: np.random.Generator, cfg: SynthConfig
) -> tuple[Advertisers, Catalogue, Users]:
    popularity = _leaf_popularity(rng)
    adv = make_advertisers(rng, cfg, popularity)
    return adv, make_catalogue(rng, cfg, adv), make_users(rng, cfg, popularity)
