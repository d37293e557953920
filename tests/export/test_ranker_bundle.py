"""A saved online ranker loads back to the same scores, and bad folders are clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.sequence.ranker_bundle import META_FILE, OnlineRankerBundle


def test_round_trip_scores_identically(saved_ranker, tmp_path):
    bundle = OnlineRankerBundle.load(saved_ranker)
    logits, p = bundle.scores(bundle.sample)
    assert logits.shape == (256, 2) and ((p > 0) & (p < 1)).all()
    again = OnlineRankerBundle.load(bundle.save(tmp_path / "copy"))
    logits2, p2 = again.scores(again.sample)
    np.testing.assert_array_equal(logits, logits2)
    np.testing.assert_array_equal(p, p2)
    assert again.sizes == bundle.sizes and again.calibration == bundle.calibration
    assert bundle.sample.cand.hir_found.any()  # real requests, with HIR snapshots


def test_bad_bundles(saved_ranker, tmp_path):
    copy = OnlineRankerBundle.load(saved_ranker).save(tmp_path / "b")
    meta = json.loads((copy / META_FILE).read_text())
    (copy / META_FILE).write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(InputError, match="format 99 is not supported"):
        OnlineRankerBundle.load(copy)
    (copy / META_FILE).write_text(json.dumps({**meta, "sizes": {**meta["sizes"], "dense_dim": 3}}))
    with pytest.raises(InputError, match="weights do not fit"):
        OnlineRankerBundle.load(copy)
    with pytest.raises(InputError, match="not a saved online ranker"):
        OnlineRankerBundle.load(tmp_path)
