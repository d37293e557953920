"""MovieLens-100K with its Freebase knowledge graph, mapped onto the input contract.

The data ships inside the `recbole` wheel (`recbole/dataset_example/ml-100k/`). It is read
from the installed files, never imported and never copied into this repository (its
licence forbids redistribution): install it with `pip install --no-deps recbole==1.2.0`.

The mapping (see docs/real-data.md):

- node types `user`, `ad` (the movies: the candidate item type of the rankers) and
  `entity` (Freebase entities a movie links to: actors, genres, directors, awards, ...);
- every rating is an exposure, `user -rate-> ad`, at its timestamp; a rating of
  `like_rating` or more is also a conversion, `user -like-> ad`, one second later (the
  rating follows the viewing), so an exposure is positive exactly when it was liked;
- knowledge-graph triples whose head is a movie become structural edges
  `ad -<relation>-> entity`, dated at the movie's first rating (when it enters the log);
  entities linked to fewer than `min_entity_movies` movies carry no cross-movie signal
  and are dropped;
- a movie exists from its first rating (`created_ts`), so movies first rated in the test
  window are the cold-start slice;
- content: a movie's title, year and genres; a user's age, gender and occupation;
- chronological windows at quantiles of the rating times.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.dataset_names import MOVIELENS_100K as NAME
from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import DatasetManifest, EdgeTypeSpec, TimeSplits
from hir_sdk.synth.world import World

RECBOLE_PIN = "recbole==1.2.0"
_PACKAGE_DIR = "recbole/dataset_example/ml-100k"
_FILES = ("inter", "item", "user", "kg", "link")
NODE_TYPES = ("user", "ad", "entity")


@dataclass(frozen=True)
class MovieLensConfig:
    like_rating: int = 4  # a rating at least this high is the conversion
    validation_share: float = 0.8  # share of ratings before the validation window
    test_share: float = 0.9  # share of ratings before the test window
    min_entity_movies: int = 2
    attribution_window_days: float = 1 / 24  # the like lands one second after the rating

    def __post_init__(self) -> None:
        if not 0 < self.validation_share < self.test_share < 1:
            raise ValueError("MovieLensConfig: need 0 < validation_share < test_share < 1")
        if not 1 <= self.like_rating <= 5 or self.min_entity_movies < 1:
            raise ValueError("MovieLensConfig: like_rating in 1..5, min_entity_movies >= 1")


def locate_movielens_100k() -> Path:
    """The folder of the MovieLens-100K files inside the installed `recbole` wheel."""
    try:
        dist = importlib.metadata.distribution("recbole")
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            f"MovieLens-100K is read from the recbole package, which is not installed; "
            f"run: pip install --no-deps {RECBOLE_PIN}"
        ) from None
    return _checked(Path(str(dist.locate_file(_PACKAGE_DIR))), f"recbole {dist.version}")


def _checked(folder: Path, what: str) -> Path:
    missing = [f"ml-100k.{ext}" for ext in _FILES if not (folder / f"ml-100k.{ext}").exists()]
    if missing:
        raise InputError(f"{what} lacks {', '.join(missing)}; install {RECBOLE_PIN}", file=folder)
    return folder


def _read(folder: Path, ext: str, names: list[str]) -> pl.DataFrame:
    """A recbole atomic file: tab-separated, a `name:type` header, no quoting."""
    path = folder / f"ml-100k.{ext}"
    frame = pl.read_csv(path, separator="\t", quote_char=None, infer_schema=False, has_header=True)
    if frame.width != len(names):
        raise InputError(f"expected {len(names)} columns, found {frame.columns}", file=path)
    return frame.rename(dict(zip(frame.columns, names, strict=True)))


def edge_rows(
    frame: pl.DataFrame,
    src_type: str,
    src: pl.Expr,
    dst_type: str,
    dst: pl.Expr,
    edge_type: pl.Expr,
    ts: pl.Expr,
) -> pl.DataFrame:
    """Rows of `frame` as edges-table rows."""
    return frame.select(
        pl.lit(src_type).alias("src_type"),
        src.alias("src_id"),
        pl.lit(dst_type).alias("dst_type"),
        dst.alias("dst_id"),
        edge_type.alias("edge_type"),
        ts.alias("ts"),
    )


def movielens_100k(
    folder: str | Path | None = None, config: MovieLensConfig | None = None
) -> World:
    """MovieLens-100K as a `World` (manifest and arrow tables, no truth), ready for
    `hir_sdk.synth.write_world`.

    Args:
        folder: a folder with the five `ml-100k.*` files in recbole's format (default:
            the installed recbole package's copy).
        config: the like threshold, the window quantiles and the entity filter.

    Raises:
        InputError: recbole is not installed, or a file is missing.
    """
    config = config or MovieLensConfig()
    if folder is None:
        folder = locate_movielens_100k()
    else:
        folder = _checked(Path(folder), "the MovieLens-100K folder")
    inter = _read(folder, "inter", ["user", "item", "rating", "ts"]).select(
        pl.col("user").cast(pl.Int64),
        pl.col("item").cast(pl.Int64),
        pl.col("rating").cast(pl.Float64),
        pl.col("ts").cast(pl.Float64).cast(pl.Int64),
    )
    items = _read(folder, "item", ["item", "title", "year", "genres"]).with_columns(
        pl.col("item").cast(pl.Int64), pl.col("year").cast(pl.Int64, strict=False)
    )
    users = _read(folder, "user", ["user", "age", "gender", "occupation", "zip"]).with_columns(
        pl.col("user").cast(pl.Int64), pl.col("age").cast(pl.Int64, strict=False)
    )
    link = _read(folder, "link", ["item", "entity"]).with_columns(pl.col("item").cast(pl.Int64))
    kg = _read(folder, "kg", ["head", "relation", "tail"])

    first = inter.group_by("item").agg(pl.col("ts").min().alias("created_ts"))
    items = items.join(first, on="item", how="inner").sort("item")  # movies with a rating
    triples = (
        kg.join(link, left_on="head", right_on="entity", how="inner")
        .join(items.select("item", "created_ts"), on="item", how="inner")
        .select("item", "relation", "tail", "created_ts")
        .unique(maintain_order=True)
    )
    shared = (
        triples.group_by("tail")
        .agg(pl.col("item").n_unique().alias("movies"))
        .filter(pl.col("movies") >= config.min_entity_movies)
        .sort("tail")
        .with_row_index("entity_id")
    )
    triples = triples.join(shared, on="tail", how="inner").sort("item", "relation", "tail")
    relations = sorted(triples["relation"].unique().to_list())

    ts = inter["ts"].to_numpy()
    splits = TimeSplits(
        start=int(ts.min()),
        validation_start=int(np.quantile(ts, config.validation_share)),
        test_start=int(np.quantile(ts, config.test_share)),
        end=int(ts.max()) + 2,  # the last like lands one second after the last rating
    )
    manifest = DatasetManifest(
        name=NAME,
        node_types=NODE_TYPES,
        edge_types=(
            EdgeTypeSpec("user", "rate", "ad", "exposure", 30.0),
            EdgeTypeSpec("user", "like", "ad", "conversion", 30.0),
            *(EdgeTypeSpec("ad", rel, "entity", "structural", 365.0) for rel in relations),
        ),
        time=splits,
        attribution_window_days=config.attribution_window_days,
        owner_type=None,
    )
    likes = inter.filter(pl.col("rating") >= config.like_rating)
    user, item = pl.col("user"), pl.col("item")
    edges = pl.concat(
        [
            edge_rows(inter, "user", user, "ad", item, pl.lit("rate"), pl.col("ts")),
            edge_rows(likes, "user", user, "ad", item, pl.lit("like"), pl.col("ts") + 1),
            edge_rows(
                triples,
                "ad",
                item,
                "entity",
                pl.col("entity_id").cast(pl.Int64),
                pl.col("relation"),
                pl.col("created_ts"),
            ),
        ]
    ).sort("ts", maintain_order=True)
    nodes = pl.concat(  # diagonal: each type's feature columns are null for the others
        [
            users.select(
                pl.lit("user").alias("node_type"),
                user.alias("node_id"),
                pl.lit(None, pl.Int64).alias("created_ts"),
                pl.col("age").cast(pl.Float64),
                (pl.col("gender") == "F").cast(pl.Float64).alias("female"),
            ),
            items.select(
                pl.lit("ad").alias("node_type"),
                item.alias("node_id"),
                pl.col("created_ts"),
                pl.col("year").cast(pl.Float64),
            ),
            shared.select(
                pl.lit("entity").alias("node_type"),
                pl.col("entity_id").cast(pl.Int64).alias("node_id"),
            ),
        ],
        how="diagonal",
    )
    content = pl.concat(
        [
            items.select(
                pl.lit("ad").alias("node_type"),
                pl.col("item").alias("node_id"),
                pl.format(
                    "{} ({}). Genres: {}.",
                    pl.col("title"),
                    pl.col("year").cast(pl.String).fill_null("year unknown"),
                    pl.col("genres").fill_null("unknown").str.replace_all(" ", ", "),
                ).alias("text"),
            ),
            users.select(
                pl.lit("user").alias("node_type"),
                pl.col("user").alias("node_id"),
                pl.format(
                    "{}-year-old {} {}",
                    pl.col("age"),
                    pl.when(pl.col("gender") == "F").then(pl.lit("woman")).otherwise(pl.lit("man")),
                    pl.col("occupation"),
                ).alias("text"),
            ),
        ]
    )
    return World(
        manifest=manifest,
        nodes=nodes.to_arrow(),
        edges=edges.to_arrow(),
        content=content.to_arrow(),
        truth={},
    )
