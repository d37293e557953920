"""How much each entity's text reveals of its interest (`SynthConfig.content_reveal`).

An entity *reveals* with probability `content_reveal`: its text is drawn from its own
leaf, as always. Otherwise its text is drawn from a leaf picked uniformly at random,
independently of its own leaf (and of its advertiser's, product's or ad's), so the text
of a non-revealing entity carries no information about its interest. The draws come
from their own random stream, so the knob changes the text and nothing else in the
world of a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.synth.taxonomy import N_LEAVES


@dataclass(frozen=True)
class TextLeaves:
    """The leaves one entity type's text is drawn from, and which entities reveal."""

    leaf: np.ndarray  # (n,) leaf the text's interest words come from
    leaf2: np.ndarray  # (n,) second leaf (advertisers) or -1
    reveals: np.ndarray  # (n,) bool: the text leaves are the entity's own


def text_leaves(
    rng: np.random.Generator, reveal: float, leaf: np.ndarray, leaf2: np.ndarray | None = None
) -> TextLeaves:
    """Own leaves for a `reveal` share of the entities, random leaves for the others
    (a second leaf stays absent where the entity has none). Draws nothing when
    `reveal` is 1."""
    second = np.full(len(leaf), -1, dtype=np.int64) if leaf2 is None else leaf2
    if reveal >= 1.0:
        return TextLeaves(leaf, second, np.ones(len(leaf), dtype=bool))
    reveals = rng.random(len(leaf)) < reveal
    random_leaf = rng.integers(0, N_LEAVES, (2, len(leaf)))
    return TextLeaves(
        leaf=np.where(reveals, leaf, random_leaf[0]),
        leaf2=np.where(reveals | (second < 0), second, random_leaf[1]),
        reveals=reveals,
    )
