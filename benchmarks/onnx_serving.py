"""onnxruntime vs torch eager: throughput of the exported encoder and online ranker.

    .venv/bin/python benchmarks/onnx_serving.py \\
        --record benchmarks/results/onnx_serving.md

Side by side in one process, on the same inputs, with the same number of threads
(`--threads`, 2): torch eager in inference mode (the encoder on its DENSE path, which
the embedder uses on CPU and the export follows; uncompiled FLEX takes minutes per
batch on CPU, see benchmarks/attention.py for compiled FLEX) and onnxruntime on the
exported file through the serving API (`encode` / `score`: building the feeds
is included), CPU provider. With a GPU, also torch DENSE on CUDA and, when this
onnxruntime build has the CUDA provider, onnxruntime on CUDA; the ratio column compares
engines on the same device. `--models encoder` leaves out the online ranker, which needs
TorchRec and its fbgemm kernels. Untrained weights
(speed does not depend on them) at the default sizes: encoder dim 128, 2 layers, 4
heads, 384-dim content, 16 stats; batches of 256 views whose sizes are drawn from the
teacher view's range (20..96 nodes). Online ranker at its defaults with HIR dim 64, 8
BoM tokens, 21 dense features; 1,000 candidates per batch, 16 recent events.

Each round times one batch of every engine in a shuffled order (so slow spells of the
machine hit all alike); the table gives the median per batch over `--rounds` rounds,
rows/s, and onnxruntime's speed relative to each torch path (> 1: faster). Before timing,
each engine's outputs are checked against torch DENSE (max abs difference shown).
"""

from __future__ import annotations

import argparse
import copy
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from hir_sdk.export.encoder_graph import encoder_feeds, encoder_input_names
from hir_sdk.export.exporter import export_encoder, export_ranker
from hir_sdk.export.ranker_graph import ranker_feeds, ranker_input_names
from hir_sdk.export.serving import OnnxModel
from hir_sdk.model import HierarchicalEncoder, Impl
from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.inputs import random_inputs

HIR_DIM, BOM, DENSE, ACTIONS = 64, 8, 21, 5


def encoder_case(batch: int) -> tuple[HierarchicalEncoder, list]:
    torch.manual_seed(0)
    config = EncoderConfig(num_node_types=6, num_edge_types=8, stats_dim=16, content_dim=384)
    encoder = HierarchicalEncoder(config).eval()
    rng = np.random.default_rng(0)
    batches = [random_inputs(rng.integers(20, 97, batch), config, seed=i) for i in range(3)]
    return encoder, batches


def ranker_case(rows: int) -> tuple:
    """The online ranker and three batches of inputs. Imported here: the ranker needs
    TorchRec (and its fbgemm kernels), which `--models encoder` does without."""
    from hir_sdk.ranking.calibration import PlattScaling
    from hir_sdk.ranking.sequence.online_ranker import OnlineRanker, OnlineRankerConfig
    from hir_sdk.ranking.sequence.random_inputs import random_candidates, random_events
    from hir_sdk.ranking.sequence.ranker_bundle import OnlineInputs, OnlineRankerBundle

    torch.manual_seed(0)
    sizes = {
        "num_actions": ACTIONS,
        "user_dim": 32,
        "hir_dim": HIR_DIM,
        "dense_dim": DENSE,
        "bom_vocab": BOM * 256,
        "routes": 16,
    }
    ranker = OnlineRanker(OnlineRankerConfig(), **sizes).eval()
    inputs = []
    for i in range(3):
        g = torch.Generator().manual_seed(i)
        recent = random_events(rows, 16, hir_dim=HIR_DIM, num_actions=ACTIONS, generator=g)
        cand = random_candidates(
            rows,
            hir_dim=HIR_DIM,
            dense_dim=DENSE,
            codebooks=BOM,
            codewords=256,
            routes=16,
            generator=g,
        )
        inputs.append(OnlineInputs(torch.randn(rows, 32, generator=g), recent, cand))
    bundle = OnlineRankerBundle(ranker, PlattScaling(), sizes, inputs[0], "benchmark")
    return bundle, inputs


def timed(engines: dict, rounds: int) -> dict[str, float]:
    """Median seconds per call of each engine, interleaved in shuffled rounds."""
    times: dict[str, list[float]] = {name: [] for name in engines}
    order = list(engines)
    rng = random.Random(0)
    for name in order:  # warm-up
        engines[name](0)
    for r in range(rounds):
        rng.shuffle(order)
        for name in order:
            start = time.perf_counter()
            engines[name](r % 3)
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


def cuda_session(path: Path) -> OnnxModel | None:
    """An onnxruntime session on the CUDA provider, or None (said) when this build has none."""
    session = OnnxModel(path)
    if session.provider != "CUDAExecutionProvider":
        print(f"onnxruntime CUDA: not available (provider {session.provider}); skipped")
        return None
    return session


