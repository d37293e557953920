"""`content_reveal`: how much the entity text says about the entity's interest leaf.

The check is a classifier that reads only the text: it predicts the leaf whose words the
text mentions most. With reveal 1 it is right most of the time; with reveal 0 it is no
better than the same predictions scored against shuffled leaves (chance).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.synth import SCALES, SynthConfig, generate_world
from hir_sdk.synth.taxonomy import N_LEAVES, leaf_at

CFG = dataclasses.replace(SCALES["tiny"], n_users=200, n_advertisers=150)
LEAF_WORDS = [leaf_at(leaf).words for leaf in range(N_LEAVES)]


def _texts(reveal: float) -> pl.DataFrame:
    """Each advertiser's, product's and ad's text, true leaf and text truth."""
    world = generate_world(dataclasses.replace(CFG, content_reveal=reveal), seed=3)
    content = pl.from_arrow(world.content)
    truth = pl.from_arrow(world.truth["entities"]).select("node_type", "node_id", "leaf")
    frame = content.join(truth, on=["node_type", "node_id"])
    if "text_leaves" in world.truth:
        frame = frame.join(pl.from_arrow(world.truth["text_leaves"]), on=["node_type", "node_id"])
    return frame.with_columns(pl.col("node_type").cast(pl.String))


def _mentions(texts: list[str]) -> np.ndarray:
    """(n, N_LEAVES) how many of each leaf's words each text contains."""
    return np.array([[sum(w in text for w in words) for words in LEAF_WORDS] for text in texts])


def _accuracy_and_chance(frame: pl.DataFrame) -> tuple[float, float, float]:
    """Text-only classifier accuracy, its chance level (shuffled leaves), and the
    standard error of an accuracy at that chance level."""
    leaf = frame["leaf"].to_numpy()
    guess = _mentions(frame["text"].to_list()).argmax(axis=1)
    shuffles = np.random.default_rng(0).permuted(np.tile(leaf, (200, 1)), axis=1)
    chance = float((guess[None, :] == shuffles).mean())
    return float((guess == leaf).mean()), chance, np.sqrt(chance * (1 - chance) / len(leaf))


@pytest.fixture(scope="module")
def worlds() -> dict[float, pl.DataFrame]:
    return {reveal: _texts(reveal) for reveal in (1.0, 0.5, 0.0)}


def test_full_reveal_text_names_the_leaf(worlds):
    accuracy, chance, _ = _accuracy_and_chance(worlds[1.0])
    assert worlds[1.0].height > 2000
    assert accuracy > 0.7 and chance < 0.05, (accuracy, chance)


def test_no_reveal_text_carries_no_leaf_information(worlds):
    frame = worlds[0.0]
    accuracy, chance, stderr = _accuracy_and_chance(frame)
    assert abs(accuracy - chance) < 4 * stderr, (accuracy, chance, stderr)
    assert not frame["reveals"].any()
    # the text's leaf is drawn independently of the entity's: it matches at 1 / 96
    same = float((frame["text_leaf"] == frame["leaf"]).mean())
    assert abs(same - 1 / N_LEAVES) < 4 * np.sqrt(1 / N_LEAVES / frame.height), same
    # the text is still made of interest words, just not the entity's own
    hits = _mentions(frame["text"].to_list())
    own = hits[np.arange(frame.height), frame["text_leaf"].to_numpy()] > 0
    assert own.mean() > 0.9


def test_partial_reveal_is_a_share_of_the_entities(worlds):
    frame = worlds[0.5]
    share = float(frame["reveals"].mean())
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / frame.height), share
    revealing = frame.filter(pl.col("reveals"))
    assert (revealing["text_leaf"] == revealing["leaf"]).all()
    full, _, _ = _accuracy_and_chance(worlds[1.0])
    accuracy, chance, _ = _accuracy_and_chance(revealing)
    assert accuracy > 0.7
    hidden_accuracy, hidden_chance, stderr = _accuracy_and_chance(frame.filter(~pl.col("reveals")))
    assert abs(hidden_accuracy - hidden_chance) < 4 * stderr
    overall, _, _ = _accuracy_and_chance(frame)
    assert chance < overall < full


def test_reveal_changes_only_the_text():
    full = generate_world(CFG, seed=3)
    hidden = generate_world(dataclasses.replace(CFG, content_reveal=0.0), seed=3)
    assert hidden.edges.equals(full.edges) and hidden.nodes.equals(full.nodes)
    assert hidden.truth["entities"].equals(full.truth["entities"])
    assert not hidden.content["text"].equals(full.content["text"])


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_out_of_range_reveal_is_an_input_error(value):
    with pytest.raises(InputError, match="content_reveal must be a number in \\[0, 1\\]"):
        SynthConfig(
            "x", n_users=10, n_advertisers=2, impressions_per_user=5.0, content_reveal=value
        )
