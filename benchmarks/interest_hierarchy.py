"""The interest hierarchy and BoM retrieval of a trained encoder on a synthetic world.

    python benchmarks/interest_hierarchy.py [--scale small] [--steps 300] [--record FILE]
                                            [--figure docs/figures/interest_hierarchy.svg]

Trains the encoder (world knowledge on, per-type centred embeddings), embeds every
entity as of the test start and reports:
- BoM quantizers (product, residual, additive) side by side on the snapshot's embeddings;
- NMI of each level's clusters of ads, products and advertisers against the planted
  super-interest, mid and leaf;
- super-graph density: user -> ad engagement edges, raw vs aggregated to primitives;
- the labels of the largest coarse primitives (top keywords, by TF-IDF);
- retrieval: for users who convert in the test window, recall@K of the ads they convert
  on, from the BoM index (own tokens, multi-probe), exact k-NN and popularity
  (`hir_sdk.evaluation.conversion_retrieval`, as `hir demo` reports it).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from centred_encoder import train_centred_encoder
from publish import publish
from sklearn.metrics import normalized_mutual_info_score

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, ResidualQuantizer
from hir_sdk.evaluation.conversion_retrieval import conversion_recall
from hir_sdk.interests import embed_entities
from hir_sdk.interests.hierarchy import parents, snapshot_rows, super_graph
from hir_sdk.interests.hierarchy_svg import hierarchy_svg
from hir_sdk.interests.labels import label_primitives
from hir_sdk.schema import load_dataset
from hir_sdk.synth import SCALES


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", choices=sorted(SCALES))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--record")
    parser.add_argument("--figure", help="write the hierarchy picture (SVG) here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, trainer = train_centred_encoder(args.scale, args.steps, Path(tmp))
        started = time.perf_counter()
        snap = embed_entities(Path(tmp) / "run", data, "test_start")
        embed_s = time.perf_counter() - started
        truth = pl.read_parquet(data / "truth" / "entities.parquet").with_columns(
            pl.col("node_type").cast(pl.String)
        )
        content = load_dataset(data).content
    graph = trainer.graph
    row_of = snapshot_rows(snap, graph)
    sizes = [len(p) for p in snap.prototypes]
    lines = [
        f"### interest hierarchy and BoM retrieval, `{args.scale}`, {args.steps} training "
        "steps (CPU, world knowledge on)",
        "",
        f"command: `python benchmarks/interest_hierarchy.py --scale {args.scale} --steps "
        f"{args.steps}`; embedded {len(snap.table):,} entities as of the test start in "
        f"{embed_s:.0f} s; BoM {snap.meta['bom']['codebooks']}x{snap.meta['bom']['codewords']}"
        f", relative reconstruction error {snap.meta['bom']['relative_error']:.3f}",
        "",
        "| level | primitives | NMI vs planted super | mid | leaf "
        "| user->ad raw density | primitive density | raw edges per primitive pair |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    picked = ("ad", "product", "advertiser")
    planted = pl.concat([truth.filter(pl.col("node_type") == k) for k in picked])
    idx = np.concatenate(
        [
            graph.index(k, truth.filter(pl.col("node_type") == k)["node_id"].to_numpy())
            for k in picked
        ]
    )
    inside = row_of[idx] >= 0
    for level, size in enumerate(sizes):
        clusters = snap.clusters(level)[row_of[idx[inside]]]
        nmi = [
            normalized_mutual_info_score(planted[name].to_numpy()[inside], clusters)
            for name in ("super", "mid", "leaf")
        ]
        d = (
            super_graph(snap, graph, level)
            .density.filter((pl.col("src_type") == "user") & (pl.col("dst_type") == "ad"))
            .row(0, named=True)
        )
        lines.append(
            f"| {level} | {size} | {nmi[0]:.3f} | {nmi[1]:.3f} | {nmi[2]:.3f} "
            f"| {d['raw_density']:.2e} | {d['primitive_density']:.3f} "
            f"| {d['edges_per_primitive_pair']:,.1f} |"
        )
    coarse = label_primitives(snap, content, 0)
    fine = label_primitives(snap, content, 1)
    lines += [
        "",
        "largest coarse primitives and their labels:",
        "",
        "| primitive | entities | keywords | closest entities |",
        "|---:|---:|---|---|",
    ]
    for r in coarse.sort("size", descending=True).head(8).iter_rows(named=True):
        lines.append(
            f"| {r['primitive']} | {r['size']:,} | {r['label']} | {', '.join(r['top_entities'])} |"
        )
    if args.figure:
        Path(args.figure).write_text(
            hierarchy_svg(coarse, fine, parents(snap, 1).tolist()), encoding="utf-8"
        )
    # ---- BoM quantizers side by side on these embeddings ---------------------------------
    z_all = snap.embeddings()
    m_books, k_words = snap.meta["bom"]["codebooks"], snap.meta["bom"]["codewords"]
    lines += [
        "",
        f"BoM quantizers on these {len(z_all):,} x {z_all.shape[1]} embeddings "
        f"({m_books}x{k_words}, fitted on a seeded 80 %, relative error):",
        "",
        "| quantizer | fitted rows | held-out rows | fit s |",
        "|---|---:|---:|---:|",
    ]
    order = np.random.default_rng(0).permutation(len(z_all))
    fit_rows, held = z_all[order[: len(z_all) * 4 // 5]], z_all[order[len(z_all) * 4 // 5 :]]
    for name, quantizer in (
        ("PQ", ProductQuantizer(m_books, k_words)),
        ("RQ (greedy)", ResidualQuantizer(m_books, k_words)),
        ("AQ (additive, the BoM default)", AdditiveQuantizer(m_books, k_words)),
    ):
        started = time.perf_counter()
        quantizer.fit(fit_rows, seed=0)
        fit_s = time.perf_counter() - started
        lines.append(
            f"| {name} | {quantizer.relative_error(fit_rows):.4f} "
            f"| {quantizer.relative_error(held):.4f} | {fit_s:.0f} |"
        )
    # ---- retrieval of the ads users convert on in the test window -----------------------
    started = time.perf_counter()
    table = conversion_recall(graph, snap).render()
    retrieval_s = time.perf_counter() - started
    lines += ["", f"retrieval (all four methods: {retrieval_s:.1f} s): " + table[0], *table[1:]]
    publish(lines, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
