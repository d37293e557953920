"""The online ranker's tables sharded table-wise over two CPU ranks (TorchRec DMP, gloo)
score exactly like the unsharded ranker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from hir_sdk.ranking.sequence.online_ranker import OnlineRanker, OnlineRankerConfig
from hir_sdk.ranking.sharding import table_names


def test_table_names_lists_every_torchrec_table():
    model = OnlineRanker(
        OnlineRankerConfig(),
        num_actions=3,
        user_dim=8,
        hir_dim=4,
        dense_dim=2,
        bom_vocab=16,
        routes=2,
    )
    assert table_names(model) == ["t_ranker_item", "t_ad_id", "t_owner_id", "t_bom"]


def test_two_rank_table_wise_sharding_matches_unsharded(tmp_path: Path):
    torchrun = Path(sys.executable).with_name("torchrun")
    report = tmp_path / "report"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HIR_SHARDING_REPORT": str(report)}
    done = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=2", "-m", "hir_sdk.ranking.sharding"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        result = json.loads(Path(f"{report}.{rank}.json").read_text())
        assert result["world_size"] == 2
        assert len(result["tables"]) == 4
        assert result["max_abs_diff"] < 1e-6
    assert torch.distributed.is_available()
