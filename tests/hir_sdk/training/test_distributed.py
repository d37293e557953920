"""Two CPU ranks under torchrun (gloo) finish and agree with the one-rank run; each rank
takes its own GPU; a failed write on rank 0 stops every rank; the validation loss, and so
`best.pt`, is the same on one and two ranks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hir_sdk.errors import InputError
from hir_sdk.training import Trainer
from hir_sdk.training.checkpoint import load_checkpoint
from hir_sdk.training.distributed import device_for, local_rank
from tests.hir_sdk.training import two_rank_worker
from tests.hir_sdk.training.test_trainer import CONFIG

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[3]

STEPS = 3


def _fit(tiny_world: Path, out: Path, config: Path, ranks: int) -> None:
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [
        str(torchrun),
        "--standalone",
        f"--nproc_per_node={ranks}",
        "-m",
        "hir_sdk.cli.main",
        "fit",
        "--data",
        str(tiny_world),
        "--out",
        str(out),
        "--config",
        str(config),
        "--quiet",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"trained {STEPS} steps on {ranks} rank(s)" in done.stdout


def test_two_ranks_agree_with_one(tiny_world, tmp_path):
    config = tmp_path / "train.toml"
    text = CONFIG.to_toml().replace("steps = 6", f"steps = {STEPS}")
    # no prototype seeding: k-means is discrete, so the two runs' slightly different
    # teachers may seed different prototypes
    text = text.replace("seed_prototypes_at = [0.5, 0.8]", "seed_prototypes_at = []")
    assert "seed_prototypes_at = []" in text
    config.write_text(text.replace("center_types = false", "center_types = true"))
    for ranks in (1, 2):
        _fit(tiny_world, tmp_path / f"r{ranks}", config, ranks)
    one = load_checkpoint(tmp_path / "r1" / "checkpoints" / "last.pt")["student"]
    two = load_checkpoint(tmp_path / "r2" / "checkpoints" / "last.pt")["student"]
    import dataclasses

    from hir_sdk.training import Trainer

    centred = dataclasses.replace(CONFIG.model, center_types=True)
    start = Trainer(
        tiny_world,
        tmp_path / "init",
        dataclasses.replace(
            CONFIG,
            steps=STEPS,
            model=centred,
            distill=dataclasses.replace(CONFIG.distill, seed_prototypes_at=()),
        ),
    ).student.state_dict()
    weights = [k for k in one if one[k].is_floating_point()]
    moved = sum(float((one[k] - start[k]).square().sum()) for k in weights) ** 0.5
    apart = sum(float((one[k] - two[k]).square().sum()) for k in weights) ** 0.5
    assert moved > 0
    assert apart > 0  # each rank really trained on its half of every batch
    # same global batches, gradients averaged over two halves: the update agrees up to the
    # batch-coupled Sinkhorn targets, which each rank balances over its half
    assert apart < 0.35 * moved, (apart, moved)
    # the per-type centres are tracked (and averaged over the ranks) in the two-rank run
    centres = load_checkpoint(tmp_path / "r2" / "checkpoints" / "last.pt")["student"]
    assert centres["project.centers"].abs().sum() > 0
    meta = (tmp_path / "r2" / "meta.json").read_text()
    assert '"world_size": 2' in meta


# ---- one GPU per rank ------------------------------------------------------------------
def test_each_rank_of_a_machine_takes_its_own_gpu():
    assert device_for("auto", 0, cuda_devices=2) == torch.device("cuda", 0)
    assert device_for("auto", 1, cuda_devices=2) == torch.device("cuda", 1)
    assert device_for("cuda", 3, cuda_devices=8) == torch.device("cuda", 3)
    assert device_for("auto", None, cuda_devices=1) == torch.device("cuda")  # alone
    assert device_for("auto", 1, cuda_devices=0) == torch.device("cpu")
    assert device_for("cpu", 1, cuda_devices=2) == torch.device("cpu")


def test_more_ranks_than_gpus_or_no_gpu_is_refused():
    with pytest.raises(InputError, match="rank 2 of this machine has no GPU"):
        device_for("auto", 2, cuda_devices=2)
    with pytest.raises(InputError, match="no visible CUDA device"):
        device_for("cuda", None, cuda_devices=0)
    with pytest.raises(InputError, match="device must be one of"):
        device_for("gpu", None, cuda_devices=1)


def test_the_local_rank_comes_from_torchrun(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert local_rank() is None
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert local_rank() == 3
    monkeypatch.setenv("LOCAL_RANK", "-1")
    with pytest.raises(InputError, match="LOCAL_RANK"):
        local_rank()


# ---- a failure on rank 0; validation on two ranks -------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tiny_world, tmp_path_factory):
    """Two gloo ranks started as plain processes (see `two_rank_worker`): their return
    codes, their reports and the run folder."""
    base = tmp_path_factory.mktemp("two_ranks")
    run, out = base / "run", base / "reports"
    out.mkdir()
    port = str(_free_port())
    ranks = []
    for rank in range(2):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            "OMP_NUM_THREADS": "1",
        }
        command = [sys.executable, "-m", "tests.hir_sdk.training.two_rank_worker"]
        ranks.append(
            subprocess.Popen(
                [*command, str(tiny_world), str(run), str(out)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    codes, logs = [], []
    try:
        for process in ranks:  # a rank left waiting for the other would never return
            _, err = process.communicate(timeout=300)
            codes.append(process.returncode)
            logs.append(err[-2000:])
    finally:
        for process in ranks:
            process.kill()
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    for r, report in enumerate(reports):
        report |= json.loads((out / f"rank{r}_after.json").read_text())
    return codes, reports, run, logs


def test_a_failed_write_on_rank_zero_stops_every_rank(two_ranks):
    codes, reports, run, logs = two_ranks
    assert codes == [1, 1], logs
    assert [r["error"] for r in reports] == ["OSError", "RankZeroFailed"]
    # both stopped at the step whose checkpoint could not be written
    assert [r["step"] for r in reports] == [two_rank_worker.FULL_FROM_STEP] * 2
    assert "No space left on device" in logs[0]
    assert load_checkpoint(run / "checkpoints" / "last.pt")["step"] == 1


def test_leaving_the_process_group_stops_its_threads(two_ranks):
    # the optimizer loads torch's compiler stack; loaded after the group exists, it kept
    # the group alive, and its threads ended at teardown, where they could abort a rank
    _, reports, _, _ = two_ranks
    assert [r["threads"] for r in reports] == [[], []]


def test_every_rank_queues_the_whole_batch(two_ranks):
    _, reports, _, _ = two_ranks
    assert reports[0]["queue"] == reports[1]["queue"]
    batch = two_rank_worker.config().batch_size
    assert reports[0]["queue_rows"] == two_rank_worker.FULL_FROM_STEP * batch


def test_validation_is_the_same_on_one_and_two_ranks(tiny_world, two_ranks, tmp_path):
    _, reports, run, _ = two_ranks
    one = Trainer(tiny_world, tmp_path / "one", two_rank_worker.config())
    # the same model: the same loss on one rank as on each of two
    alone = one.validate()["val_loss"]
    assert [r["initial_val_loss"] for r in reports] == [pytest.approx(alone, rel=1e-5)] * 2
    # the model and cluster queue the two ranks had after step 1: the loss they logged
    # (and kept best.pt on) is the one a single rank computes for that state
    one.resume(run / "checkpoints" / "last.pt")
    logged = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert logged["step"] == 1
    assert one.validate()["val_loss"] == pytest.approx(logged["val_loss"], rel=1e-5)
    assert (
        load_checkpoint(run / "checkpoints" / "best.pt")["best_validation"] == (logged["val_loss"])
    )
    assert reports[0]["best_validation"] == reports[1]["best_validation"]
