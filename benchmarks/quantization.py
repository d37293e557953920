"""BoM quantizers side by side: reconstruction error and encode speed of additive (AQ),
residual (RQ) and product (PQ) quantization, with faiss's quantizers as peers.

    python benchmarks/quantization.py [--embeddings X.npy] [--sizes 4x256,8x256,16x256]
        [--iterations 10] [--throughput-rows 200000] [--record FILE]

- vectors: `--embeddings` (.npy, float32 (N, D)); by default the content vectors of the
  ads of the `small` synthetic world (seed 0): all-MiniLM-L6-v2 sentence vectors, 384-d,
  unit norm, from `ContentEncoder` (cached; about 20 s to embed the first time);
- a seeded 80 / 20 split: codebooks are fitted on 80 % of the rows; relative error is
  sum ||x - x_hat||^2 / sum ||x||^2 on the fitted rows and on the held-out rows;
- encode speed: vectors/s of `encode` over every row, in this process (numpy's BLAS on
  every core; faiss on its OpenMP threads);
- AQ runs with its defaults (beam 4, 3 ICM passes, the better of a greedy and a beam
  start, 10 rounds) and, at 8x256, with a beam of 1 and with the greedy start only, to
  show what each buys; RQ runs greedy (the textbook baseline) and with a beam of 4;
- faiss peers when `import faiss` works (`pip install faiss-cpu`), default settings:
  `ProductQuantizer`, `ResidualQuantizer` (beam 5), `LocalSearchQuantizer` (LSQ++, an
  additive quantizer: ICM + perturbations, 16 encode restarts);
- a second table: encode speed at 200,000 x 64 with 8x256 codebooks fitted on 20,000 rows,
  on a stand-in (a Gaussian mixture: 64 clusters, each stretched along a random 8-d plane).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from publish import publish

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, Quantizer, ResidualQuantizer

try:  # an optional peer
    import faiss
except ImportError:  # pragma: no cover - depends on the machine
    faiss = None

Encoder = Callable[[np.ndarray], np.ndarray]  # (N, D) -> (N, D) reconstruction


def ad_vectors() -> np.ndarray:
    """(N, 384) float32 content vectors of the `small` world's ads (seed 0)."""
    from hir_sdk.knowledge import ContentEncoder
    from hir_sdk.synth import SCALES, generate_world

    content = generate_world(SCALES["small"], seed=0).content
    pairs = zip(content["text"].to_pylist(), content["node_type"].to_pylist(), strict=True)
    return ContentEncoder().encode([text for text, kind in pairs if kind == "ad"])


