"""Training on a CUDA GPU, checked against the same run on CPU.

    python benchmarks/gpu_training.py --steps 200 --record benchmarks/results/gpu.md

On one synthetic world (`--scale`, tiny by default) and one training config, it runs
`hir fit` in a fresh process per run:

- **cpu**: `device = "cpu"` (DENSE attention, full precision), the reference;
- **cuda** and **cuda again**: `device = "cuda"` (compiled FLEX attention, bf16 autocast),
  twice, to see whether two GPU runs give the same weights;
- **cuda, NCCL group**: the GPU run inside a one-rank NCCL process group, so the
  trainer's collectives (gradient all-reduce, queue all-gather, the rank-zero write
  check) run through NCCL. One GPU allows one NCCL rank; two ranks need two GPUs;
- **cuda, dynamic=True**: FLEX compiled with every shape symbolic from the first call,
  instead of the library's automatic dynamic shapes.

It prints each run's final and best validation loss, the median step time (after the
first steps, which compile), the first step's time, how many graphs the compiler built,
and how far each run's final student weights are from the cpu run's and from the first
cuda run's (largest absolute difference). A run that fails is reported and the others
still run. Needs a CUDA GPU.
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

# every run goes through this wrapper: an optional one-rank NCCL group, an optional
# compile mode for FLEX, and the compiler's counters printed as the last line
FIT = """
import json, os, sys
import torch
nccl, dynamic = sys.argv[1] == "1", sys.argv[2]
if dynamic != "default":
    from torch.nn.attention.flex_attention import flex_attention
    import hir_sdk.model.attention as attention
    attention._compiled_flex = torch.compile(flex_attention, dynamic=dynamic == "true")
if nccl:
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29531", RANK="0",
                      WORLD_SIZE="1", LOCAL_RANK="0")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
from hir_sdk.cli.main import main
code = main(sys.argv[3:])
if nccl and dist.is_initialized():
    dist.destroy_process_group()
from torch._dynamo.utils import counters
print(json.dumps({"graphs": counters["stats"]["unique_graphs"]}))
raise SystemExit(code)
"""

# name: (device, NCCL group, FLEX compile mode)
RUNS = {
    "cpu": ("cpu", False, "default"),
    "cuda": ("cuda", False, "default"),
    "cuda again": ("cuda", False, "default"),
    "cuda, NCCL group": ("cuda", True, "default"),
    "cuda, dynamic=True": ("cuda", False, "true"),
}


def fit(data: Path, out: Path, run: tuple[str, bool, str], steps: int) -> dict:
    """One `hir fit` in a fresh process: its metrics rows, wall seconds and compiler
    counters, or its error."""
    device, nccl, dynamic = run
    config = out.with_suffix(".toml")
    config.write_text(
        f"steps = {steps}\neval_every = {max(steps // 4, 1)}\ncheckpoint_every = {steps}\n"
        f'device = "{device}"\nnum_workers = 1\n',
        encoding="utf-8",
    )
    argv = ["fit", "--data", str(data), "--out", str(out), "--config", str(config), "--quiet"]
    cmd = [sys.executable, "-c", FIT, str(int(nccl)), dynamic, *argv]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-1500:]}", "wall": wall}
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    graphs = json.loads(done.stdout.strip().splitlines()[-1])["graphs"]
    return {"rows": rows, "wall": wall, "graphs": graphs}


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
    results, failures = {}, {}
    for name, run_spec in RUNS.items():
        run = work / name.replace(" ", "_").replace(",", "").replace("=", "_")
        got = fit(data, run, run_spec, args.steps)
        if "error" in got:
            failures[name] = got["error"]
            print(f"[{name}: failed after {got['wall']:.0f} s] {got['error']}", flush=True)
            continue
        rows = got["rows"]
        val = [r["val_loss"] for r in rows if "val_loss" in r]
        steps = [r["step_s"] for r in rows if "step_s" in r]
        results[name] = {
            "final_val": val[-1],
            "best_val": min(val),
            "first_ms": 1e3 * steps[0],
            "step_ms": 1e3 * statistics.median(steps[len(steps) // 2 :]),
            "wall_s": got["wall"],
            "graphs": got["graphs"],
            "weights": weights(run),
            "attention": json.loads((run / "meta.json").read_text()).get("attention", "?"),
        }
        r = results[name]
        print(
            f"[{name}: {r['wall_s']:.0f} s, val {r['final_val']:.4f}, first step "
            f"{r['first_ms']:.0f} ms, then {r['step_ms']:.1f} ms, {r['graphs']} graphs]",
            flush=True,
        )
    lines = [
        f"### {time.strftime('%Y-%m-%d %H:%M')}: `hir fit` on CPU and on "
        f"{torch.cuda.get_device_name()}",
        "",
        f"command: `python benchmarks/gpu_training.py --scale {args.scale} "
        f"--steps {args.steps}`; torch {torch.__version__}, {os.cpu_count()} CPU cores",
        "",
        "| run | attention | final val loss | best val loss | first step ms "
        "| median step ms (second half) | graphs compiled | wall s "
        "| max abs weight diff vs cpu | vs cuda |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        diffs = [
            f"{max_diff(r['weights'], results[ref]['weights']):.2e}" if ref in results else "-"
            for ref in ("cpu", "cuda")
        ]
        lines.append(
            f"| {name} | {r['attention']} | {r['final_val']:.4f} | {r['best_val']:.4f} "
            f"| {r['first_ms']:.0f} | {r['step_ms']:.1f} | {r['graphs']} | {r['wall_s']:.0f} "
            f"| {diffs[0]} | {diffs[1]} |"
        )
    lines += [f"- **{name}** failed: `{err.splitlines()[-1]}`" for name, err in failures.items()]
    publish(lines, args.record)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
