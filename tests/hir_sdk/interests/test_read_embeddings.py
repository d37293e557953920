"""A damaged or incomplete embeddings folder is one `InputError` naming the file."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

from hir_sdk.bom import AdditiveQuantizer
from hir_sdk.errors import InputError
from hir_sdk.interests import EntityEmbeddings, read_embeddings, write_embeddings


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small hand-made snapshot (no training): 32 ads, two prototype levels."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(32, 4)).astype(np.float32)
    quantizer = AdditiveQuantizer(2, 4).fit(z, seed=0)
    table = pl.DataFrame(
        {
            "node_type": pl.Series(["ad"] * 32, dtype=pl.Categorical),
            "node_id": np.arange(32),
            "as_of": np.zeros(32, dtype=np.int64),
            "embedding": pl.Series(z, dtype=pl.Array(pl.Float32, 4)),
            "cluster_l0": rng.integers(0, 2, 32).astype(np.int32),
            "cluster_l1": rng.integers(0, 4, 32).astype(np.int32),
            "bom": pl.Series(quantizer.tokens(quantizer.encode(z)), dtype=pl.Array(pl.Int32, 2)),
        }
    )
    prototypes = [np.eye(2, 4, dtype=np.float32), np.eye(4, dtype=np.float32)]
    out = tmp_path_factory.mktemp("emb") / "snapshot"
    write_embeddings(EntityEmbeddings(table, prototypes, quantizer, {"as_of": 7}), out)
    return out


BROKEN = {
    # each was a traceback (JSONDecodeError, TypeError, FileNotFoundError, ValueError)
    "meta.json not JSON": (
        lambda p: (p / "meta.json").write_text("{not json"),
        "meta.json: cannot read the embeddings metadata",
    ),
    "meta.json a list": (lambda p: (p / "meta.json").write_text("[]"), "a JSON object"),
    "meta.json without as_of": (
        lambda p: (p / "meta.json").write_text('{"rows": 32}'),
        "lacks an integer 'as_of'",
    ),
    "prototypes.npz missing": (
        lambda p: (p / "prototypes.npz").unlink(),
        "prototypes.npz: missing the interest prototypes",
    ),
    "prototypes.npz not an npz": (
        lambda p: (p / "prototypes.npz").write_bytes(b"junk"),
        "prototypes.npz: cannot read the interest prototypes",
    ),
    "table not parquet": (
        lambda p: (p / "embeddings.parquet").write_bytes(b"PAR1 junk"),
        "embeddings.parquet: cannot read the embeddings table",
    ),
    "table without bom": (
        lambda p: (
            pl.read_parquet(p / "embeddings.parquet")
            .drop("bom")
            .write_parquet(p / "embeddings.parquet")
        ),
        "lacks columns ['bom']",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_damaged_snapshot_is_an_input_error(case, saved, tmp_path):
    breaker, fragment = BROKEN[case]
    copy = tmp_path / "copy"
    shutil.copytree(saved, copy)
    assert read_embeddings(copy).as_of == 7  # the copy itself reads
    breaker(copy)
    with pytest.raises(InputError) as caught:
        read_embeddings(copy)
    assert fragment in str(caught.value), f"{case}: {fragment!r} not in {caught.value}"
