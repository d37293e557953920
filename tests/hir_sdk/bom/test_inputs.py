"""Mistakes in the caller's data are `InputError`s with a clear message, for every kind;
sizes that would exhaust memory are refused before any work."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, Quantizer, ResidualQuantizer
from hir_sdk.bom.quantizer import FIT_MEMORY_LIMIT, MAX_CODEBOOKS, MAX_CODEWORDS, check_sizes
from hir_sdk.errors import InputError

KINDS = [AdditiveQuantizer, ProductQuantizer, ResidualQuantizer]


@pytest.fixture(scope="module", params=KINDS, ids=lambda cls: cls.kind)
def fitted(request: pytest.FixtureRequest, data: np.ndarray) -> Quantizer:
    quantizer = request.param(2, 4)
    return quantizer.fit(data[:200], iterations=1)


@pytest.mark.parametrize("cls", KINDS)
def test_non_finite_training_rows_are_named(cls: type[Quantizer], data: np.ndarray) -> None:
    bad = data[:40].copy()
    bad[3, 1] = np.nan
    bad[7, 0] = np.inf
    with pytest.raises(InputError, match="non-finite") as info:
        cls(2, 4).fit(bad)
    assert info.value.rows == ("row 3: [nan]", "row 7: [inf]")


@pytest.mark.parametrize("cls", KINDS)
def test_too_few_rows_to_fit(cls: type[Quantizer], data: np.ndarray) -> None:
    with pytest.raises(InputError, match="at least codebook_size=16 rows, got 15"):
        cls(2, 16).fit(data[:15])


@pytest.mark.parametrize("cls", KINDS)
@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.zeros(32, dtype=np.float32), r"2-d \(N, D\) array, got shape \(32,\)"),
        (np.zeros((8, 4, 2), dtype=np.float32), "2-d"),
        (np.array([["a", "b"]] * 8), "numeric"),
        (np.zeros((8, 0), dtype=np.float32), "no columns"),
        (np.full((8, 2), 1e39), "non-finite"),  # overflows float32
    ],
)
def test_malformed_training_vectors(cls: type[Quantizer], x: np.ndarray, message: str) -> None:
    with pytest.raises(InputError, match=message):
        cls(2, 4).fit(x)


def test_encode_checks_the_width_and_values(fitted: Quantizer, data: np.ndarray) -> None:
    with pytest.raises(InputError, match="have 15 dims, but this quantizer was fitted on 16"):
        fitted.encode(data[:5, :15])
    bad = data[:5].copy()
    bad[2, 0] = -np.inf
    with pytest.raises(InputError, match="non-finite"):
        fitted.encode(bad)
    with pytest.raises(InputError, match="2-d"):
        fitted.encode(data[0])
    assert fitted.encode(data[:0]).shape == (0, 2)


def test_codes_out_of_range_or_misshapen(fitted: Quantizer) -> None:
    with pytest.raises(InputError, match=r"out of range \[0, 4\)") as info:
        fitted.decode(np.array([[0, 1], [4, 0], [-1, 2]]))
    assert info.value.rows == ("row 1: [4, 0]", "row 2: [-1, 2]")
    with pytest.raises(InputError, match="out of range"):
        fitted.tokens(np.array([[0, 9]]))
    with pytest.raises(InputError, match=r"codes must be \(N, 2\), got shape \(3,\)"):
        fitted.decode(np.array([0, 1, 2]))
    with pytest.raises(InputError, match="integers"):
        fitted.decode(np.array([[0.0, 1.0]]))


def test_unfitted_quantizers_say_so() -> None:
    with pytest.raises(RuntimeError, match="not fitted; call fit first"):
        AdditiveQuantizer(2, 4).encode(np.zeros((1, 3)))


@pytest.mark.parametrize("args", [(0, 4), (2, 0), (2.5, 4), (True, 4)])
def test_constructor_arguments_are_checked(args: tuple) -> None:
    with pytest.raises(ValueError, match="must be an int >= 1"):
        ResidualQuantizer(*args)


@pytest.mark.parametrize("cls", KINDS)
@pytest.mark.parametrize(("m", "k"), [(65, 4), (2, 65_537), (100_000, 256)])
def test_sizes_beyond_the_bounds_are_refused(cls: type[Quantizer], m: int, k: int) -> None:
    bounds = "at most 64 codebooks of at most 65,536 codewords"
    with pytest.raises(InputError, match=f"{bounds}, got {m:,} codebooks of {k:,}"):
        cls(m, k)


def test_sizes_at_the_bounds_are_accepted() -> None:
    assert check_sizes(MAX_CODEBOOKS, MAX_CODEWORDS) == (64, 65_536)
    assert ProductQuantizer(MAX_CODEBOOKS, 4).num_codebooks == 64


def test_a_fit_too_large_for_memory_is_refused_before_it_starts() -> None:
    """64 x 1,024 additive codebooks: the least-squares system alone is 32 GiB."""
    x = np.random.default_rng(0).standard_normal((1_024, 16)).astype(np.float32)
    quantizer = AdditiveQuantizer(64, 1_024)
    assert quantizer.fit_bytes(16) > FIT_MEMORY_LIMIT
    with pytest.raises(InputError, match=r"needs about 64\.\d GiB, more than the 8 GiB allowed"):
        quantizer.fit(x)
    assert not quantizer.is_fitted
    # the same sizes cost far less without the joint update: these kinds fit them
    for cls in (ResidualQuantizer, ProductQuantizer):
        assert cls(64, 1_024).fit_bytes(16) < FIT_MEMORY_LIMIT
