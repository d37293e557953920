"""The MovieLens CSV releases (ml-latest-small, ml-latest, ml-25m, ml-32m), mapped onto
the input contract.

GroupLens publishes these as zip files of CSVs with one layout: `ratings.csv`
(`userId,movieId,rating,timestamp`, half-star ratings), `movies.csv`
(`movieId,title,genres`, genres separated by `|`) and, optionally, `tags.csv`
(`userId,movieId,tag,timestamp`). Their licence forbids redistribution, so the SDK
ships none of them: download one, unzip it, and point `folder` at it.

The mapping (see docs/real-data.md), the same as MovieLens-100K's where the two agree:

- node types `user`, `ad` (the movies: the candidate item type of the rankers) and
  `genre`;
- every rating is an exposure, `user -rate-> ad`, at its timestamp; a rating of
  `like_rating` or more is also a conversion, `user -like-> ad`, one second later, so an
  exposure is positive exactly when it was liked;
- a tag a user puts on a movie is an engagement, `user -tag-> ad`, at its timestamp
  (with `tags`): evidence of interest that arrives over time, like a click;
- a movie's genres are structural edges `ad -genre-> genre`, dated when the movie
  enters the log; "(no genres listed)" gives none;
- a movie exists from its first rating or tag, whichever comes first (`created_ts`, so
  no edge of it comes before it); movies nobody rated are left out;
- content: a movie's title (with its year) and genres. Users have none: these releases
  say nothing about them. Tags are not content: they are written over time, and content
  is read as known at every cutoff;
- chronological windows at quantiles of the rating times.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.dataset_names import MOVIELENS_CSV as NAME
from hir_sdk.datasets.csv_encoding import encoding_error
from hir_sdk.datasets.movielens import edge_rows
from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import MAX_TIME, DatasetManifest, EdgeTypeSpec, TimeSplits
from hir_sdk.synth.world import World

NODE_TYPES = ("user", "ad", "genre")
NO_GENRES = "(no genres listed)"
_COLUMNS = {
    "ratings.csv": ("userId", "movieId", "rating", "timestamp"),
    "movies.csv": ("movieId", "title", "genres"),
    "tags.csv": ("userId", "movieId", "tag", "timestamp"),
}


@dataclass(frozen=True)
class MovieLensCsvConfig:
    like_rating: float = 4.0  # a rating at least this high is the conversion
    validation_share: float = 0.8  # share of ratings before the validation window
    test_share: float = 0.9  # share of ratings before the test window
    tags: bool = True  # tags.csv, where present, as engagement edges
    attribution_window_days: float = 1 / 24  # the like lands one second after the rating

    def __post_init__(self) -> None:
        if not 0 < self.validation_share < self.test_share < 1:
            raise ValueError("MovieLensCsvConfig: need 0 < validation_share < test_share < 1")
        if not 0.5 <= self.like_rating <= 5:
            raise ValueError("MovieLensCsvConfig: like_rating in 0.5..5")


def _read(folder: Path, name: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """One of the release's CSVs with its documented header, cast to `schema`; an
    `InputError` naming the file, the column and offending values otherwise."""
    path = folder / name
    if not path.is_file():
        raise InputError(f"missing {name}: is this an unzipped MovieLens CSV release?", file=path)
    try:
        frame = pl.read_csv(path, infer_schema=False)  # drops a UTF-8 byte-order mark
    except pl.exceptions.PolarsError as err:
        raise encoding_error(path) or InputError(f"not a CSV file ({err})", file=path) from None
    missing = [c for c in _COLUMNS[name] if c not in frame.columns]
    if missing:
        # ASCII in UTF-16 parses, as a header of other names
        raise encoding_error(path) or InputError(
            f"expected columns {list(_COLUMNS[name])}, found {frame.columns}", file=path
        )
    frame = frame.select(_COLUMNS[name])
    for column, dtype in schema.items():
        cast = frame[column].cast(dtype, strict=False)
        bad = frame[column].filter(cast.is_null())
        if len(bad):
            raise InputError(
                f"{len(bad):,} values are not {dtype} (first: {bad.head(3).to_list()})",
                file=path,
                column=column,
            )
        frame = frame.with_columns(cast.alias(column))
    return frame


def _check_ratings(ratings: pl.DataFrame, path: Path) -> None:
    """Ratings that are numbers and timestamps that are Unix seconds, or an `InputError`
    naming the values."""
    rating = ratings["rating"]
    bad = rating.filter(~rating.is_finite())
    if len(bad):
        raise InputError(
            f"{len(bad):,} ratings are not finite (first: {bad.head(3).to_list()})",
            file=path,
            column="rating",
        )
    _check_times(ratings["ts"], path)


def _check_times(ts: pl.Series, path: Path) -> None:
    """Timestamps in Unix seconds, or an `InputError` naming the values. The bound leaves
    room for a like one second after its rating and the end one after that."""
    for wrong, what in (
        (ts.filter(ts < 0), "negative"),
        (ts.filter(ts > MAX_TIME - 2), "after 9999-12-31 (Unix seconds expected: milliseconds?)"),
    ):
        if len(wrong):
            raise InputError(
                f"{len(wrong):,} timestamps are {what} (first: {wrong.head(3).to_list()})",
                file=path,
                column="timestamp",
            )


def _movies(folder: Path) -> pl.DataFrame:
    """movies.csv with one row per movie; an empty title or genre list reads as none."""
    path = folder / "movies.csv"
    movies = _read(folder, "movies.csv", {"movieId": pl.Int64}).rename({"movieId": "item"})
    twice = movies.filter(pl.col("item").is_duplicated())["item"].unique().sort()
    if len(twice):
        raise InputError(
            f"{len(twice):,} movieId(s) on more than one row (first: {twice.head(3).to_list()})",
            file=path,
            column="movieId",
        )
    parts = pl.col("genres").fill_null("").str.split("|").list.eval(pl.element().str.strip_chars())
    genres = parts.list.eval(pl.element().filter(pl.element() != "")).list.join("|")
    return movies.with_columns(
        pl.col("title").fill_null("").str.strip_chars(),
        pl.when(genres == "").then(pl.lit(NO_GENRES)).otherwise(genres).alias("genres"),
    )


def _splits(
    ts: np.ndarray, tags: pl.DataFrame, config: MovieLensCsvConfig, path: Path
) -> TimeSplits:
    """The windows at the ratings' time quantiles, or an `InputError` when the ratings'
    times do not give three windows one after the other."""
    last = max(int(ts.max()) + 1, int(tags["ts"].max()) if len(tags) else 0)
    start = int(min(ts.min(), tags["ts"].min() if len(tags) else ts.min()))
    validation_start = int(np.quantile(ts, config.validation_share))
    test_start = int(np.quantile(ts, config.test_share))
    if not start < validation_start < test_start:
        raise InputError(
            f"the timestamps ({start} to {last - 1}, tags included) leave no training, "
            f"validation and test windows one after the other: the ratings' "
            f"{config.validation_share:g} and {config.test_share:g} quantiles are "
            f"{validation_start} and {test_start}, and the windows need them to differ and "
            "to come after the first timestamp (ratings spread over more times)",
            file=path,
            column="timestamp",
        )
    # the last like lands one second after the last rating
    return TimeSplits(
        start=start, validation_start=validation_start, test_start=test_start, end=last + 1
    )


def movielens_csv(folder: str | Path, config: MovieLensCsvConfig | None = None) -> World:
    """A MovieLens CSV release as a `World` (manifest and arrow tables, no truth), ready
    for `hir_sdk.synth.write_world`.

    Args:
        folder: the unzipped release (`ratings.csv`, `movies.csv`, optionally `tags.csv`).
        config: the like threshold, the window quantiles and whether to read tags.

    Raises:
        InputError: a file is missing or not UTF-8, or a column is absent or malformed.
    """
    config = config or MovieLensCsvConfig()
    folder = Path(folder)
    ratings = _read(
        folder,
        "ratings.csv",
        {"userId": pl.Int64, "movieId": pl.Int64, "rating": pl.Float64, "timestamp": pl.Int64},
    ).rename({"userId": "user", "movieId": "item", "timestamp": "ts"})
    if ratings.is_empty():
        raise InputError("no ratings", file=folder / "ratings.csv")
    _check_ratings(ratings, folder / "ratings.csv")
    movies = _movies(folder)
    first = ratings.group_by("item").agg(pl.col("ts").min().alias("created_ts"))
    movies = movies.join(first, on="item", how="inner").sort("item")  # movies with a rating
    unknown = ratings.filter(~pl.col("item").is_in(movies["item"].implode()))
    if len(unknown):
        raise InputError(
            f"{len(unknown):,} ratings of movies not in movies.csv "
            f"(first: {unknown['item'].head(3).to_list()})",
            file=folder / "ratings.csv",
            column="movieId",
        )
    tags = pl.DataFrame(schema={"user": pl.Int64, "item": pl.Int64, "ts": pl.Int64})
    if config.tags and (folder / "tags.csv").is_file():
        tags = (
            _read(
                folder, "tags.csv", {"userId": pl.Int64, "movieId": pl.Int64, "timestamp": pl.Int64}
            )
            .rename({"userId": "user", "movieId": "item", "timestamp": "ts"})
            # a tag of a movie nobody rated, or by a user who rated nothing, has no node
            .filter(
                pl.col("item").is_in(movies["item"].implode())
                & pl.col("user").is_in(ratings["user"].implode())
            )
            .select("user", "item", "ts")
        )
        _check_times(tags["ts"], folder / "tags.csv")
        # a movie enters the log with its first rating or tag, whichever comes first
        tagged = tags.group_by("item").agg(pl.col("ts").min().alias("tagged"))
        movies = (
            movies.join(tagged, on="item", how="left")
            .with_columns(pl.min_horizontal("created_ts", "tagged").alias("created_ts"))
            .drop("tagged")
        )
    genres = (
        movies.select("item", "created_ts", pl.col("genres").str.split("|").alias("genre"))
        .explode("genre")
        .with_columns(pl.col("genre").str.strip_chars())
        .filter(pl.col("genre").is_not_null() & ~pl.col("genre").is_in(["", NO_GENRES]))
    )
    names = genres["genre"].unique().sort()
    genre_ids = pl.DataFrame({"genre": names, "genre_id": np.arange(len(names), dtype=np.int64)})
    genres = genres.join(genre_ids, on="genre").sort("item", "genre_id")

    splits = _splits(ratings["ts"].to_numpy(), tags, config, folder / "ratings.csv")
    manifest = DatasetManifest(
        name=NAME,
        node_types=NODE_TYPES,
        edge_types=(
            EdgeTypeSpec("user", "rate", "ad", "exposure", 30.0),
            EdgeTypeSpec("user", "like", "ad", "conversion", 30.0),
            EdgeTypeSpec("user", "tag", "ad", "engagement", 30.0),
            EdgeTypeSpec("ad", "genre", "genre", "structural", 365.0),
        ),
        time=splits,
        attribution_window_days=config.attribution_window_days,
        owner_type=None,
    )
    user, item, at, created = pl.col("user"), pl.col("item"), pl.col("ts"), pl.col("created_ts")
    likes = ratings.filter(pl.col("rating") >= config.like_rating)
    edges = pl.concat(
        [
            edge_rows(ratings, "user", user, "ad", item, pl.lit("rate"), at),
            edge_rows(likes, "user", user, "ad", item, pl.lit("like"), at + 1),
            edge_rows(tags, "user", user, "ad", item, pl.lit("tag"), at),
            edge_rows(genres, "ad", item, "genre", pl.col("genre_id"), pl.lit("genre"), created),
        ]
    ).sort("ts", maintain_order=True)
    year = pl.col("title").str.extract(r"\((\d{4})\)\s*$").cast(pl.Float64)
    nodes = pl.concat(  # diagonal: each type's feature columns are null for the others
        [
            ratings.select(user.unique().sort()).select(
                pl.lit("user").alias("node_type"),
                user.alias("node_id"),
                pl.lit(None, pl.Int64).alias("created_ts"),
            ),
            movies.select(
                pl.lit("ad").alias("node_type"),
                item.alias("node_id"),
                pl.col("created_ts"),
                year.alias("year"),
            ),
            genre_ids.select(
                pl.lit("genre").alias("node_type"),
                pl.col("genre_id").alias("node_id"),
                pl.lit(None, pl.Int64).alias("created_ts"),
            ),
        ],
        how="diagonal",
    )
    genre_text = pl.col("genres").str.replace_all("|", ", ", literal=True)
    content = movies.select(
        pl.lit("ad").alias("node_type"),
        item.alias("node_id"),
        pl.when(pl.col("title") == "")
        .then(pl.format("Genres: {}.", genre_text))
        .otherwise(pl.format("{}. Genres: {}.", pl.col("title"), genre_text))
        .alias("text"),
    )
    return World(
        manifest=manifest,
        nodes=nodes.to_arrow(),
        edges=edges.to_arrow(),
        content=content.to_arrow(),
        truth={},
    )
