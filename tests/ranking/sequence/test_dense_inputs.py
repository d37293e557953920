"""Dense inputs: signed log, explicit missing flags, training statistics only."""

from __future__ import annotations

import numpy as np
import polars as pl

from hir_sdk.ranking.sequence.dense_inputs import DenseScaler


def test_scaler_uses_training_statistics_and_flags_missing_values():
    train = pl.DataFrame({"a": [0.0, np.e - 1, -(np.e - 1), 0.0], "b": [1.0, None, 3.0, 5.0]})
    train = train.with_columns(pl.col("b").fill_null(np.nan))
    scaler = DenseScaler(train)
    assert scaler.width == 3  # a, b, b-missing
    out = scaler.transform(train)
    assert out.shape == (4, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-6)
    # a -> signed log: [0, 1, -1, 0]; mean 0, std sqrt(0.5)
    np.testing.assert_allclose(out[:, 0], np.array([0, 1, -1, 0]) / np.sqrt(0.5), rtol=1e-6)
    # the missing flag is its own column: 1 on row 1 only, standardized
    assert out[1, 2] > 0 and (out[[0, 2, 3], 2] < 0).all()
    later = pl.DataFrame({"b": [np.nan], "a": [0.0]})  # column order does not matter
    expected = [out[0, 0], out[1, 1], out[1, 2]]  # a as in row 0, b missing as in row 1
    np.testing.assert_allclose(scaler.transform(later)[0], expected, rtol=1e-6)


def test_piecewise_linear_pieces_follow_the_training_quantiles():
    values = np.arange(9.0)  # signed log spreads them, the quantiles follow
    train = pl.DataFrame({"a": np.expm1(values), "b": [np.nan] * 4 + [2.0] * 5})
    plain, binned = DenseScaler(train), DenseScaler(train, bins=4)
    assert binned.width == plain.width + 2 * 4  # two columns, four pieces each
    np.testing.assert_allclose(binned.edges[0], [0, 2, 4, 6, 8])  # quantiles of log1p(a)
    out = binned.transform(train)
    np.testing.assert_allclose(out[:, : plain.width], plain.transform(train), rtol=1e-6)
    pieces = out[:, plain.width : plain.width + 4]  # column a
    np.testing.assert_allclose(pieces[3], [1.0, 0.5, 0.0, 0.0])  # log1p = 3: halfway in bin 2
    np.testing.assert_allclose(pieces[8], [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(pieces[0], [0.0, 0.0, 0.0, 0.0])
    b = out[:, plain.width + 4 :]  # one repeated value: steps at its edge; missing: zeros
    np.testing.assert_allclose(b[:4], 0.0)
    np.testing.assert_allclose(b[4:], 1.0)
    unseen = pl.DataFrame({"a": [np.expm1(100.0), -5.0], "b": [1.0, 3.0]})
    np.testing.assert_allclose(
        binned.transform(unseen)[:, plain.width : plain.width + 4], [[1] * 4, [0] * 4]
    )
    again = DenseScaler.restore(
        binned.columns, binned.missing, binned.mean, binned.std, binned.edges
    )
    np.testing.assert_array_equal(again.transform(train), out)
    assert (
        DenseScaler.restore(plain.columns, plain.missing, plain.mean, plain.std).width
        == plain.width
    )
