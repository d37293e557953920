"""The ranker protocol and registry: the built-in arms follow it, a user's ranker plugs
in by name (the docs/rankers.md example), and a broken one is refused."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.evaluation.pipeline import ABConfig, run_ab_on_graph
from hir_sdk.evaluation.rankers import (
    make_ranker,
    needs_hir,
    ranker_names,
    register_ranker,
)
from hir_sdk.ranking.ranker import Ranker
from tests.page_example import run_page_example


def test_docs_example_plugs_in_a_ranker():
    run_page_example("rankers.md")
    assert "owner-rate" in ranker_names() and not needs_hir("owner-rate")


def test_built_in_arms_follow_the_protocol():
    assert ranker_names()[:4] == ("xgboost", "popularity", "xgboost+hir", "multistage")
    config = ABConfig()
    for name in ranker_names()[:4]:
        assert isinstance(make_ranker(name, config), Ranker)
    assert [needs_hir(n) for n in ranker_names()[:4]] == [False, False, True, True]


def test_names_are_checked():
    with pytest.raises(InputError, match="unknown model 'nope'"):
        ABConfig(treatment="nope")
    with pytest.raises(ValueError, match="already registered"):
        register_ranker("xgboost", lambda config: None)


class _NotARanker:
    def __init__(self, config: ABConfig) -> None:
        pass

    def fit(self, data):
        return self


class _TooFew:
    def __init__(self, config: ABConfig) -> None:
        pass

    def fit(self, data):
        return self

    def predict(self, data, window):
        return np.full(3, 0.5)

    def describe(self):
        return "three predictions, whatever the window"


def test_a_ranker_that_breaks_the_protocol_is_refused(tiny_graph):
    register_ranker("test-not-a-ranker", _NotARanker)
    with pytest.raises(TypeError, match="lacks fit"):
        make_ranker("test-not-a-ranker", ABConfig())
    register_ranker("test-too-few", _TooFew)
    config = ABConfig(control="popularity", treatment="test-too-few", n_bootstrap=5)
    with pytest.raises(InputError, match="predicted \\(3,\\) values"):
        run_ab_on_graph(tiny_graph, config)
