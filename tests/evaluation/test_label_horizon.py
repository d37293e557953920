"""A manifest `time.end` well past the log's last edge: a warning, once, in the CLI's words."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from hir_sdk.cli.main import _shown_as
from hir_sdk.errors import LabelWarning
from hir_sdk.evaluation.label_horizon import unlogged_end
from hir_sdk.evaluation.pipeline import check_windows
from hir_sdk.schema.manifest import DAY

WEEK = 7 * DAY  # the tiny world's attribution window


def _ending(graph, end: int):
    time = dataclasses.replace(graph.manifest.time, end=end)
    return dataclasses.replace(graph, manifest=dataclasses.replace(graph.manifest, time=time))


def test_an_end_at_the_last_edge_says_nothing(tiny_graph):
    last = int(tiny_graph.ts[-1])
    assert unlogged_end(tiny_graph, WEEK) is None
    assert unlogged_end(_ending(tiny_graph, last + WEEK), WEEK) is None  # within a window


def test_an_end_a_month_after_the_log_is_named_with_what_to_change(tiny_graph):
    late = _ending(tiny_graph, int(tiny_graph.ts[-1]) + 30 * DAY)
    note = unlogged_end(late, WEEK)
    assert note is not None
    assert "is 30.0 days after the log's last edge" in note
    assert "set time.end just after it" in note
    with pytest.warns(LabelWarning, match="30.0 days after") as caught:
        check_windows(late)
    assert len([w for w in caught if w.category is LabelWarning]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", LabelWarning)
        check_windows(tiny_graph)  # the tiny world's own end: no warning


def test_the_cli_prints_it_as_one_line(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _shown_as("hir ab", warnings.showwarning)
        warnings.warn("the end is late", LabelWarning, stacklevel=1)
    assert capsys.readouterr().err == "hir ab: warning: the end is late\n"
