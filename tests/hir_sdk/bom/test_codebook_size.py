"""`codebook_size`: the requested codewords on enough rows, halved on fewer."""

from __future__ import annotations

from hir_sdk.bom import ROWS_PER_CODEWORD, codebook_size


def test_enough_rows_keep_the_requested_size() -> None:
    assert codebook_size(256 * ROWS_PER_CODEWORD, 256) == 256
    assert codebook_size(10**6, 256) == 256


def test_fewer_rows_halve_it_until_each_codeword_has_its_rows() -> None:
    assert codebook_size(256 * ROWS_PER_CODEWORD - 1, 256) == 128
    assert codebook_size(1_311, 256) == 64  # the tiny world's test-start users and ads
    assert codebook_size(2_625, 256) == 128  # MovieLens-100K's users and movies
    for rows in (40, 300, 1_000, 5_000):
        size = codebook_size(rows, 256)
        assert size * ROWS_PER_CODEWORD <= rows < 2 * size * ROWS_PER_CODEWORD


def test_never_below_two_codewords() -> None:
    assert codebook_size(3, 256) == 2
    assert codebook_size(3, 1) == 1  # a request below two stays as asked
