"""The tag and version of a saved retrieval file are checked before its arrays are used:
a hand-edited file is one `InputError` naming it, never a TypeError."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.saved_arrays import read_arrays, write_arrays


@pytest.mark.parametrize(
    ("header", "fragment"),
    [
        ({"format": np.array("t"), "format_version": np.array([1, 2])}, "one integer"),
        ({"format": np.array("t"), "format_version": np.array("x")}, "one integer"),
        ({"format": np.array("t"), "format_version": np.array(1.0)}, "one integer"),
        ({"format": np.array("u"), "format_version": np.array(1)}, "format tag 'u'"),
        ({"format": np.array("t"), "format_version": np.array(2)}, "format version 2"),
        ({"format": np.array("t")}, "missing ['format_version']"),
    ],
)
def test_a_bad_header_is_an_input_error(tmp_path, header, fragment):
    path = tmp_path / "saved.npz"
    np.savez(path, x=np.zeros(2), **header)
    with pytest.raises(InputError) as caught:
        read_arrays(path, "t", 1, ["x"], "index")
    assert fragment in str(caught.value) and str(path) in str(caught.value)


def test_round_trip(tmp_path):
    path = tmp_path / "saved.npz"
    write_arrays(path, "t", 1, {"x": np.arange(3)})
    assert read_arrays(path, "t", 1, ["x"], "index")["x"].tolist() == [0, 1, 2]
