"""Recall@100 and queries/s of BoM inverted-index retrieval against exact k-NN and
faiss (IVF-PQ, IVFFlat, HNSW; when it imports), on synthetic clustered embeddings or on
HIR embeddings.

    .venv/bin/python benchmarks/retrieval.py \\
        --record benchmarks/results/retrieval.md
    .venv/bin/python benchmarks/medium_embeddings.py --out medium.parquet
    .venv/bin/python benchmarks/retrieval.py --embeddings medium.parquet \\
        --record benchmarks/results/retrieval.md

Data, by default: a hierarchical Gaussian mixture, normalised: 32 topics x 16 interests x
16 niches (interest offsets 0.5, niche offsets 0.35, item noise `--noise` 0.8, each an
isotropic Gaussian of that expected norm; Zipf(0.5) niche popularity). Items and queries
are independent draws (default 200k items, 10k queries, D = 64).

With `--embeddings FILE` (node_type, node_id, embedding; `medium_embeddings.py` writes
one from a trained encoder): the items are the entities of `--item-types` (default every
type but users), the queries a seeded sample of `--queries` users; inner products of the
embeddings as they are.

BoM codes: a residual k-means of this script's own (M = `--codebooks` 4 codebooks of
K = `--codebook-size` 1024 codewords; each level is k-means on a 50k-row sample of the
current residuals, then every row is assigned); to be swapped for the `hir_sdk.bom`
quantizer. Query tokens come from the same codebooks.

Timing: the queries are cut into chunks of `--chunk` (2000); every method searches every
chunk `--repeats` (3) times, methods interleaved chunk by chunk, and each chunk's best
time counts (noise from other processes only ever adds time). Methods, all on this
process's threads:
  exact        `exact_knn`: chunked matmul against all items + top-k (the reference)
  own BoM      a query's own M tokens (weight 1, idf token weights), candidates cut to C
               by overlap, re-scored by inner product; the tokens are precomputed like the
               embeddings, so their encoding is not timed
  probe        multi-probe bags from the query's inner products with the codewords
               (timed): the P best codebook-0 codewords gather candidates
               (`gather_codebooks=1`); "all" re-scores every gathered item (sparse
               `probe_queries` of codebook 0 alone; the index's cell scan, one matmul per
               probed cell shared by the chunk's queries), "ADC cut C" also scores codebooks
               1..M-1 with all their codewords (dense `probe_weights`; the overlap is then
               the truncated quantized inner product) and re-scores the best C
  routed probe as "probe, all", with the cells ranked by a `CellRouter` learned from
               `--router-sample` (10k) other queries (users not among the queries; the
               synthetic set: another draw) instead of by the centroids; its scores are
               timed, its fit (once, like the index build) is reported apart
  faiss        IndexIVFPQ (nlist K, 16 x 8-bit sub-quantizers, inner product), trained on
               the same 50k sample, nprobe swept; "+ refine" re-ranks 4k by exact inner
               product (IndexRefineFlat). IndexIVFFlat (nlist K, same sample, nprobe
               swept): the same cells as ours scanned by faiss. IndexHNSWFlat (32 links,
               efConstruction 80, efSearch swept). Same thread count.
The probe "all" rows give the mean number of items in the probed cells.
Goals: recall@100 >= 0.9 of exact at >= 10x exact's queries/s; and, at recall@100 >= 0.9,
at least faiss IVFFlat's queries/s at the same recall (its curve, linear between points).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import torch
from publish import publish

from hir_sdk.ranking.retrieval import (
    CellRouter,
    InvertedIndex,
    SearchResult,
    TokenBags,
    exact_knn,
    neighbor_recall,
    probe_bags,
    probe_queries,
    probe_weights,
)

K_NN = 100
IVF_FLAT = "faiss IVFFlat"
HNSW = "faiss HNSW32"
HNSW_LINKS = 32
HNSW_BUILD_EF = 80


def normalise(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


def mixture_centers(dim: int, seed: int) -> torch.Tensor:
    """(32 * 16 * 16, D) niche centers: topic + interest offset + niche offset."""
    g = torch.Generator().manual_seed(seed)

    def offsets(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dim, generator=g) / dim**0.5

    topics = normalise(torch.randn(32, 1, 1, dim, generator=g))
    return (topics + 0.5 * offsets(32, 16, 1) + 0.35 * offsets(32, 16, 16)).reshape(-1, dim)


def draw(centers: torch.Tensor, num: int, noise: float, seed: int) -> np.ndarray:
    """(num, D) float32 unit rows: a Zipf(0.5)-popular niche center plus Gaussian noise."""
    g = torch.Generator().manual_seed(seed)
    count, dim = centers.shape
    popularity = torch.arange(1, count + 1, dtype=torch.float64) ** -0.5
    niche = torch.randperm(count, generator=g)[
        torch.multinomial(popularity, num, replacement=True, generator=g)
    ]
    x = centers[niche] + noise * torch.randn(num, dim, generator=g) / dim**0.5
    return normalise(x).numpy()


def nearest(x: torch.Tensor, codebook: torch.Tensor, chunk: int = 16_384) -> torch.Tensor:
    """(N,) index of the nearest codeword (squared L2) of each row."""
    half_norms = 0.5 * (codebook * codebook).sum(1)
    return torch.cat(
        [(x[s : s + chunk] @ codebook.T - half_norms).argmax(1) for s in range(0, len(x), chunk)]
    )


def kmeans(x: torch.Tensor, k: int, iters: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    centers = x[torch.randperm(len(x), generator=g)[:k]].clone()
    for _ in range(iters):
        assign = nearest(x, centers)
        sums = torch.zeros_like(centers).index_add_(0, assign, x)
        counts = torch.bincount(assign, minlength=k).to(x.dtype)[:, None]
        centers = torch.where(counts > 0, sums / counts.clamp(min=1), centers)
    return centers


def residual_kmeans(
    x: np.ndarray, levels: int, size: int, seed: int, sample: int = 50_000, iters: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """(M, K, D) codebooks and (N, M) int64 codes of a greedy residual k-means."""
    residual = torch.from_numpy(x).clone()
    g = torch.Generator().manual_seed(seed)
    rows = torch.randperm(len(x), generator=g)[:sample]
    books, codes = [], []
    for m in range(levels):
        book = kmeans(residual[rows], size, iters, seed + m)
        code = nearest(residual, book)
        residual -= book[code]
        books.append(book)
        codes.append(code)
    return torch.stack(books).numpy(), torch.stack(codes, 1).numpy().astype(np.int64)


def encode(x: np.ndarray, books: np.ndarray) -> np.ndarray:
    """(N, M) greedy residual codes of `x` for (M, K, D) `books`."""
    residual, codes = torch.from_numpy(x).clone(), []
    for book in torch.from_numpy(books):
        code = nearest(residual, book)
        residual -= book[code]
        codes.append(code)
    return torch.stack(codes, 1).numpy().astype(np.int64)


def hir_embeddings(
    path: str, item_types: list[str], num_queries: int, num_train: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(N, D) items of `item_types`, (Q, D) sampled users, (T, D) other users (the
    router's sample) and a description."""
    table = pl.read_parquet(path)
    kinds = table["node_type"].cast(pl.String).to_numpy()
    vectors = table["embedding"].to_numpy().astype(np.float32)
    users = np.random.default_rng(seed).permutation(np.flatnonzero(kinds == "user"))
    picked = users[: min(num_queries, len(users))]
    train = users[len(picked) : len(picked) + num_train]
    items = vectors[np.isin(kinds, item_types)]
    return (
        np.ascontiguousarray(items),
        np.ascontiguousarray(vectors[np.sort(picked)]),
        np.ascontiguousarray(vectors[np.sort(train)]),
        f"HIR embeddings `{Path(path).name}` ({', '.join(item_types)} as items, users as queries)",
    )