def stand_in(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """(n, dim) float32 Gaussian mixture: 64 clusters, each stretched along an 8-d plane."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((64, dim))  # (C, D)
    planes = 0.5 * rng.standard_normal((64, dim, 8))  # (C, D, 8)
    label = rng.integers(64, size=n)
    x = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 50_000):
        rows = slice(start, start + 50_000)
        z = rng.standard_normal((len(label[rows]), 8))
        noise = 0.05 * rng.standard_normal((len(z), dim))
        x[rows] = centres[label[rows]] + np.einsum("ndr,nr->nd", planes[label[rows]], z) + noise
    return x


def relative_error(x: np.ndarray, x_hat: np.ndarray) -> float:
    diff = (x - x_hat).astype(np.float64)
    return float((diff**2).sum() / (x.astype(np.float64) ** 2).sum())


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def ours(quantizer: Quantizer, train: np.ndarray, **fit: object) -> tuple[float, Encoder]:
    fit_s, _ = timed(lambda: quantizer.fit(train, **fit))
    return fit_s, lambda x: quantizer.decode(quantizer.encode(x))


def theirs(quantizer: object, train: np.ndarray) -> tuple[float, Encoder]:
    fit_s, _ = timed(lambda: quantizer.train(train))
    return fit_s, lambda x: quantizer.decode(quantizer.compute_codes(x))


def methods(m: int, k: int, dim: int, iterations: int, greedy_too: bool) -> dict:
    """name -> (train -> (fit seconds, reconstruct)) for one codebook size."""
    found = {
        "PQ (hir_sdk)": lambda t: ours(ProductQuantizer(m, k), t),
        "RQ (hir_sdk, greedy)": lambda t: ours(ResidualQuantizer(m, k), t),
        "RQ (hir_sdk, beam 4)": lambda t: ours(ResidualQuantizer(m, k, beam_size=4), t),
        "**AQ (hir_sdk)**": lambda t: ours(AdditiveQuantizer(m, k), t, iterations=iterations),
    }
    if greedy_too:
        found["AQ, beam 1 (greedy codes + ICM)"] = lambda t: ours(
            AdditiveQuantizer(m, k, beam_size=1), t, iterations=iterations
        )
        found["AQ, greedy start only"] = lambda t: ours(
            AdditiveQuantizer(m, k), t, iterations=iterations, start="greedy"
        )
    if faiss is not None:
        bits = int(np.log2(k))
        found["faiss PQ"] = lambda t: theirs(faiss.ProductQuantizer(dim, m, bits), t)
        found["faiss RQ (beam 5)"] = lambda t: theirs(faiss.ResidualQuantizer(dim, m, bits), t)
        found["faiss LSQ"] = lambda t: theirs(faiss.LocalSearchQuantizer(dim, m, bits), t)
    return found


def quality_table(x: np.ndarray, sizes: list[tuple[int, int]], iterations: int) -> list[str]:
    order = np.random.default_rng(0).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = x[np.sort(order[:cut])], x[np.sort(order[cut:])]
    lines = [
        "| M x K | bits | method | rel. error, fitted rows | rel. error, held out "
        "| fit s | encode vectors/s |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for m, k in sizes:
        if x.shape[1] % m:
            print(f"skipping {m}x{k}: D={x.shape[1]} is not a multiple of {m}", file=sys.stderr)
            continue
        bits = m * int(np.log2(k))
        for name, build in methods(m, k, x.shape[1], iterations, (m, k) == (8, 256)).items():
            fit_s, reconstruct = build(train)
            encode_s, _ = timed(lambda: reconstruct(x))  # noqa: B023 - called right here
            lines.append(
                f"| {m}x{k} | {bits} | {name} | {relative_error(train, reconstruct(train)):.4f} "
                f"| {relative_error(test, reconstruct(test)):.4f} | {fit_s:.1f} "
                f"| {len(x) / encode_s:,.0f} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def throughput_table(rows: int, iterations: int) -> list[str]:
    x = stand_in(rows, 64)
    train = x[:20_000]
    lines = [
        f"| method (8x256, fitted on 20,000 rows) | encode {rows:,} x 64, s | vectors/s "
        "| rel. error |",
        "|---|---:|---:|---:|",
    ]
    builds = {
        "PQ (hir_sdk)": ProductQuantizer(8, 256),
        "RQ (hir_sdk, greedy)": ResidualQuantizer(8, 256),
        "AQ (hir_sdk, beam 4 + ICM)": AdditiveQuantizer(8, 256),
        "AQ (hir_sdk, beam 1 + ICM)": AdditiveQuantizer(8, 256, beam_size=1),
    }
    for name, quantizer in builds.items():
        options = {"iterations": iterations} if isinstance(quantizer, AdditiveQuantizer) else {}
        quantizer.fit(train, **options)
        encode_s, codes = timed(lambda: quantizer.encode(x))  # noqa: B023 - called right here
        error = relative_error(x, quantizer.decode(codes))
        lines.append(f"| {name} | {encode_s:.1f} | {rows / encode_s:,.0f} | {error:.4f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embeddings", help=".npy of float32 (N, D) vectors")
    parser.add_argument("--sizes", default="4x256,8x256,16x256", help="M x K, comma-separated")
    parser.add_argument("--iterations", type=int, default=10, help="AQ assignment + LS rounds")
    parser.add_argument("--throughput-rows", type=int, default=200_000, help="0: skip")
    parser.add_argument("--record", help="append the result tables to this Markdown file")
    args = parser.parse_args()
    if args.embeddings:
        x = np.ascontiguousarray(np.load(args.embeddings, allow_pickle=False), dtype=np.float32)
        source = f"`{Path(args.embeddings).name}`"
    else:
        x = ad_vectors()
        source = "content vectors of the `small` world's ads (all-MiniLM-L6-v2)"
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    command = "python benchmarks/quantization.py" + (
        f" --embeddings {args.embeddings}" if args.embeddings else ""
    )
    peers = f"faiss {faiss.__version__}" if faiss is not None else "faiss not installed"
    lines = [
        f"### BoM quantizers on {source}: {len(x):,} x {x.shape[1]}",
        "",
        f"command: `{command}` (fitted on a seeded 80 %; python {platform.python_version()}, "
        f"{platform.machine()}, 2-core CI-class machine; {peers})",
        "",
        *quality_table(x, sizes, args.iterations),
    ]
    if args.throughput_rows:
        lines += [
            "",
            f"### Encode speed at {args.throughput_rows:,} x 64, 8x256 (stand-in: a Gaussian "
            "mixture of 64 clusters stretched along 8-d planes)",
            "",
            *throughput_table(args.throughput_rows, args.iterations),
        ]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
