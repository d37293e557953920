"""A MovieLens CSV release (ml-latest-small's layout), mapped onto the input contract."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import polars as pl
import pytest

from hir_sdk.cli.main import main
from hir_sdk.datasets import MovieLensCsvConfig, csv_encoding, movielens_csv
from hir_sdk.errors import InputError
from hir_sdk.schema import load_dataset
from hir_sdk.synth import write_world

RATINGS = [  # userId, movieId, rating, timestamp
    (1, 10, 4.5, 1000), (1, 20, 2.0, 1100), (2, 10, 4.0, 1200), (2, 30, 3.5, 1300),
    (3, 20, 4.0, 1400), (3, 30, 5.0, 1500), (1, 30, 0.5, 1600), (2, 20, 5.0, 1700),
    (3, 10, 3.0, 1800), (1, 40, 4.0, 1900),
]  # fmt: skip
MOVIES = [
    (10, "Toy Story (1995)", "Adventure|Animation|Children"),
    (20, "Heat (1995)", "Action|Crime"),
    (30, '"Fargo, Again (1996)"', "Crime"),  # a quoted title with a comma
    (40, "Alien", "(no genres listed)"),  # no year, no genres
    (50, "Never Rated (1990)", "Drama"),
]
TAGS = [(2, 10, "pixar", 1250), (3, 30, "snow", 1950), (1, 50, "unrated movie", 1300)]


def _write(folder, name, header, rows):
    lines = [header, *(",".join(map(str, r)) for r in rows)]
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def release(tmp_path):
    folder = tmp_path / "ml-latest-small"
    folder.mkdir()
    _write(folder, "ratings.csv", "userId,movieId,rating,timestamp", RATINGS)
    _write(folder, "movies.csv", "movieId,title,genres", MOVIES)
    _write(folder, "tags.csv", "userId,movieId,tag,timestamp", TAGS)
    return folder


def test_the_mapping_on_a_hand_made_release(release, tmp_path):
    world = movielens_csv(release, MovieLensCsvConfig(validation_share=0.5, test_share=0.8))
    edges = pl.from_arrow(world.edges)
    by_type = {t: edges.filter(pl.col("edge_type") == t) for t in ("rate", "like", "tag", "genre")}
    assert by_type["rate"].height == 10
    # ratings of 4 stars or more are likes, one second after the rating
    like = by_type["like"]
    assert sorted(zip(like["src_id"], like["dst_id"], like["ts"], strict=True)) == [
        (1, 10, 1001), (1, 40, 1901), (2, 10, 1201), (2, 20, 1701), (3, 20, 1401), (3, 30, 1501)
    ]  # fmt: skip
    # tags are engagements at their time; a tag of a movie nobody rated has no node
    tag = by_type["tag"]
    assert sorted(zip(tag["src_id"], tag["dst_id"], tag["ts"], strict=True)) == [
        (2, 10, 1250), (3, 30, 1950)
    ]  # fmt: skip
    # genres are structural, dated at the movie's first rating; "(no genres listed)" is none
    genre = by_type["genre"]
    names = ["Action", "Adventure", "Animation", "Children", "Crime"]  # ids in name order
    got = sorted(zip(genre["src_id"], genre["dst_id"], genre["ts"], strict=True))
    assert got == sorted(
        [(10, names.index(g), 1000) for g in ("Adventure", "Animation", "Children")]
        + [(20, names.index(g), 1100) for g in ("Action", "Crime")]
        + [(30, names.index("Crime"), 1300)]
    )
    assert edges["ts"].is_sorted()
    nodes = pl.from_arrow(world.nodes)
    ads = nodes.filter(pl.col("node_type") == "ad").sort("node_id")
    assert ads["node_id"].to_list() == [10, 20, 30, 40]  # never-rated movies are left out
    assert ads["created_ts"].to_list() == [1000, 1100, 1300, 1900]
    assert ads["year"].to_list() == [1995.0, 1995.0, 1996.0, None]
    assert nodes.filter(pl.col("node_type") == "user")["node_id"].sort().to_list() == [1, 2, 3]
    assert nodes.filter(pl.col("node_type") == "genre").height == len(names)
    text = world.content["text"].to_pylist()
    content = dict(zip(world.content["node_id"].to_pylist(), text, strict=True))
    assert set(world.content["node_type"].to_pylist()) == {"ad"}  # users have no content
    assert content[10] == "Toy Story (1995). Genres: Adventure, Animation, Children."
    assert content[30] == "Fargo, Again (1996). Genres: Crime."
    t = world.manifest.time
    ts = np.array([r[3] for r in RATINGS])
    assert (t.start, t.end) == (1000, 1951)  # the last event (a tag at 1950) falls inside
    assert (t.validation_start, t.test_start) == (
        int(np.quantile(ts, 0.5)),
        int(np.quantile(ts, 0.8)),
    )
    roles = {spec.rel: spec.role for spec in world.manifest.edge_types}
    assert roles == {
        "rate": "exposure",
        "like": "conversion",
        "tag": "engagement",
        "genre": "structural",
    }
    assert world.manifest.owner_type is None and world.truth == {}
    data = write_world(world, tmp_path / "data")
    assert load_dataset(data).edges.height == edges.height  # passes the input validation


def test_tags_are_optional(release):
    (release / "tags.csv").unlink()
    edges = pl.from_arrow(movielens_csv(release).edges)
    assert "tag" not in edges["edge_type"].to_list()
    assert movielens_csv(release).manifest.time.end == 1902  # one second after the last like
    config = MovieLensCsvConfig(tags=False)
    assert movielens_csv(release, config).edges.num_rows == edges.height


def test_the_command_writes_the_input_format(release, tmp_path, capsys):
    out = tmp_path / "ml"
    assert main(["dataset", "movielens-csv", "--source", str(release), "--out", str(out)]) == 0
    assert "wrote movielens-csv" in capsys.readouterr().out
    assert load_dataset(out).manifest.name == "movielens-csv"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["movielens-csv"], "--source is for movielens-csv"),
        (["movielens-100k", "--source", "{release}"], "--source is for movielens-csv"),
        (["movielens-csv", "--source", "{release}/nowhere"], "missing ratings.csv"),
    ],
)
def test_command_mistakes_are_one_message(argv, message, release, tmp_path, capsys):
    out = tmp_path / "ml"
    argv = [a.format(release=release) for a in argv]
    assert main(["dataset", *argv, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()  # nothing half-written


@pytest.mark.parametrize(
    ("file", "text", "message"),
    [
        ("movies.csv", "movieId,name\n10,x\n", r"movies\.csv: expected columns"),
        ("ratings.csv", "userId,movieId,rating,timestamp\n1,10,4.0,soon\n", r"timestamp.*soon"),
        ("ratings.csv", "userId,movieId,rating,timestamp\n1,99,4.0,5\n", r"movieId.*\[99\]"),
        ("ratings.csv", "userId,movieId,rating,timestamp\n", "no ratings"),
        ("ratings.csv", "userId,movieId,rating,timestamp\n1,10,NaN,5\n", r"rating.*not finite"),
        ("ratings.csv", "userId,movieId,rating,timestamp\n1,10,4,-5\n", r"timestamp.*negative"),
        (
            "ratings.csv",
            "userId,movieId,rating,timestamp\n1,10,4,1510000000000\n",
            r"timestamp.*milliseconds\?.*1510000000000",
        ),
        (
            "ratings.csv",
            "userId,movieId,rating,timestamp\n1,10,4,7\n2,20,3,7\n3,30,5,7\n",
            r"timestamp.*no training, validation and test windows.*need them to differ",
        ),
        (
            "movies.csv",
            "movieId,title,genres\n10,a,Drama\n10,b,Crime\n",
            r"movieId.*more than one row.*\[10\]",
        ),
        (
            "tags.csv",
            "userId,movieId,tag,timestamp\n1,10,x,-3\n",
            r"tags\.csv.*timestamp.*negative",
        ),
    ],
)
def test_bad_files_name_the_file_column_and_values(release, file, text, message):
    (release / file).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        movielens_csv(release)


def test_empty_titles_and_genres_read_as_none(release, tmp_path):
    """A movie with an empty title or genre list still gives a valid dataset: no genre
    edges, and a text with what there is."""
    _write(
        release,
        "movies.csv",
        "movieId,title,genres",
        [(10, "", "Drama|"), (20, "Heat (1995)", ""), (30, "Fargo", "Crime"), (40, "  ", " ")],
    )
    world = movielens_csv(release, MovieLensCsvConfig(validation_share=0.5, test_share=0.8))
    text = dict(zip(*pl.from_arrow(world.content).select("node_id", "text"), strict=True))
    assert text[10] == "Genres: Drama." and text[20] == "Heat (1995). Genres: (no genres listed)."
    genre = pl.from_arrow(world.edges).filter(pl.col("edge_type") == "genre")
    assert sorted(genre["src_id"].to_list()) == [10, 30]
    write_world(world, tmp_path / "ds")
    assert load_dataset(tmp_path / "ds").manifest.name == "movielens-csv"


def test_a_movie_tagged_before_its_first_rating_enters_the_log_with_the_tag(release):
    _write(release, "tags.csv", "userId,movieId,tag,timestamp", [(2, 20, "heist", 1050)])
    world = movielens_csv(release, MovieLensCsvConfig(validation_share=0.5, test_share=0.8))
    ads = pl.from_arrow(world.nodes).filter(pl.col("node_type") == "ad").sort("node_id")
    assert ads["created_ts"].to_list() == [1000, 1050, 1300, 1900]  # 20: its tag, not 1100
    genre = pl.from_arrow(world.edges).filter(pl.col("edge_type") == "genre")
    assert set(genre.filter(pl.col("src_id") == 20)["ts"].to_list()) == {1050}


def _rewrite(folder, name, encoding):
    """Save `name` again in another encoding, with an accented title in movies.csv."""
    text = (folder / name).read_text(encoding="utf-8").replace("Heat (1995)", "Amélie (2001)")
    (folder / name).write_bytes(text.encode(encoding))


@pytest.mark.parametrize(
    ("name", "encoding", "message"),
    [
        (
            "movies.csv",
            "latin-1",
            r"movies\.csv: not UTF-8 encoded \(line 3 is not valid UTF-8\): if the file is "
            r"Western European text \(Windows-1252 / Latin-1\), convert it into a new UTF-8 "
            r"file with `iconv -f CP1252 -t UTF-8 movies\.csv > movies\.utf8\.csv`; otherwise "
            r"name its own encoding with -f .*Check the new file, then put it in place of "
            r"movies\.csv .*\n"
            r"offending rows:\n  line 3: b'20,Am\\xe9lie \(2001\),",
        ),
        (  # ASCII only: the parser reads it, as a header of other names
            "ratings.csv",
            "utf-16",
            r"ratings\.csv: not UTF-8 encoded \(it starts with a UTF-16 byte-order mark\): "
            r"convert it into a new UTF-8 file, e\.g\. "
            r"`iconv -f UTF-16 -t UTF-8 ratings\.csv > ratings\.utf8\.csv`; check the new "
            r"file, then put it in place of ratings\.csv",
        ),
        (
            "movies.csv",
            "utf-16-le",
            r"movies\.csv: not UTF-8 encoded \(its NUL bytes fall as in UTF-16LE text\)"
            r".*`iconv -f UTF-16LE -t UTF-8 movies\.csv > movies\.utf8\.csv`",
        ),
        ("tags.csv", "utf-32", r"tags\.csv: not UTF-8 encoded \(.*UTF-32 byte-order mark"),
    ],
)
def test_a_file_not_in_utf8_says_so_and_how_to_convert_it(
    release, tmp_path, capsys, name, encoding, message
):
    _rewrite(release, name, encoding)
    out = tmp_path / "ml"
    assert main(["dataset", "movielens-csv", "--source", str(release), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert err.count("error:") == 1 and not out.exists()  # one message, nothing written


def test_the_bad_line_is_found_past_the_first_chunk(release, monkeypatch):
    monkeypatch.setattr(csv_encoding, "CHUNK_BYTES", 7)  # lines straddle the chunks
    _rewrite(release, "movies.csv", "latin-1")
    error = csv_encoding.encoding_error(release / "movies.csv")
    assert error is not None and "line 3 is not valid UTF-8" in str(error)
    assert error.rows == ("line 3: b'20,Am\\xe9lie (2001),Action|Crime'",)
    assert csv_encoding.encoding_error(release / "ratings.csv") is None


@pytest.mark.skipif(shutil.which("iconv") is None, reason="needs iconv")
@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "utf-16"])
def test_the_suggested_conversion_gives_a_readable_release(release, encoding):
    _rewrite(release, "movies.csv", encoding)
    with pytest.raises(InputError) as caught:
        movielens_csv(release)
    command = re.search(r"`(iconv [^`]*)`", str(caught.value)).group(1)
    before = (release / "movies.csv").read_bytes()
    subprocess.run(command, shell=True, cwd=release, check=True)
    assert (release / "movies.csv").read_bytes() == before  # the original is left alone
    (release / "movies.utf8.csv").replace(release / "movies.csv")  # the user's step, once checked
    titles = movielens_csv(release).content["text"].to_pylist()
    assert "Amélie (2001). Genres: Action, Crime." in titles


def test_a_utf8_byte_order_mark_is_read_as_utf8(release):
    _rewrite(release, "movies.csv", "utf-8")
    plain = movielens_csv(release)
    for name in ("ratings.csv", "movies.csv", "tags.csv"):
        _rewrite(release, name, "utf-8-sig")  # the mark sits before the first column's name
    marked = movielens_csv(release)
    assert "Amélie (2001). Genres: Action, Crime." in marked.content["text"].to_pylist()
    assert marked.edges.equals(plain.edges) and marked.nodes.equals(plain.nodes)
