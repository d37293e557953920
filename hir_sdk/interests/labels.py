"""Readable labels for interest primitives: top content keywords and top entities.

Keywords: the words of the member entities' text (lower-cased, letters only, at least 3
long, a short English stop list removed), scored per primitive by TF-IDF:

    score(w, p) = count(w in p's texts) / words in p's texts * log(P / primitives with w)

so a word that every primitive uses ("sale", "shipping") scores near zero. Top entities:
the members whose embeddings are closest (cosine) to their primitive's prototype.
Ties are broken alphabetically / by row, so labels are deterministic.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hir_sdk.interests.entity_embeddings import EntityEmbeddings

STOP_WORDS = frozenset(
    "the and for with you your our are this that from all new now get its".split()
    + "one out off per has have was not but can more most very into over".split()
)


def _words(content: pl.DataFrame) -> pl.DataFrame:
    return (
        content.select(
            pl.col("node_type").cast(pl.String),
            pl.col("node_id").cast(pl.String),
            pl.col("text").str.to_lowercase().str.extract_all(r"[a-z]{3,}").alias("word"),
        )
        .explode("word")
        .drop_nulls("word")
        .filter(~pl.col("word").is_in(list(STOP_WORDS)))
    )


def label_primitives(
    snapshot: EntityEmbeddings,
    content: pl.DataFrame | None,
    level: int,
    *,
    keywords: int = 5,
    entities: int = 3,
) -> pl.DataFrame:
    """One row per used primitive of `level`: primitive, size, keywords (list of str, empty
    without content), top_entities (list of "type:id"), label (the keywords joined)."""
    table = snapshot.table.select(
        pl.col("node_type").cast(pl.String),
        pl.col("node_id").cast(pl.String),
        pl.col(f"cluster_l{level}").alias("primitive"),
    ).with_row_index("row")
    sizes = table.group_by("primitive").len("size")
    # top entities: cosine to the primitive's prototype
    z = snapshot.embeddings()
    prototypes = snapshot.prototypes[level]
    cluster = table["primitive"].to_numpy()
    closeness = np.einsum("nd,nd->n", z, prototypes[cluster])
    top = (
        table.with_columns(closeness=pl.Series(closeness))
        .sort(["primitive", "closeness", "row"], descending=[False, True, False])
        .group_by("primitive", maintain_order=True)
        .head(entities)
        .group_by("primitive", maintain_order=True)
        .agg((pl.col("node_type") + ":" + pl.col("node_id")).alias("top_entities"))
    )
    out = sizes.join(top, on="primitive")
    if content is None or len(content) == 0:
        words = pl.DataFrame(
            {"primitive": out["primitive"], "keywords": [[] for _ in range(len(out))]},
            schema={"primitive": out["primitive"].dtype, "keywords": pl.List(pl.String)},
        )
    else:
        tokens = _words(content).join(table, on=["node_type", "node_id"])
        counts = tokens.group_by("primitive", "word").len("count")
        used = counts["primitive"].n_unique()
        scored = counts.with_columns(
            tf=pl.col("count") / pl.col("count").sum().over("primitive"),
            idf=(used / pl.col("primitive").n_unique().over("word")).log(),
        ).with_columns(score=pl.col("tf") * pl.col("idf"))
        words = (
            scored.sort(["primitive", "score", "word"], descending=[False, True, False])
            .group_by("primitive", maintain_order=True)
            .head(keywords)
            .group_by("primitive", maintain_order=True)
            .agg(pl.col("word").alias("keywords"))
        )
    return (
        out.join(words, on="primitive", how="left")
        .with_columns(
            pl.col("keywords").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        )
        .with_columns(label=pl.col("keywords").list.join(" "))
        .sort("primitive")
    )