def encoder_rows(args: argparse.Namespace, folder: Path, cuda: bool) -> list[str]:
    encoder, batches = encoder_case(args.views)
    export_encoder(encoder, folder / "encoder.onnx", fingerprint="benchmark")
    names = encoder_input_names(encoder)
    with torch.inference_mode():
        ref = [encoder(x, Impl.DENSE).embedding.numpy() for x in batches]
    engines = {"torch DENSE": lambda i: encoder(batches[i], Impl.DENSE)}
    sessions = {"onnxruntime CPU": OnnxModel(folder / "encoder.onnx", threads=args.threads)}
    if cuda:
        gpu = torch.device("cuda")
        on_gpu = copy.deepcopy(encoder).to(gpu)
        gpu_batches = [x.to(gpu) for x in batches]

        def torch_cuda(i: int) -> None:
            on_gpu(gpu_batches[i], Impl.DENSE)
            torch.cuda.synchronize()

        with torch.inference_mode():
            out = on_gpu(gpu_batches[0], Impl.DENSE).embedding.cpu().numpy()
        print(f"encoder torch DENSE CUDA: max |cuda - cpu| {np.abs(out - ref[0]).max():.2e}")
        engines["torch DENSE CUDA"] = torch_cuda
        session = cuda_session(folder / "encoder.onnx")
        if session is not None:
            sessions["onnxruntime CUDA"] = session
    for label, session in sessions.items():
        out = session.run(encoder_feeds(batches[0], names))["embedding"]
        print(f"encoder {label}: max |onnx - torch| {np.abs(out - ref[0]).max():.2e}")
        engines[label] = lambda i, s=session: s.run(encoder_feeds(batches[i], names))
    with torch.inference_mode():
        medians = timed(engines, args.rounds)
    return _rows("encoder", args.views, medians)


def ranker_rows(args: argparse.Namespace, folder: Path, cuda: bool) -> list[str]:
    bundle, inputs = ranker_case(args.candidates)
    export_ranker(bundle, folder / "ranker.onnx")
    rnames = ranker_input_names(bundle.ranker)
    engines = {
        "torch eager": lambda i: bundle.ranker(inputs[i].user, inputs[i].recent, inputs[i].cand)
    }
    sessions = {"onnxruntime CPU": OnnxModel(folder / "ranker.onnx", threads=args.threads)}
    if cuda:
        session = cuda_session(folder / "ranker.onnx")
        if session is not None:
            sessions["onnxruntime CUDA"] = session
    reference = bundle.scores(inputs[0])[0]
    for label, session in sessions.items():
        x0 = inputs[0]
        out = session.run(ranker_feeds(rnames, x0.user, x0.recent, x0.cand))["logits"]
        print(f"ranker {label}: max |onnx - torch| {np.abs(out - reference).max():.2e}")
        engines[label] = lambda i, s=session: s.run(
            ranker_feeds(rnames, inputs[i].user, inputs[i].recent, inputs[i].cand)
        )
    with torch.inference_mode():
        medians = timed(engines, args.rounds)
    return _rows("online ranker", args.candidates, medians)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--views", type=int, default=256, help="encoder batch (subgraphs)")
    parser.add_argument("--candidates", type=int, default=1_000, help="ranker batch")
    parser.add_argument("--record", type=Path, default=None)
    parser.add_argument(
        "--models", nargs="+", choices=["encoder", "ranker"], default=["encoder", "ranker"]
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    folder = Path(tempfile.mkdtemp())
    cuda = torch.cuda.is_available()
    rows_out = []

    if "encoder" in args.models:
        rows_out += encoder_rows(args, folder, cuda)
    if "ranker" in args.models:
        rows_out += ranker_rows(args, folder, cuda)

    header = (
        "| model | engine | ms per batch (p50) | rows/s "
        "| onnxruntime speed-up vs this (same device) |"
    )
    lines = [header, "|---|---|---|---|---|", *rows_out]
    print("\n".join(lines))
    if args.record:
        text = [
            "# onnxruntime vs torch eager (`benchmarks/onnx_serving.py`)",
            "",
            f"{args.threads} threads; encoder batches of {args.views} views (20..96 nodes), "
            f"online ranker batches of {args.candidates} candidates; median of "
            f"{args.rounds} interleaved rounds; GPU: {'yes' if cuda else 'no'}.",
            "",
            *lines,
            "",
        ]
        args.record.write_text("\n".join(text), encoding="utf-8")


def _rows(model: str, batch: int, medians: dict[str, float]) -> list[str]:
    """One row per engine; a torch row's ratio is onnxruntime's speed-up over it on the
    same device (CPU, or CUDA when both ran there)."""
    out = []
    for name, seconds in medians.items():
        ort = medians.get("onnxruntime CUDA" if name.endswith("CUDA") else "onnxruntime CPU")
        ratio = "" if name.startswith("onnxruntime") or ort is None else f"{seconds / ort:.2f}x"
        out.append(f"| {model} | {name} | {seconds * 1e3:.1f} | {batch / seconds:,.0f} | {ratio} |")
    return out


if __name__ == "__main__":
    main()
