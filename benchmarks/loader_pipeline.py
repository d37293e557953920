"""A training loop's wall time with the pipelined loader (worker processes prepare the next
batches) vs a synchronous one (batches built in the training process), and the share of
step time spent waiting for data.

    python benchmarks/loader_pipeline.py [--scale small] [--steps 40] [--workers 2]

The model is a stand-in of the encoder's size (type / hop / random-walk inputs, two
transformer layers over the padded teacher view, d=128), trained with AdamW; only the
loader changes between the two runs. Goal (issue 4): waiting under 5% of step time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from publish import publish
from torch import nn

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.sampling.loader import (
    AnchorSchedule,
    BatchBuilder,
    LoaderConfig,
    TrainingBatch,
    anchors_from_events,
    make_loader,
)
from hir_sdk.synth import SCALES, generate_world, write_world


class StandIn(nn.Module):
    def __init__(self, num_types: int, rw_steps: int, dim: int = 128) -> None:
        super().__init__()
        self.node_type = nn.Embedding(num_types, dim)
        self.hop = nn.Embedding(16, dim)
        self.rw = nn.Linear(rw_steps, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, 1)

    def forward(self, batch: TrainingBatch) -> torch.Tensor:
        p = batch.teacher.padded()
        x = (
            self.node_type(torch.from_numpy(p.node_type))
            + self.hop(torch.from_numpy(p.hop))
            + self.rw(torch.from_numpy(p.rw))
        )
        h = self.encoder(x, src_key_padding_mask=~torch.from_numpy(p.mask))
        return self.head(h[:, 0]).squeeze(-1)  # the anchor token


def run(
    builder: BatchBuilder, schedule: AnchorSchedule, steps: int, num_types: int, rw_steps: int
) -> tuple[float, float]:
    torch.manual_seed(0)
    model = StandIn(num_types, rw_steps)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = iter(make_loader(builder, schedule, epoch=0))
    waited = 0.0
    started = time.perf_counter()
    for _ in range(steps):
        mark = time.perf_counter()
        batch = next(loader)
        waited += time.perf_counter() - mark
        target = torch.ones(batch.teacher.batch_size)
        loss = nn.functional.binary_cross_entropy_with_logits(model(batch), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    total = time.perf_counter() - started
    return total, waited / total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--record")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        graph = build_graph_from_dir(
            write_world(generate_world(SCALES[args.scale], seed=0), Path(tmp) / "w")
        )
    anchors, cutoffs = anchors_from_events(graph, "train")
    builder = BatchBuilder(graph)
    rw_steps = builder.encoding.rw_steps
    results = {}
    runs = [("synchronous (0 workers)", 0)]
    runs += [(f"pipelined ({w} worker{'s' if w > 1 else ''})", w) for w in args.workers]
    for label, workers in runs:
        schedule = AnchorSchedule(
            anchors, cutoffs, LoaderConfig(batch_size=args.batch, num_workers=workers)
        )
        results[label] = run(builder, schedule, args.steps, len(graph.node_types), rw_steps)
    (sync_s, sync_wait), *piped = results.values()
    best_s, best_wait = min(piped)
    lines = [
        f"### training loop with the loader, `{args.scale}`, {args.steps} steps of "
        f"{args.batch} anchors",
        "",
        f"command: `python benchmarks/loader_pipeline.py --scale {args.scale} "
        f"--steps {args.steps} --workers {' '.join(map(str, args.workers))}` (torch threads: "
        f"{torch.get_num_threads()}, 2-core machine)",
        "",
        "| loader | wall time (s) | share of step time waiting for data |",
        "|---|---:|---:|",
        *[f"| {k} | {s:.1f} | {w:.1%} |" for k, (s, w) in results.items()],
        "",
        f"**best pipelined / synchronous wall time: {best_s / sync_s:.2f}x**; "
        f"waiting {sync_wait:.1%} -> {best_wait:.1%} (goal: under 5%)",
    ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
