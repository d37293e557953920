"""BoM token ids, and quantizers saved and loaded back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, ResidualQuantizer
from hir_sdk.bom.quantizer import ARRAYS_FILE, META_FILE
from hir_sdk.errors import InputError


def test_token_ids_are_codebook_offsets_plus_codes(additive: AdditiveQuantizer) -> None:
    k = additive.codebook_size  # 16
    codes = np.array([[0, 3, 15, 1], [2, 0, 0, 15]])
    tokens = additive.tokens(codes)
    assert tokens.tolist() == [[0, 19, 47, 49], [2, 16, 32, 63]]
    assert additive.vocabulary_size == 64
    assert tokens.dtype == np.int64
    # each token names its codebook and codeword: a row's tokens are distinct (a set)
    assert np.array_equal(tokens // k, np.broadcast_to(np.arange(4), tokens.shape))
    assert np.array_equal(tokens % k, codes)
    assert np.array_equal(additive.codes(tokens), codes)  # the inverse
    with pytest.raises(InputError, match=r"codes out of range \[0, 16\)"):
        additive.codes(tokens[:, ::-1])  # a token in the wrong slot is no code


def test_encoded_tokens_form_a_bag_of_distinct_ids(
    data: np.ndarray, additive: AdditiveQuantizer
) -> None:
    tokens = additive.tokens(additive.encode(data[:100]))
    assert tokens.shape == (100, 4)
    assert all(len(set(row)) == 4 for row in tokens.tolist())
    assert tokens.min() >= 0 and tokens.max() < additive.vocabulary_size


@pytest.mark.parametrize("name", ["additive", "product", "residual"])
def test_round_trip(
    name: str, request: pytest.FixtureRequest, data: np.ndarray, tmp_path: Path
) -> None:
    quantizer = request.getfixturevalue(name)
    folder = quantizer.save(tmp_path / "q")
    loaded = type(quantizer).load(folder)
    assert loaded.codebooks.tobytes() == quantizer.codebooks.tobytes()
    assert np.array_equal(loaded.encode(data), quantizer.encode(data))
    for attribute in ("dim", "seed", "fit_options", "fingerprint", "history", "num_codebooks"):
        assert getattr(loaded, attribute) == getattr(quantizer, attribute)
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["kind"] == name and meta["format_version"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]  # no temporaries left


def test_additive_options_survive(data: np.ndarray, tmp_path: Path) -> None:
    quantizer = AdditiveQuantizer(2, 4, beam_size=2, icm_passes=1).fit(data[:100], iterations=1)
    loaded = AdditiveQuantizer.load(quantizer.save(tmp_path / "q"))
    assert (loaded.beam_size, loaded.icm_passes) == (2, 1)


def test_save_refuses_to_overwrite(residual: ResidualQuantizer, tmp_path: Path) -> None:
    residual.save(tmp_path / "q")
    with pytest.raises(InputError, match="already exists"):
        residual.save(tmp_path / "q")
    residual.save(tmp_path / "q", overwrite=True)


def test_load_rejects_another_kind_or_damage(residual: ResidualQuantizer, tmp_path: Path) -> None:
    folder = residual.save(tmp_path / "q")
    with pytest.raises(InputError, match="holds a 'residual' quantizer, not 'product'"):
        ProductQuantizer.load(folder)
    with pytest.raises(InputError, match="not a saved quantizer"):
        ResidualQuantizer.load(tmp_path / "nothing")
    np.savez(folder / ARRAYS_FILE, codebooks=residual.codebooks[:, :3])
    with pytest.raises(InputError, match=r"expected float32 \(4, 16, 16\)"):
        ResidualQuantizer.load(folder)
    (folder / ARRAYS_FILE).write_bytes(b"not a zip")
    with pytest.raises(InputError, match="cannot read codebooks"):
        ResidualQuantizer.load(folder)
    (folder / META_FILE).write_text("{")
    with pytest.raises(InputError, match="cannot read quantizer metadata"):
        ResidualQuantizer.load(folder)


def test_relative_error_from_given_codes_equals_encoding_again(
    additive: AdditiveQuantizer, data: np.ndarray
) -> None:
    codes = additive.encode(data)
    assert additive.relative_error(data, codes) == additive.relative_error(data)
    worse = codes.copy()
    worse[:, 0] = (worse[:, 0] + 1) % additive.codebook_size
    assert additive.relative_error(data, worse) > additive.relative_error(data)
    with pytest.raises(InputError, match="codes given for"):
        additive.relative_error(data, codes[:-1])
