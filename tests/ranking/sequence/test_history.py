"""Event windows: the last L events strictly before each cutoff, checked against a loop."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.ranking.sequence import EventHistory


def _reference(g, user, cutoff, length, codes):
    out = []
    for e in range(g.num_edges):
        if g.src[e] == user and g.ts[e] < cutoff and g.etype[e] in codes:
            out.append((int(g.dst[e]), int(g.etype[e]), int(cutoff - g.ts[e])))
    return out[-length:]


def test_window_matches_a_loop(tiny_graph):
    g = tiny_graph
    history = EventHistory(g)
    codes = set(
        g.edge_type_codes(
            [
                s.key
                for r in ("exposure", "click", "engagement", "conversion")
                for s in g.manifest.edge_types_with_role(r)
            ]
        ).tolist()
    )
    rng = np.random.default_rng(0)
    users = g.type_offsets[g.type_code("user")] + rng.integers(0, g.num_nodes_of("user"), 40)
    t = g.manifest.time
    cutoffs = rng.integers(t.start, t.end, 40)
    cutoffs[0] = g.ts[np.flatnonzero(g.src == users[0])[3]]  # exactly at an event: excluded
    window = history.window(users, cutoffs, 8)
    counts = history.count_before(users, cutoffs)
    for i in range(40):
        ref = _reference(g, users[i], cutoffs[i], 8, codes)
        n = len(ref)
        assert window.lengths[i] == n
        assert not window.mask[i, : 8 - n].any() and window.mask[i, 8 - n :].all()
        got = list(
            zip(
                window.item[i, 8 - n :].tolist(),
                window.action[i, 8 - n :].tolist(),
                window.age[i, 8 - n :].tolist(),
                strict=True,
            )
        )
        assert got == ref
        assert (window.item[i, : 8 - n] == -1).all() and (window.age[i, : 8 - n] == 0).all()
        assert counts[i] == len(_reference(g, users[i], cutoffs[i], 10**9, codes))
    assert (window.age[window.mask] > 0).all()  # nothing at or after the cutoff


def test_trimmed_drops_only_all_padding_columns(tiny_graph):
    history = EventHistory(tiny_graph)
    users = tiny_graph.type_offsets[tiny_graph.type_code("user")] + np.arange(5)
    cutoffs = np.full(5, tiny_graph.manifest.time.start + 3 * 86_400)
    window = history.window(users, cutoffs, 512)
    trimmed = window.trimmed()
    assert trimmed.mask.shape[1] == window.lengths.max() < 512
    np.testing.assert_array_equal(trimmed.lengths, window.lengths)
    np.testing.assert_array_equal(trimmed.item[trimmed.mask], window.item[window.mask])


def test_length_must_be_positive(tiny_graph):
    with pytest.raises(ValueError, match="history length"):
        EventHistory(tiny_graph).window(np.array([0]), np.array([0]), 0)
