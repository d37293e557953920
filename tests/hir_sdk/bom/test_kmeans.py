"""k-means: hand-checked distances, sums and re-seeding; determinism; separated blobs."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.bom.kmeans import _update, group_sums, kmeans, nearest


def test_nearest_on_a_hand_checked_input() -> None:
    x = np.array([[0, 0], [3, 0], [0, 4], [1, 0]], dtype=np.float32)
    centroids = np.array([[0, 0], [3, 4], [2, 0]], dtype=np.float32)
    labels, distances = nearest(x, centroids, chunk_rows=3)  # two chunks
    # [1, 0] is 1 away from both [0, 0] and [2, 0]: the lower index wins
    assert labels.tolist() == [0, 2, 1, 0]
    assert distances.tolist() == [0.0, 1.0, 9.0, 1.0]
    assert labels.dtype == np.int64 and distances.dtype == np.float32


def test_group_sums_on_a_hand_checked_input() -> None:
    values = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    sums = group_sums(np.array([2, 0, 2]), values, 4)
    assert sums.dtype == np.float64
    assert sums.tolist() == [[3, 4], [0, 0], [6, 8], [0, 0]]


def test_an_empty_cluster_takes_the_farthest_rows() -> None:
    x = np.array([[0, 0], [1, 0], [10, 0], [20, 0]], dtype=np.float32)
    labels = np.array([0, 0, 0, 0])
    distances = np.array([1.0, 0.0, 90.0, 400.0], dtype=np.float32)
    centroids = _update(x, labels, distances, 3)
    assert centroids.tolist() == [[7.75, 0.0], [20.0, 0.0], [10.0, 0.0]]


def test_separated_blobs_are_found() -> None:
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0], [10, 0], [0, 10], [10, 10]], dtype=np.float32)
    truth = np.repeat(np.arange(4), 50)
    x = (centres[truth] + 0.1 * rng.standard_normal((200, 2))).astype(np.float32)
    result = kmeans(x, 4, seed=0)
    # one label per blob, and the blobs' labels all differ
    pairs = {(int(t), int(label)) for t, label in zip(truth, result.labels, strict=True)}
    assert len(pairs) == 4 and len({label for _, label in pairs}) == 4
    found = np.sort(result.centroids, axis=0)
    np.testing.assert_allclose(found, np.sort(centres, axis=0), atol=0.05)
    inertia = float(((x - result.centroids[result.labels]) ** 2).sum())
    assert result.inertia == pytest.approx(inertia, rel=1e-5)


def test_same_seed_same_bits_other_seed_other_result(data: np.ndarray) -> None:
    a = kmeans(data, 16, iterations=5, seed=3)
    b = kmeans(data, 16, iterations=5, seed=3)
    c = kmeans(data, 16, iterations=5, seed=4)
    assert a.centroids.tobytes() == b.centroids.tobytes()
    assert np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.centroids, c.centroids)


def test_labels_belong_to_the_returned_centroids(data: np.ndarray) -> None:
    result = kmeans(data, 16, iterations=2, seed=0)  # stopped before convergence
    assert np.array_equal(result.labels, nearest(data, result.centroids)[0])


def test_k_must_not_exceed_the_rows() -> None:
    with pytest.raises(ValueError, match="k <= N"):
        kmeans(np.zeros((3, 2), dtype=np.float32), 4)