@dataclass
class Method:
    name: str
    run: Callable[[slice], SearchResult]  # searches the queries of one chunk
    candidates: float = float("nan")  # items re-scored per query
    best_s: list[float] = field(default_factory=list)  # per chunk, best of the repeats
    ids: list[np.ndarray] = field(default_factory=list)  # per chunk, (b, 100)


def faiss_methods(items: np.ndarray, queries: np.ndarray, sample: np.ndarray, nlist: int):
    try:
        import faiss
    except ImportError:
        return [], "faiss not installed: no faiss rows"
    faiss.omp_set_num_threads(torch.get_num_threads())
    dim = items.shape[1]
    ivfpq = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, nlist, 16, 8, faiss.METRIC_INNER_PRODUCT)
    ivfpq.train(sample)
    refined = faiss.IndexRefineFlat(ivfpq)  # adds to the IVF-PQ and keeps exact vectors
    refined.add(items)
    refined.k_factor = 4.0
    flat = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    flat.train(sample)
    flat.add(items)
    hnsw = faiss.IndexHNSWFlat(dim, HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = HNSW_BUILD_EF
    hnsw.add(items)

    def searcher(index, **params: int) -> Callable[[slice], SearchResult]:
        def run(part: slice) -> SearchResult:
            if "nprobe" in params:
                faiss.extract_index_ivf(index).nprobe = params["nprobe"]
            if "ef" in params:
                index.hnsw.efSearch = params["ef"]
            scores, rows = index.search(queries[part], K_NN)
            return SearchResult(rows.astype(np.int64), scores, rows.astype(np.int64))

        return run

    methods = [Method(f"faiss IVF-PQ nprobe {p}", searcher(ivfpq, nprobe=p)) for p in (8, 32)]
    methods += [
        Method(f"faiss IVF-PQ nprobe {p} + refine", searcher(refined, nprobe=p)) for p in (8, 16)
    ]
    methods += [
        Method(f"{IVF_FLAT} nprobe {p}", searcher(flat, nprobe=p)) for p in (4, 6, 8, 12, 16)
    ]
    methods += [Method(f"{HNSW} efSearch {ef}", searcher(hnsw, ef=ef)) for ef in (128, 256, 512)]
    return methods, f"faiss {faiss.__version__}"


def recall_qps_at(curve: list[tuple[float, float]], recall: float) -> float | None:
    """Queries/s of a peer's (recall, queries/s) curve at `recall`, linear between its
    points; None above its best recall. Below its first point, that point's speed."""
    points = sorted(curve)
    if not points or recall > points[-1][0]:
        return None
    if recall <= points[0][0]:
        return points[0][1]
    for (r0, q0), (r1, q1) in zip(points, points[1:], strict=False):
        if r0 <= recall <= r1:
            share = 0.0 if r1 == r0 else (recall - r0) / (r1 - r0)
            return q0 + share * (q1 - q0)
    return None


def against_ivf_flat(results: list[tuple[Method, float, float]]) -> list[str]:
    """Each of our methods at recall@100 >= 0.9 against faiss IVFFlat at the same recall."""
    curve = [(r, q) for m, r, q in results if m.name.startswith(IVF_FLAT)]
    if not curve:
        return []
    lines = ["", f"ours against {IVF_FLAT} at the same recall@100 (linear between its points):"]
    verdicts = []
    for method, recall, qps in results:
        if "faiss" in method.name or "exact" in method.name or recall < 0.9:
            continue
        peer = recall_qps_at(curve, recall)
        if peer is None:
            lines.append(f"- {method.name}: recall {recall:.3f}, above IVFFlat's best")
            verdicts.append(True)
            continue
        lines.append(f"- {method.name}: {qps:,.0f} q/s against {peer:,.0f}, {qps / peer:.2f}x")
        verdicts.append(qps >= peer)
    met = any(verdicts)
    lines.append(
        f"goal (on or above the IVFFlat curve at recall@100 >= 0.9): "
        f"**{'met' if met else 'not met'}**"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--noise", type=float, default=0.8)
    parser.add_argument("--codebooks", type=int, default=4)
    parser.add_argument("--codebook-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=2000, help="queries per timed call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-faiss", action="store_true")
    parser.add_argument("--embeddings", help="parquet of HIR embeddings instead of synthetic")
    parser.add_argument(
        "--item-types", default="ad,advertiser,campaign,product,pixel", help="with --embeddings"
    )
    parser.add_argument(
        "--router-sample", type=int, default=10_000, help="queries the cell router learns from"
    )
    parser.add_argument("--record", help="append the result table to this Markdown file")
    args = parser.parse_args()
    levels, size = args.codebooks, args.codebook_size

    started = time.perf_counter()
    if args.embeddings:
        items, queries, train_queries, data = hir_embeddings(
            args.embeddings, args.item_types.split(","), args.queries, args.router_sample, args.seed
        )
        args.items, args.queries, args.dim = len(items), len(queries), items.shape[1]
        command = f"--embeddings {Path(args.embeddings).name} --item-types {args.item_types} "
    else:
        centers = mixture_centers(args.dim, args.seed)
        items = draw(centers, args.items, args.noise, args.seed + 1)
        queries = draw(centers, args.queries, args.noise, args.seed + 2)
        train_queries = draw(centers, args.router_sample, args.noise, args.seed + 3)
        data = f"noise {args.noise}"
        command = f"--items {args.items} --noise {args.noise} "
    books, codes = residual_kmeans(items, levels, size, args.seed)
    query_codes = encode(queries, books)
    quantize_s = time.perf_counter() - started
    started = time.perf_counter()
    index = InvertedIndex.build(np.arange(args.items), codes, size, items)
    uniform = InvertedIndex.build(
        np.arange(args.items), codes, size, items, token_weighting="uniform"
    )
    build_s = (time.perf_counter() - started) / 2
    started = time.perf_counter()
    router = CellRouter.fit(train_queries, items, codes[:, 0], size)
    router_s = time.perf_counter() - started
    own_bags = TokenBags.from_codes(query_codes, size)
    flat_books = books.reshape(levels * size, -1)  # (M*K, D)

    def probe(first: int, rest: int, **search: int | None) -> Callable[[slice], SearchResult]:
        def run(part: slice) -> SearchResult:
            q = queries[part]
            if rest:  # every codebook scores: dense bags
                scores = (q @ flat_books.T).reshape(len(q), levels, size)  # (B, M, K)
                bags = probe_weights(scores, [first] + [rest] * (levels - 1))
            else:  # codebook 0 only: its few probed tokens, as sparse bags
                bags = probe_queries(q, books[:1], first)
            return uniform.search(bags, K_NN, query_embeddings=q, gather_codebooks=1, **search)

        return run

    def routed(p: int) -> Callable[[slice], SearchResult]:
        def run(part: slice) -> SearchResult:
            q = queries[part]
            bags = probe_bags(router.scores(q)[:, None, :], p)
            return uniform.search(bags, K_NN, query_embeddings=q, gather_codebooks=1)

        return run

    cell_sizes = np.diff(index.offsets)[:size]  # (K,) items per codebook-0 token
    first_scores = queries @ books[0].T  # (B, K)

    def probed_items(p: int) -> float:
        best = np.argpartition(-first_scores, p - 1, axis=1)[:, :p]
        return float(cell_sizes[best].sum(axis=1).mean())

    def own(budget: int) -> Callable[[slice], SearchResult]:
        def run(part: slice) -> SearchResult:
            bags = own_bags.slice(part.start, part.stop)
            return index.search(bags, K_NN, query_embeddings=queries[part], num_candidates=budget)

        return run

    exact = Method("exact (matmul + top-k)", lambda part: exact_knn(queries[part], items, K_NN))
    exact.candidates = args.items
    methods = [exact]
    for budget in (1000, 3000):
        methods.append(Method(f"own BoM (M tokens, idf), cut {budget}", own(budget), budget))
    for p in (4, 6, 8, 10, 12):
        methods.append(Method(f"probe {p}, all", probe(p, 0), probed_items(p)))
    router_scores = router.scores(queries)

    def routed_items(p: int) -> float:
        best = np.argpartition(-router_scores, p - 1, axis=1)[:, :p]
        return float(cell_sizes[best].sum(axis=1).mean())

    for p in (6, 8, 10, 12):
        methods.append(Method(f"routed probe {p}, all", routed(p), routed_items(p)))
    for p, budget in ((8, 500), (12, 800), (12, 1000), (16, 1000)):
        methods.append(
            Method(
                f"probe {p}, ADC cut {budget}", probe(p, size - 1, num_candidates=budget), budget
            )
        )
    faiss_note = "faiss skipped (--no-faiss)"
    if not args.no_faiss:
        sample = items[np.random.default_rng(args.seed).permutation(len(items))[:50_000]]
        extra, faiss_note = faiss_methods(items, queries, sample, size)
        methods += extra

    chunks = [
        slice(start, min(start + args.chunk, args.queries))
        for start in range(0, args.queries, args.chunk)
    ]
    for repeat in range(args.repeats):  # methods interleaved chunk by chunk
        for c, part in enumerate(chunks):
            for method in methods:
                began = time.perf_counter()
                result = method.run(part)
                took = time.perf_counter() - began
                if repeat == 0:
                    method.best_s.append(took)
                    method.ids.append(result.ids)
                else:
                    method.best_s[c] = min(method.best_s[c], took)
    reference = np.concatenate(exact.ids)
    exact_qps = args.queries / sum(exact.best_s)

    lines = [
        f"### BoM retrieval, {args.items:,} items, {args.queries:,} queries, D = {args.dim}, "
        f"M = {levels}, K = {size}, {data}",
        "",
        f"command: `python benchmarks/retrieval.py {command}--queries {args.queries} "
        f"--codebooks {levels} --codebook-size {size}` "
        f"(each chunk of {args.chunk} queries timed {args.repeats} times, best kept; "
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, {os.cpu_count()} CPUs, {platform.machine()}; "
        f"{faiss_note})",
        "",
        f"quantizer fit + encode {quantize_s:.0f} s; index build {build_s:.2f} s; "
        f"cell router fit on {len(train_queries):,} other queries {router_s:.0f} s",
        "",
        "| method | re-scored / query | recall@100 | queries/s | x exact |",
        "|---|---:|---:|---:|---:|",
    ]
    goal, results = [], []
    for method in methods:
        qps = args.queries / sum(method.best_s)
        recall = neighbor_recall(np.concatenate(method.ids), reference, K_NN)
        results.append((method, recall, qps))
        rescored = "-" if np.isnan(method.candidates) else f"{method.candidates:,.0f}"
        lines.append(
            f"| {method.name} | {rescored} | {recall:.3f} | {qps:,.0f} | {qps / exact_qps:.1f} |"
        )
        if recall >= 0.9 and qps >= 10 * exact_qps and "faiss" not in method.name:
            goal.append(method)
    lines += [
        "",
        "goal (recall@100 >= 0.9 at >= 10x exact's queries/s): "
        + (f"**met** by {', '.join(m.name for m in goal)}" if goal else "**not met**"),
    ]
    lines += against_ivf_flat(results)
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
