"""`hir embed` under `torchrun` with two CPU ranks writes one folder, bit-identical to
the one-process snapshot: the same table (embeddings, clusters, tokens), quantizer and
metadata, whether the ranks' shares of the batches are uneven or one rank has none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hir_sdk.interests import embed_entities, read_embeddings

pytestmark = pytest.mark.long  # two torchrun jobs: scheduled first (tests/conftest.py)


def _embed_on_two_ranks(run: Path, data: Path, out: Path, *extra: str) -> str:
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [
        str(torchrun),
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "hir_sdk.cli.main",
        "embed",
        "--run-dir",  # torchrun would take --run for its own --run-path
        str(run),
        "--data",
        str(data),
        "--as-of",
        "validation_start",
        "--out",
        str(out),
        *extra,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _assert_same(two_ranks, one_rank) -> None:
    assert two_ranks.table.equals(one_rank.table)  # embeddings, clusters and tokens, exactly
    np.testing.assert_array_equal(two_ranks.quantizer.codebooks, one_rank.quantizer.codebooks)
    for mine, theirs in zip(two_ranks.prototypes, one_rank.prototypes, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert json.loads(json.dumps(one_rank.meta)) == two_ranks.meta


def test_two_ranks_write_the_one_rank_snapshot(snapshot, tiny_run, tiny_world, tmp_path):
    out = tmp_path / "emb"
    printed = _embed_on_two_ranks(
        tiny_run, tiny_world, out, "--codebooks", "4", "--codewords", "16"
    )
    assert printed.count("wrote") == 1 and "2 rank(s)" in printed  # rank 0 reports alone
    # batches of 256: rank 0 embeds 4 of the 7, rank 1 three; one 4,096-row block to encode
    assert 6 * 256 < len(snapshot.table) < 7 * 256
    _assert_same(read_embeddings(out), snapshot)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb"]  # nothing else written


def test_a_rank_without_a_batch_still_takes_part(tiny_run, tiny_world, tmp_path):
    one_rank = embed_entities(tiny_run, tiny_world, "validation_start", node_types=["advertiser"])
    assert len(one_rank.table) < 256  # one batch: rank 1 has none to embed
    out = tmp_path / "advertisers"
    _embed_on_two_ranks(tiny_run, tiny_world, out, "--types", "advertiser")
    _assert_same(read_embeddings(out), one_rank)
