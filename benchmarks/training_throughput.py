"""Training throughput, where a step's time goes, and model FLOPs utilisation (MFU).

    python benchmarks/training_throughput.py --scale small --steps 40 [--record FILE]

One process, one run of the built-in config (`hir fit`'s) on `hir synth --scale SCALE`:
- **throughput**: anchors/s over `--steps` timed steps after `--warmup` steps, from the
  trainer's own per-step times in `metrics.jsonl` (loader wait + step);
- **the step's parts**: the trainer's `forward_s` (losses, teacher pass and engagement
  pairs included), `backward_s`, `update_s` (clipping, optimizer, EMA) and the loader
  wait; and, timed apart on the same batches in this process, what the loader process
  does per batch: sampling the views (`ViewSampler.views`) and the rest of
  `BatchBuilder.build` (structural encodings, features, packing);
- **MFU**: the FLOPs of a training step, counted by `torch.utils.flop_counter` over a
  few more steps (less the validation pass that ends them), times steps/s, against the
  machine's fp32 matmul rate measured in the same run (`torch.mm` of 2048 x 2048
  matrices with the thread count training runs with, best of 5).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from publish import publish
from torch.utils.flop_counter import FlopCounterMode

from hir_sdk.synth import SCALES, generate_world, write_world
from hir_sdk.training import TrainConfig, Trainer


def matmul_flops(threads: int, size: int = 2048, repeats: int = 5) -> float:
    """Best fp32 FLOP/s of `torch.mm` on `size`-square matrices with `threads` threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        best = float("inf")
        for _ in range(repeats):
            began = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - began)
    finally:
        torch.set_num_threads(before)
    return 2 * size**3 / best


def preparation_times(trainer: Trainer, batches: int) -> tuple[float, float]:
    """Mean seconds per batch of sampling the views and of the rest of `build`, on the
    first `batches` batches of epoch 0, in this process (the loader does it in its own)."""
    sampling, build = [], []
    for index in range(batches):
        anchors, cutoffs = trainer.schedule.batch(0, index)
        began = time.perf_counter()
        trainer.builder.sampler.views(anchors, cutoffs)
        sampled = time.perf_counter()
        trainer.builder.build(anchors, cutoffs, index)
        sampling.append(sampled - began)
        build.append(time.perf_counter() - sampled)
    return statistics.fmean(sampling), statistics.fmean(build) - statistics.fmean(sampling)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=40, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps before them")
    parser.add_argument("--flop-steps", type=int, default=2, help="steps the FLOPs come from")
    parser.add_argument("--record", help="append the result table to this Markdown file")
    args = parser.parse_args()
    timed_end = args.warmup + args.steps
    total = timed_end + args.flop_steps
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(generate_world(SCALES[args.scale], 0), Path(tmp) / "world")
        config = TrainConfig()  # its steps: the learning-rate and seeding schedule of a run
        trainer = Trainer(data, Path(tmp) / "run", config)
        trainer.fit(max_steps=timed_end, progress=False)  # the first `warmup` not timed
        with FlopCounterMode(display=False) as counter:
            trainer.fit(max_steps=total, progress=False)  # validates at its stop
        with FlopCounterMode(display=False) as validation:
            trainer.validate()
        steps_flops = counter.get_total_flops() - validation.get_total_flops()
        flops_per_step = steps_flops / args.flop_steps
        log = (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in log][args.warmup : timed_end]
        sampling_s, encoding_s = preparation_times(trainer, min(args.steps, 20))
    threads = torch.get_num_threads()
    peak = matmul_flops(threads)
    parts = {
        key: statistics.fmean(r[key] for r in records)
        for key in ("data_wait_s", "forward_s", "backward_s", "update_s", "step_s")
    }
    per_step = parts["data_wait_s"] + parts["step_s"]
    other = parts["step_s"] - parts["forward_s"] - parts["backward_s"] - parts["update_s"]
    anchors = config.batch_size / per_step
    achieved = flops_per_step / per_step

    def share(seconds: float) -> str:
        return f"{100 * seconds / per_step:.1f}%"

    lines = [
        f"### training throughput, `{args.scale}`, built-in config "
        f"(batch {config.batch_size}, width {config.model.dim}, {config.model.layers} layers, "
        f"world knowledge {'on' if trainer.config.use_content else 'off'})",
        "",
        f"command: `python benchmarks/training_throughput.py --scale {args.scale} "
        f"--steps {args.steps}` ({datetime.date.today()}; python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, {threads} torch threads, "
        f"{config.num_workers} loader process(es))",
        "",
        "| part of a training step | ms per step | share |",
        "|---|---:|---:|",
        f"| waiting for the loader | {1e3 * parts['data_wait_s']:.0f} | "
        f"{share(parts['data_wait_s'])} |",
        f"| forward (student, teacher, engagement pairs, losses) | "
        f"{1e3 * parts['forward_s']:.0f} | {share(parts['forward_s'])} |",
        f"| backward | {1e3 * parts['backward_s']:.0f} | {share(parts['backward_s'])} |",
        f"| update (clipping, optimizer, EMA) | {1e3 * parts['update_s']:.0f} | "
        f"{share(parts['update_s'])} |",
        f"| the rest (step count, metrics) | {1e3 * other:.0f} | {share(other)} |",
        f"| **step** | **{1e3 * per_step:.0f}** | 100% |",
        "",
        "In the loader process, overlapped with the steps (timed apart, same batches): "
        f"sampling the views {1e3 * sampling_s:.0f} ms, encodings and packing "
        f"{1e3 * encoding_s:.0f} ms per batch.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| anchors/s | {anchors:,.1f} |",
        f"| FLOPs per step (forward + backward + update) | {flops_per_step / 1e9:,.2f} G |",
        f"| achieved FLOP/s | {achieved / 1e9:,.1f} G |",
        f"| fp32 matmul FLOP/s, this machine, {threads} threads | {peak / 1e9:,.1f} G |",
        f"| **model FLOPs utilisation** | **{100 * achieved / peak:.1f}%** |",
    ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
