"""The default knobs (`content_reveal` 1, `interest_drift` 0) leave the world as it was.

The fingerprints hash the world of the generator from before the knobs existed (main at
ee56f37, which gives the same tables). They hash the tables' values, not the parquet
bytes, so a pyarrow upgrade does not move them; a numpy release that changed its random
streams would (numpy keeps the streams of `default_rng` stable across releases).

Float columns are hashed rounded to 9 decimals: numpy's AVX-512 `log1p` and `exp` differ
from the C library's (used on CPUs without AVX-512) in the last bit for a few percent of
inputs (a purchase edge's weight is `log1p(price)`), so unrounded values hash differently
on different machines. To check the other path on an AVX-512 machine, run with
`NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"`.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pyarrow as pa
import pytest

from hir_sdk.synth import SCALES, World, generate_world

SMALLER = dataclasses.replace(SCALES["tiny"], n_users=300, n_advertisers=20)


def fingerprint(world: World) -> str:
    h = hashlib.sha256(world.manifest.to_toml().encode())
    tables = {"nodes": world.nodes, "edges": world.edges, "content": world.content}
    tables |= {f"truth/{name}": table for name, table in world.truth.items()}
    for name in sorted(tables):
        h.update(name.encode())
        for column in tables[name].column_names:
            values = tables[name][column]
            if pa.types.is_dictionary(values.type):
                values = values.cast(pa.string())
            if pa.types.is_floating(values.type):
                values = pa.array(
                    np.round(values.to_numpy(zero_copy_only=False), 9), from_pandas=True
                )
            h.update(column.encode())
            h.update(repr(values.to_pylist()).encode())
    return h.hexdigest()


@pytest.mark.parametrize(
    ("cfg", "seed", "expected"),
    [
        (SMALLER, 7, "87dd719be84ef0b06125abcfcdc09110b9678e4b94c199ea45188e74a8de0f09"),
        (SCALES["tiny"], 0, "8a86c6aab151eb2a664778739de0733ed34661d6a38b38e53798fac953ebedc7"),
    ],
)
def test_default_knobs_give_the_world_from_before_the_knobs(cfg, seed, expected):
    assert (cfg.content_reveal, cfg.interest_drift) == (1.0, 0.0)
    world = generate_world(cfg, seed)
    assert set(world.truth) == {"taxonomy", "entities", "users"}
    assert fingerprint(world) == expected


def test_fingerprint_sees_a_changed_knob():
    base = fingerprint(generate_world(SMALLER, 7))
    for knob in ({"content_reveal": 0.99}, {"interest_drift": 0.001}):
        assert fingerprint(generate_world(dataclasses.replace(SMALLER, **knob), 7)) != base
