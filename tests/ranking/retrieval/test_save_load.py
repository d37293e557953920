"""Save writes one .npz atomically; load gives back an index that searches identically."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags
from tests.ranking.retrieval.reference import grid_data


@pytest.mark.parametrize("with_embeddings", [True, False])
def test_round_trip(tmp_path, with_embeddings) -> None:
    rng = np.random.default_rng(0)
    codes, embeddings = grid_data(rng, 50, 3, 5, dim=4)
    index = InvertedIndex.build(
        np.arange(50) * 3,
        codes,
        5,
        embeddings if with_embeddings else None,
        token_weighting="uniform",
    )
    path = tmp_path / "out" / "index.npz"
    index.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["index.npz"]  # no temp file left
    loaded = InvertedIndex.load(path)
    for name in ("item_ids", "codes", "offsets", "rows", "token_weights"):
        assert np.array_equal(getattr(loaded, name), getattr(index, name)), name
    assert loaded.codebook_size == 5 and loaded.token_weighting == "uniform"
    bags = TokenBags.from_codes(codes[:6], 5)
    kwargs = {"query_embeddings": embeddings[:6], "num_candidates": 9} if with_embeddings else {}
    before, after = index.search(bags, 4, **kwargs), loaded.search(bags, 4, **kwargs)
    assert np.array_equal(before.ids, after.ids) and np.array_equal(before.scores, after.scores)
    if with_embeddings:
        assert np.array_equal(loaded.embeddings, index.embeddings)
    else:
        assert loaded.embeddings is None


def test_overwrite_replaces_the_file(tmp_path) -> None:
    path = tmp_path / "index.npz"
    InvertedIndex.build([1], [[0]], 2).save(path)
    InvertedIndex.build([1, 2], [[0], [1]], 2).save(path)
    assert InvertedIndex.load(path).num_items == 2


def test_bad_files_raise_input_error(tmp_path) -> None:
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="garbage.npz"):
        InvertedIndex.load(garbage)
    other = tmp_path / "other.npz"
    np.savez(other, codes=np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(InputError, match="missing"):
        InvertedIndex.load(other)
    with pytest.raises(InputError, match="cannot read"):
        InvertedIndex.load(tmp_path / "absent.npz")
    broken = tmp_path / "broken.npz"
    InvertedIndex.build([1, 2], [[0], [1]], 2).save(broken)
    with np.load(broken) as data:
        arrays = dict(data)
    arrays["codes"] = np.array([[0], [7]])
    np.savez(broken, **arrays)
    with pytest.raises(InputError, match="broken.npz.*codes must lie"):
        InvertedIndex.load(broken)
