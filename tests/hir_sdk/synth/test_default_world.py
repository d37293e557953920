"""The default knobs (`content_reveal` 1, `interest_drift` 0) leave the world as it was.

The fingerprints were computed with the generator from before the knobs existed (main at
ee56f37). They hash the tables' values, not the parquet bytes, so a pyarrow upgrade does
not move them; a numpy release that changed its random streams would (numpy keeps the
streams of `default_rng` stable across releases).
"""

from __future__ import annotations

import dataclasses
import hashlib

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
            h.update(column.encode())
            h.update(repr(values.to_pylist()).encode())
    return h.hexdigest()


@pytest.mark.parametrize(
    ("cfg", "seed", "expected"),
    [
        (SMALLER, 7, "fb9d8d774df8c951e19d8d337a1808066d00f95188d479f1940ec4816a765d13"),
        (SCALES["tiny"], 0, "f9a88454e883cd645b0303daa3978ca23639438cc0062adb4d12f420c0eda8bf"),
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
