"""Product and residual quantization on hand-set codebooks, and their fit histories."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.bom import ProductQuantizer, ResidualQuantizer, beam_encode, fit_residual
from hir_sdk.bom.beam_search import extend_beams, start_beams
from hir_sdk.errors import InputError


def test_product_codes_slices_and_decoding_concatenates() -> None:
    pq = ProductQuantizer(2, 2)
    pq.dim = 4
    pq.codebooks = np.array([[[0, 0], [1, 1]], [[5, 0], [0, 5]]], dtype=np.float32)  # (M, K, D / M)
    x = np.array([[0.9, 1.2, 0.1, 4.0], [0.1, -0.2, 6.0, 0.5]], dtype=np.float32)
    codes = pq.encode(x)
    assert codes.tolist() == [[1, 1], [0, 0]]
    assert pq.decode(codes).tolist() == [[1, 1, 0, 5], [0, 0, 5, 0]]


def test_residual_codes_are_greedy_and_decoding_adds() -> None:
    rq = ResidualQuantizer(2, 3)
    rq.dim = 2
    rq.codebooks = np.array(
        [[[0, 0], [4, 0], [0, 4]], [[1, 0], [0, 1], [-1, 0]]], dtype=np.float32
    )  # (M, K, D)
    x = np.array([[5, 0], [3.2, 0.3], [-0.9, 3]], dtype=np.float32)
    codes = rq.encode(x)
    assert codes.tolist() == [[1, 0], [1, 2], [2, 2]]
    assert rq.decode(codes).tolist() == [[5, 0], [3, 0], [-1, 4]]


def test_product_needs_dims_divisible_by_codebooks(data: np.ndarray) -> None:
    with pytest.raises(InputError, match="multiple of num_codebooks=3"):
        ProductQuantizer(3, 4).fit(data)  # D = 16


def test_residual_history_falls_with_every_codebook(residual: ResidualQuantizer) -> None:
    mse = residual.history["fit"]
    assert len(mse) == 4
    assert all(later < 0.8 * earlier for earlier, later in zip(mse, mse[1:], strict=False))


def test_product_history_ends_at_the_training_error(
    data: np.ndarray, product: ProductQuantizer
) -> None:
    mse = product.history["fit"]
    assert mse == sorted(mse) and len(mse) == 4  # slices fitted so far: error accumulates
    final = ((data - product.decode(product.encode(data))) ** 2).sum(1).mean()
    assert mse[-1] == pytest.approx(final, rel=1e-5)


@pytest.mark.parametrize("cls", [ProductQuantizer, ResidualQuantizer])
def test_baselines_are_deterministic(cls: type, data: np.ndarray) -> None:
    a, b, c = (cls(4, 8).fit(data, iterations=3, seed=s) for s in (1, 1, 2))
    assert a.codebooks.tobytes() == b.codebooks.tobytes()
    assert np.array_equal(a.encode(data), b.encode(data))
    assert not np.array_equal(a.codebooks, c.codebooks)


@pytest.mark.parametrize("beam", [1, 3])
def test_fit_codes_are_the_encoder_codes(beam: int, data: np.ndarray) -> None:
    """The training codes `fit_residual` returns are what encoding finds with its codebooks."""
    codebooks, codes, mse = fit_residual(data, 3, 8, iterations=5, seed=0, beam=beam)
    assert np.array_equal(codes, beam_encode(data, codebooks, beam)[0])
    assert len(mse) == 3 and mse == sorted(mse, reverse=True)


def test_a_beam_trains_each_codebook_on_every_partial_code(data: np.ndarray) -> None:
    """Codebook 0 sees the rows either way; codebook 1 sees 3 residuals per row with a beam of
    3, so its codewords differ from greedy's."""
    greedy = ResidualQuantizer(3, 8).fit(data, iterations=5)
    wide = ResidualQuantizer(3, 8, beam_size=3).fit(data, iterations=5)
    np.testing.assert_array_equal(greedy.codebooks[0], wide.codebooks[0])
    assert not np.allclose(greedy.codebooks[1], wide.codebooks[1])
    assert wide.history["fit"][0] == greedy.history["fit"][0]


def test_beams_extend_the_same_in_chunks(data: np.ndarray) -> None:
    codebooks = ResidualQuantizer(2, 8, beam_size=3).fit(data, iterations=3).codebooks
    whole = start_beams(data)
    chunked = start_beams(data)
    for codebook in codebooks:
        whole = extend_beams(*whole, codebook, 3)
        chunked = extend_beams(*chunked, codebook, 3, chunk_rows=300)
    for a, b in zip(whole, chunked, strict=True):
        np.testing.assert_array_equal(a, b)
    assert whole[2].shape == (2000, 3, 2)
