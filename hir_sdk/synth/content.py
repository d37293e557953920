"""Content text for advertisers, products and ads, drawn from interest vocabularies.

Each word comes from the entity's own leaf most of the time, from a sibling leaf or a
random leaf otherwise (noise), and the taxonomy itself shares ambiguous words across
super-interests, so a language model recovers meaning only imperfectly. Brand names are
meaningless syllables; marketing filler carries no interest at all.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.synth.population import LEAVES_PER_MID, mid_of
from hir_sdk.synth.taxonomy import (
    BRAND_SYLLABLES,
    GENERIC_WORDS,
    N_LEAVES,
    PRODUCT_NOUNS,
    leaf_at,
    mid_at,
    super_at,
)

NOISE_SIBLING = 0.15
NOISE_RANDOM = 0.10


def brand_names(rng: np.random.Generator, n: int) -> list[str]:
    parts = rng.integers(0, len(BRAND_SYLLABLES), (n, 3))
    lengths = rng.integers(2, 4, n)
    return [
        "".join(BRAND_SYLLABLES[p] for p in row[:k]).capitalize()
        for row, k in zip(parts.tolist(), lengths.tolist(), strict=True)
    ]


class _Words:
    """Draws leaf words with sibling and random-leaf noise."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def leaf_words(self, leaf: int, k: int) -> list[str]:
        out = []
        for _ in range(k):
            r = self.rng.random()
            source = leaf
            if r < NOISE_RANDOM:
                source = int(self.rng.integers(0, N_LEAVES))
            elif r < NOISE_RANDOM + NOISE_SIBLING:
                source = int(
                    mid_of(np.int64(leaf)) * LEAVES_PER_MID + self.rng.integers(0, LEAVES_PER_MID)
                )
            words = leaf_at(source).words
            out.append(words[int(self.rng.integers(0, len(words)))])
        return out

    def one(self, words: tuple[str, ...]) -> str:
        return words[int(self.rng.integers(0, len(words)))]


def advertiser_texts(
    rng: np.random.Generator, brands: list[str], leaf: np.ndarray, leaf2: np.ndarray
) -> list[str]:
    draw = _Words(rng)
    texts = []
    for brand, a, b in zip(brands, leaf.tolist(), leaf2.tolist(), strict=True):
        words = draw.leaf_words(a, 3) + (draw.leaf_words(b, 2) if b >= 0 else [])
        mid, sup = mid_at(a // LEAVES_PER_MID), super_at(a // (LEAVES_PER_MID * 4))
        texts.append(
            f"{brand}: {draw.one(sup.words)} and {draw.one(mid.words)} - "
            f"{', '.join(words)}. {draw.one(GENERIC_WORDS)}"
        )
    return texts


def product_texts(
    rng: np.random.Generator, brands: list[str], owner: np.ndarray, leaf: np.ndarray
) -> list[str]:
    draw = _Words(rng)
    return [
        f"{brands[o]} {' '.join(draw.leaf_words(f, 2))} {draw.one(PRODUCT_NOUNS)}"
        f" ({draw.one(mid_at(f // LEAVES_PER_MID).words)})"
        for o, f in zip(owner.tolist(), leaf.tolist(), strict=True)
    ]


def ad_texts(
    rng: np.random.Generator, brands: list[str], owner: np.ndarray, leaf: np.ndarray
) -> list[str]:
    draw = _Words(rng)
    return [
        f"{draw.one(GENERIC_WORDS).capitalize()}: {' '.join(draw.leaf_words(f, 3))} "
        f"by {brands[o]} - {draw.one(GENERIC_WORDS)}"
        for o, f in zip(owner.tolist(), leaf.tolist(), strict=True)
    ]
