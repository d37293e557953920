"""Training on a CUDA GPU, checked against the same run on CPU.

    python benchmarks/gpu_training.py --steps 200 --record benchmarks/results/gpu.md

On one synthetic world (`--scale`, tiny by default) and one training config, it runs
`hir fit` four times, each in a fresh process:

- **cpu**: `device = "cpu"` (DENSE attention, full precision), the reference;
- **cuda** and **cuda again**: `device = "cuda"` (FLEX attention, bf16 autocast), twice,
  to see whether two GPU runs give the same weights;
- **cuda, NCCL group**: the GPU run inside a one-rank NCCL process group, so the
  trainer's collectives (gradient all-reduce, queue all-gather, the rank-zero write
  check) run through NCCL. One GPU allows one NCCL rank; two ranks need two GPUs.

It prints each run's final and best validation loss, the median step time, and how far
each run's final student weights are from the cpu run's and from the first cuda run's
(largest absolute difference). Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from publish import publish

NCCL_FIT = """
import os, sys
import torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29531", RANK="0", WORLD_SIZE="1",
                  LOCAL_RANK="0")
import torch
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1)
from hir_sdk.cli.main import main
code = main(sys.argv[1:])
if dist.is_initialized():
    dist.destroy_process_group()
raise SystemExit(code)
"""

RUNS = {
    "cpu": ("cpu", False),
    "cuda": ("cuda", False),
    "cuda again": ("cuda", False),
    "cuda, NCCL group": ("cuda", True),
}


def fit(data: Path, out: Path, device: str, nccl: bool, steps: int) -> tuple[dict, float]:
    """One `hir fit` in a fresh process; returns its metrics and wall seconds."""
    config = out.with_suffix(".toml")
    config.write_text(
        f"steps = {steps}\neval_every = {max(steps // 4, 1)}\ncheckpoint_every = {steps}\n"
        f'device = "{device}"\nnum_workers = 1\n',
        encoding="utf-8",
    )
    argv = ["fit", "--data", str(data), "--out", str(out), "--config", str(config), "--quiet"]
    cmd = (
        [sys.executable, "-c", NCCL_FIT, *argv]
        if nccl
        else [
            sys.executable,
            "-m",
            "hir_sdk.cli.main",
            *argv,
        ]
    )
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{done.stdout}\n{done.stderr[-4000:]}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {"rows": rows, "log": done.stdout.strip().splitlines()[-1:]}, wall


def weights(run: Path) -> dict[str, torch.Tensor]:
    state = torch.load(run / "checkpoints" / "last.pt", map_location="cpu", weights_only=True)
    return {k: v.float() for k, v in state["student"].items() if v.is_floating_point()}


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="tiny", choices=["tiny", "small"])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--record", help="append the Markdown table to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_training.py needs a CUDA GPU", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="hir_gpu_training_"))
    data = work / "world"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "hir_sdk.cli.main",
            "synth",
            "--scale",
            args.scale,
            "--out",
            str(data),
        ],
        check=True,
        capture_output=True,
    )
    results = {}
    for name, (device, nccl) in RUNS.items():
        run = work / name.replace(" ", "_").replace(",", "")
        metrics, wall = fit(data, run, device, nccl, args.steps)
        rows = metrics["rows"]
        val = [r["val_loss"] for r in rows if "val_loss" in r]
        results[name] = {
            "final_val": val[-1],
            "best_val": min(val),
            "step_ms": 1e3 * statistics.median(r["step_s"] for r in rows if "step_s" in r),
            "wall_s": wall,
            "weights": weights(run),
            "attention": json.loads((run / "meta.json").read_text()).get("attention", "?"),
        }
        print(f"[{name}: {wall:.0f} s] {metrics['log']}", flush=True)
    lines = [
        f"### {time.strftime('%Y-%m-%d %H:%M')}: `hir fit` on CPU and on "
        f"{torch.cuda.get_device_name()}",
        "",
        f"command: `python benchmarks/gpu_training.py --scale {args.scale} "
        f"--steps {args.steps}`; torch {torch.__version__}, {os.cpu_count()} CPU cores",
        "",
        "| run | attention | final val loss | best val loss | median step ms | wall s "
        "| max abs weight diff vs cpu | vs cuda |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['attention']} | {r['final_val']:.4f} | {r['best_val']:.4f} "
            f"| {r['step_ms']:.1f} | {r['wall_s']:.0f} "
            f"| {max_diff(r['weights'], results['cpu']['weights']):.2e} "
            f"| {max_diff(r['weights'], results['cuda']['weights']):.2e} |"
        )
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
