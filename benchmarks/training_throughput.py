"""Training throughput, where a step's time goes, and model FLOPs utilisation (MFU).

    python benchmarks/training_throughput.py --scale small --steps 40 \
        [--precisions float32,bfloat16] [--record FILE]

One process, one run of the built-in config (`hir fit`'s) on `hir synth --scale SCALE`
per `TrainConfig.precision` in `--precisions`; with several, in the order A B B A (a
later run in one process tends to be slower) and each figure the mean of its two runs:
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
import dataclasses
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


PARTS = (
    ("data_wait_s", "waiting for the loader"),
    ("forward_s", "forward (student, teacher, engagement pairs, losses)"),
    ("backward_s", "backward"),
    ("update_s", "update (clipping, optimizer, EMA)"),
    ("rest_s", "the rest (step count, metrics)"),
)


def measure(data: Path, work: Path, precision: str, args: argparse.Namespace) -> dict:
    """Per-step seconds of each part, anchors/s and FLOPs per step of one run."""
    # steps: the schedule; the configured settings, which the earlier records measured
    # (without text, `objectives = "auto"` would take the engagement settings)
    config = dataclasses.replace(TrainConfig(), precision=precision, objectives="as_configured")
    trainer = Trainer(data, work, config)
    timed_end = args.warmup + args.steps
    trainer.fit(max_steps=timed_end, progress=False)  # the first `warmup` not timed
    with FlopCounterMode(display=False) as counter:
        trainer.fit(max_steps=timed_end + args.flop_steps, progress=False)  # validates at end
    with FlopCounterMode(display=False) as validation:
        trainer.validate()
    flops = (counter.get_total_flops() - validation.get_total_flops()) / args.flop_steps
    log = (work / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in log][args.warmup : timed_end]
    parts = {key: statistics.fmean(r[key] for r in records) for key, _ in PARTS[:-1]}
    step = statistics.fmean(r["step_s"] for r in records)
    parts["rest_s"] = step - parts["forward_s"] - parts["backward_s"] - parts["update_s"]
    per_step = parts["data_wait_s"] + step
    return {
        "trainer": trainer,
        "parts": parts,
        "per_step": per_step,
        "anchors": config.batch_size / per_step,
        "flops": flops,
    }


def mean_run(runs: list[dict]) -> dict:
    """The mean of `measure`'s figures over runs of one precision."""
    parts = {key: statistics.fmean(r["parts"][key] for r in runs) for key, _ in PARTS}
    per_step = statistics.fmean(r["per_step"] for r in runs)
    return {
        "parts": parts,
        "per_step": per_step,
        "anchors": statistics.fmean(r["anchors"] for r in runs),
        "flops": statistics.fmean(r["flops"] for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=40, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps before them")
    parser.add_argument("--flop-steps", type=int, default=2, help="steps the FLOPs come from")
    parser.add_argument(
        "--precisions", default="float32", help="TrainConfig.precision of each run, in turn"
    )
    parser.add_argument("--record", help="append the result table to this Markdown file")
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        data = write_world(generate_world(SCALES[args.scale], 0), Path(tmp) / "world")
        # A B ... B A: a later run in one process tends to be slower, so each precision
        # runs once early and once late, and its figures are the mean of the two
        order = precisions + precisions[::-1] if len(precisions) > 1 else precisions
        done = [(p, measure(data, Path(tmp) / f"{p}{i}", p, args)) for i, p in enumerate(order)]
        runs = {p: mean_run([r for q, r in done if q == p]) for p in precisions}
        trainer = done[0][1]["trainer"]
        sampling_s, encoding_s = preparation_times(trainer, min(args.steps, 20))
    threads = torch.get_num_threads()
    peak = matmul_flops(threads)
    config = trainer.config
    first = runs[precisions[0]]
    lines = [
        f"### training throughput, `{args.scale}`, built-in config "
        f"(batch {config.batch_size}, width {config.model.dim}, {config.model.layers} layers, "
        f"world knowledge {'on' if config.use_content else 'off'})",
        "",
        f"command: `python benchmarks/training_throughput.py --scale {args.scale} "
        f"--steps {args.steps} --precisions {args.precisions}` ({datetime.date.today()}; "
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"{threads} torch threads, {config.num_workers} loader process(es))",
        "",
        "| part of a training step, ms (share) | " + " | ".join(precisions) + " |",
        "|---|" + "---:|" * len(precisions),
        *(
            f"| {name} | "
            + " | ".join(
                f"{1e3 * r['parts'][key]:.0f} ({100 * r['parts'][key] / r['per_step']:.1f}%)"
                for r in runs.values()
            )
            + " |"
            for key, name in PARTS
        ),
        "| **step** | "
        + " | ".join(f"**{1e3 * r['per_step']:.0f}**" for r in runs.values())
        + " |",
        "",
        "In the loader process, overlapped with the steps (timed apart, same batches): "
        f"sampling the views {1e3 * sampling_s:.0f} ms, encodings and packing "
        f"{1e3 * encoding_s:.0f} ms per batch.",
        "",
        "| measure | " + " | ".join(precisions) + " |",
        "|---|" + "---:|" * len(precisions),
        "| anchors/s | " + " | ".join(f"{r['anchors']:,.1f}" for r in runs.values()) + " |",
        f"| vs {precisions[0]} | "
        + " | ".join(f"{r['anchors'] / first['anchors']:.2f}x" for r in runs.values())
        + " |",
        "| FLOPs per step (forward + backward + update) | "
        + " | ".join(f"{r['flops'] / 1e9:,.2f} G" for r in runs.values())
        + " |",
        "| achieved FLOP/s | "
        + " | ".join(f"{r['flops'] / r['per_step'] / 1e9:,.1f} G" for r in runs.values())
        + " |",
        f"| **utilisation of fp32 `torch.mm` ({peak / 1e9:,.1f} GFLOP/s, {threads} threads)** | "
        + " | ".join(f"**{100 * r['flops'] / r['per_step'] / peak:.1f}%**" for r in runs.values())
        + " |",
    ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
