"""`hir embed` and its Python API: the table, the files, as-of invariance, bad input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
import tomllib

from hir_sdk.bom import ROWS_PER_CODEWORD, codebook_size
from hir_sdk.cli.main import main
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.interests import embed_entities, read_embeddings
from hir_sdk.training.as_of import parse_as_of
from hir_sdk.training.embedder import Embedder


def test_snapshot_holds_every_entity_that_exists_at_as_of(snapshot, tiny_world):
    graph = build_graph_from_dir(tiny_world)
    as_of = graph.manifest.time.validation_start
    assert snapshot.as_of == as_of
    t = snapshot.table
    assert t.columns == [
        "node_type", "node_id", "as_of", "embedding",
        "cluster_l0", "cluster_l1", "cluster_l2", "bom",
    ]  # fmt: skip
    assert len(t) == int((graph.created_ts < as_of).sum())
    for node_type in graph.node_types:
        ids = t.filter(pl.col("node_type") == node_type)["node_id"].to_numpy()
        nodes = graph.index(node_type, ids)
        assert (graph.created_ts[nodes] < as_of).all()
        code = graph.type_code(node_type)
        born = graph.created_ts[graph.type_offsets[code] : graph.type_offsets[code + 1]]
        assert len(ids) == int((born < as_of).sum())
    z = snapshot.embeddings()
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-5)
    for level, size in enumerate((4, 16, 64)):
        clusters = snapshot.clusters(level)
        assert clusters.min() >= 0 and clusters.max() < size
    tokens = snapshot.tokens()
    assert tokens.shape == (len(t), 4)
    assert ((tokens // 16) == np.arange(4)).all()  # one token per codebook, m * K + k
    # the tokens are the quantizer's codes of the embeddings
    np.testing.assert_array_equal(tokens, snapshot.quantizer.tokens(snapshot.quantizer.encode(z)))
    assert snapshot.meta["bom"]["relative_error"] < 0.5


def test_a_small_snapshot_gets_fewer_codewords(tiny_run, tiny_world):
    """256 codewords asked for a few hundred ads: K is halved until each codeword has
    `ROWS_PER_CODEWORD` rows, and the tokens and metadata use that K."""
    ads = embed_entities(tiny_run, tiny_world, "validation_start", node_types=["ad"])
    rows, size = len(ads.table), ads.quantizer.codebook_size
    assert size == codebook_size(rows, 256) < 256
    assert size * ROWS_PER_CODEWORD <= rows < 2 * size * ROWS_PER_CODEWORD
    assert ads.meta["bom"]["codewords"] == size
    assert ((ads.tokens() // size) == np.arange(8)).all()


def test_cli_writes_what_the_api_returns(snapshot, tiny_run, tiny_world, tmp_path, capsys):
    out = tmp_path / "emb"
    code = main(
        [
            "embed", "--run", str(tiny_run), "--data", str(tiny_world),
            "--as-of", "validation_start", "--out", str(out),
            "--codebooks", "4", "--codewords", "16",
        ]
    )  # fmt: skip
    assert code == 0
    assert "embedded" in capsys.readouterr().out
    back = read_embeddings(out)
    assert back.table.equals(snapshot.table)
    assert all(
        np.array_equal(a, b) for a, b in zip(back.prototypes, snapshot.prototypes, strict=True)
    )
    meta = json.loads((out / "meta.json").read_text())
    assert meta["as_of"] == snapshot.as_of and meta["rows"] == len(snapshot.table)
    assert back.to_arrow().num_rows == len(snapshot.table)
    # refusing to overwrite is a user mistake: exit 2, the old output untouched
    code = main(
        ["embed", "--run", str(tiny_run), "--data", str(tiny_world),
         "--as-of", "test_start", "--out", str(out)]
    )  # fmt: skip
    assert code == 2
    assert read_embeddings(out).as_of == snapshot.as_of


def test_later_edges_never_change_an_embedding(snapshot, tiny_run, tiny_world, tmp_path):
    """Append copies of real edges dated after as_of: the snapshot stays bit-identical."""
    later = tmp_path / "later"
    shutil.copytree(tiny_world, later)
    edges = pl.read_parquet(later / "edges.parquet")
    graph = build_graph_from_dir(tiny_world)
    t = graph.manifest.time
    extra = edges.sample(n=min(len(edges), 3000), seed=1, with_replacement=True)
    rng = np.random.default_rng(0)
    ts = rng.integers(t.validation_start, t.end, len(extra))
    extra = extra.with_columns(pl.Series("ts", ts).cast(edges["ts"].dtype))
    pl.concat([edges, extra]).write_parquet(later / "edges.parquet")
    again = embed_entities(tiny_run, later, "validation_start", codebooks=4, codewords=16)
    assert again.meta["data_fingerprint"] != snapshot.meta["data_fingerprint"]
    assert again.table.equals(snapshot.table)


def test_a_later_as_of_sees_more(snapshot, tiny_run, tiny_world):
    later = embed_entities(tiny_run, tiny_world, "test_start", codebooks=4, codewords=16)
    assert len(later.table) >= len(snapshot.table)
    common = later.table.join(snapshot.table, on=["node_type", "node_id"], suffix="_early")
    moved = ~np.isclose(
        common["embedding"].to_numpy(), common["embedding_early"].to_numpy(), atol=1e-6
    ).all(axis=1)
    assert moved.mean() > 0.5  # a week of new edges changes most neighbourhoods


def test_parse_as_of():
    from hir_sdk.errors import InputError
    from hir_sdk.schema.manifest import TimeSplits

    splits = TimeSplits(1_700_000_000, 1_750_000_000, 1_767_000_000, 1_800_000_000)
    assert parse_as_of("test_start", splits) == 1_767_000_000
    assert parse_as_of("1700000000", splits) == 1_700_000_000
    assert parse_as_of("2026-01-02", splits) == 1_767_312_000
    assert parse_as_of("2026-01-02T00:00:00Z", splits) == 1_767_312_000
    assert parse_as_of("2026-01-02T01:00:00+01:00", splits) == 1_767_312_000
    assert parse_as_of(1_800_000_000, splits) == 1_800_000_000  # the end itself
    # outside the data: before its start (nothing to read), milliseconds, overflow
    for value in ("1000", "-5", 1_699_999_999, "1767312000000", "99999999999999999999"):
        with pytest.raises(InputError, match="outside the dataset's time range") as caught:
            parse_as_of(value, splits)
        milliseconds = "not milliseconds" in str(caught.value)
        assert milliseconds == (int(value) > 10**12)
    assert parse_as_of("1000", splits, inside=False) == 1000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--as-of", "yesterday"], "is not a time"),
        (["--as-of", "1000"], "outside the dataset's time range"),
        (["--as-of", "1770249600000"], "not milliseconds"),
        (["--types", "spaceship", "--as-of", "test_start"], "unknown node type"),
        (["--types", ",", "--as-of", "test_start"], "names no node type"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    tiny_run, tiny_world, tmp_path, capsys, args, message
):
    out = tmp_path / "emb"
    code = main(
        ["embed", "--run", str(tiny_run), "--data", str(tiny_world), "--out", str(out), *args]
    )
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_folder_that_is_not_a_run(tiny_world, tmp_path, capsys):
    (tmp_path / "not_a_run").mkdir()  # beside --out: an output never lies in an input
    code = main(
        ["embed", "--run", str(tmp_path / "not_a_run"), "--data", str(tiny_world),
         "--as-of", "test_start", "--out", str(tmp_path / "o")]
    )  # fmt: skip
    assert code == 2
    assert "not a training run" in capsys.readouterr().err


def test_a_run_trained_with_text_needs_the_content_table(tiny_run, tiny_world, tmp_path, capsys):
    data = tmp_path / "no_text"
    shutil.copytree(tiny_world, data)
    (data / "content.parquet").unlink()
    out = tmp_path / "emb"
    code = main(
        ["embed", "--run", str(tiny_run), "--data", str(data), "--as-of", "test_start",
         "--out", str(out)]
    )  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"hir embed: error: {data / 'content.parquet'}: the run was trained with "
        "use_content = true, and this dataset has no content table"
    )
    assert not out.exists()


def test_embedder_rejects_a_dataset_with_other_types(tiny_run, write_dataset):
    from hir_sdk.errors import InputError

    with pytest.raises(InputError, match="node types differ from those the run was trained"):
        Embedder(tiny_run, write_dataset(), "end")


@pytest.mark.parametrize("key", ["node_types", "edge_types"])
def test_embedder_rejects_the_same_types_in_another_order(tiny_run, tiny_world, tmp_path, key):
    """The encoder's per-type parameters follow the manifest's order: the same data with
    its types listed in another order would load and apply one type's parameters to
    another, so it is refused, naming both orders."""

    import tomli_w

    from hir_sdk.errors import InputError
    from hir_sdk.schema.manifest import MANIFEST_FILE

    data = tmp_path / "data"
    shutil.copytree(tiny_world, data)
    manifest = tomllib.loads((data / MANIFEST_FILE).read_text())
    manifest[key] = manifest[key][::-1]
    (data / MANIFEST_FILE).write_text(tomli_w.dumps(manifest))
    what = key.replace("_", " ")
    with pytest.raises(InputError, match=f"dataset's {what} differ") as caught:
        Embedder(tiny_run, data, "end")
    assert "in the run" in str(caught.value)
    Embedder(tiny_run, tiny_world, "end")  # the data it was trained on


def test_a_type_named_twice_is_embedded_once(tiny_run, tiny_world):
    embedder = Embedder(tiny_run, tiny_world, "test_start")
    once = embedder.entities(["ad", "user"])
    assert np.array_equal(embedder.entities(["ad", "user", "ad"]), once)
    assert len(np.unique(once)) == len(once)
