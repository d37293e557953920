"""Super-interest slices from a planted-truth folder: ids are taken as given (not as
positions), and ids that cannot label a slice are refused before the A/B fits a model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import hir_sdk.evaluation.pipeline
from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.evaluation.slices import planted_interests
from hir_sdk.evaluation.slices import test_slices as slices_of

GAPS = {0: 3, 1: 7, 2: 12, 3: 20, 4: 21, 5: 40}  # the tiny world's ids 0..5, renumbered


def _truth(tiny_world: Path, out: Path, **tables: pl.DataFrame) -> Path:
    """The tiny world's taxonomy and entities with super-interest ids `GAPS`, some tables
    replaced by `tables`."""
    out.mkdir()
    for name in ("taxonomy", "entities"):
        frame = pl.read_parquet(tiny_world / "truth" / f"{name}.parquet")
        frame = frame.with_columns(pl.col("super").replace_strict(GAPS))
        tables.get(name, frame).write_parquet(out / f"{name}.parquet")
    return out


def _renumbered(tiny_world: Path, name: str) -> pl.DataFrame:
    frame = pl.read_parquet(tiny_world / "truth" / f"{name}.parquet")
    return frame.with_columns(pl.col("super").replace_strict(GAPS))


def test_slices_use_the_ids_as_given(tiny_world, tiny_graph, tmp_path):
    """Ids 3, 7, 12, ... label each ad with its own super-interest's name: each slice
    holds exactly the requests for ads whose entity row has that name's id."""
    g = tiny_graph
    planted = planted_interests(g, _truth(tiny_world, tmp_path / "truth"))
    assert planted is not None
    is_ad = g.node_type_of(g.dst) == g.type_code("ad")
    requests = (g.ts >= g.manifest.time.validation_start) & is_ad
    user, ad, ts = g.src[requests], g.dst[requests], g.ts[requests]
    got = slices_of(
        g, user, ad, np.full(len(ad), -1), ts, cutoff=g.manifest.time.test_start, planted=planted
    )

    taxonomy = _renumbered(tiny_world, "taxonomy")
    name_of = dict(zip(taxonomy["super"], taxonomy["super_name"], strict=False))
    entities = _renumbered(tiny_world, "entities").filter(pl.col("node_type") == "ad")
    super_of = dict(zip(entities["node_id"], entities["super"], strict=True))
    names = np.array([name_of[super_of[i]] for i in g.node_ids_of(ad).tolist()])
    expected = {f"super-interest: {n}": names == n for n in sorted(set(name_of.values()))}
    assert {k: v for k, v in got.items() if k.startswith("super-interest")}.keys() == (
        expected.keys()
    )
    for name, mask in expected.items():
        np.testing.assert_array_equal(got[name], mask, err_msg=name)
    counts = sorted(int(m.sum()) for m in expected.values())
    assert counts[0] > 0 and sum(counts) == len(ad)  # every slice is used, none overlaps


def _problems(tiny_world: Path) -> dict[str, tuple[dict[str, pl.DataFrame], str]]:
    taxonomy, entities = _renumbered(tiny_world, "taxonomy"), _renumbered(tiny_world, "entities")
    first_ad = entities.with_row_index("row").filter(pl.col("node_type") == "ad")["row"][0]
    ad_id = entities["node_id"][first_ad]

    def on_first_ad(value: object, dtype: pl.DataType = pl.Int64) -> pl.DataFrame:
        column = entities["super"].cast(dtype).clone().scatter(first_ad, value)
        return entities.with_columns(column)

    return {
        "unknown id": (
            {"entities": on_first_ad(99)},
            "entities.parquet: column 'super': super-interest ids that taxonomy.parquet does "
            "not name (it names [3, 7, 12, 20, 21, 40])\noffending rows:\n"
            f"  row {first_ad}: node_type='ad', node_id={ad_id}, super=99",
        ),
        "null id": (
            {"entities": on_first_ad(None)},
            "entities.parquet: column 'super': null super-interest ids\noffending rows:\n"
            f"  row {first_ad}: super=None",
        ),
        "text ids": (
            {"entities": on_first_ad("x", pl.String)},
            "entities.parquet: column 'super': super-interest ids must be integers, found String",
        ),
        "one id, two names": (
            {"taxonomy": taxonomy.with_columns(taxonomy["super_name"].clone().scatter(0, "shoes"))},
            "taxonomy.parquet: column 'super_name': super-interest ids with more than one name "
            "(a slice has one)\noffending rows (showing 5 of 16):\n"
            "  row 0: super=3, super_name='shoes'\n"
            "  row 1: super=3, super_name='fashion'\n"
            "  row 2: super=3, super_name='fashion'\n"
            "  row 3: super=3, super_name='fashion'\n"
            "  row 4: super=3, super_name='fashion'",
        ),
        "one name, two ids": (
            {
                "taxonomy": taxonomy.with_columns(
                    pl.when(pl.col("super") == 40)
                    .then(pl.lit("fashion"))
                    .otherwise(pl.col("super_name"))
                    .alias("super_name")
                )
            },
            "taxonomy.parquet: column 'super': names of more than one super-interest id (one "
            "slice each)\noffending rows (showing 5 of 32):\n"
            "  row 0: super=3, super_name='fashion'\n"
            "  row 1: super=3, super_name='fashion'\n"
            "  row 2: super=3, super_name='fashion'\n"
            "  row 3: super=3, super_name='fashion'\n"
            "  row 4: super=3, super_name='fashion'",
        ),
    }


@pytest.mark.parametrize(
    "problem", ["unknown id", "null id", "text ids", "one id, two names", "one name, two ids"]
)
def test_ids_that_cannot_label_a_slice_are_refused(problem, tiny_world, tiny_graph, tmp_path):
    tables, message = _problems(tiny_world)[problem]
    truth = _truth(tiny_world, tmp_path / "truth", **tables)
    with pytest.raises(InputError) as refused:
        planted_interests(tiny_graph, truth)
    assert str(refused.value) == f"{truth}/{message}"


def test_hir_ab_refuses_them_before_fitting_a_model(tiny_world, tmp_path, capsys, monkeypatch):
    def fitted(*args, **kwargs):
        raise AssertionError("a model was made before the truth was checked")

    monkeypatch.setattr(hir_sdk.evaluation.pipeline, "make_ranker", fitted)
    tables, message = _problems(tiny_world)["unknown id"]
    truth, out = _truth(tiny_world, tmp_path / "truth", **tables), tmp_path / "ab"
    argv = ["ab", "--data", str(tiny_world), "--out", str(out), "--truth", str(truth)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"hir ab: error: {truth}/{message}\n"
    assert not out.exists()
