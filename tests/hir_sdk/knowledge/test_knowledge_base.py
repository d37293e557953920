"""The knowledge base: content rows, fused vector columns, neighbour pooling, cutoffs."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph, build_graph
from hir_sdk.knowledge import ContentEncoder, KnowledgeBase, build_knowledge
from hir_sdk.schema import Dataset, load_dataset
from tests.conftest import WriteDataset
from tests.hir_sdk.knowledge.conftest import reference_pool

Tiny = tuple[Dataset, TemporalGraph]


def own_rows(kb: KnowledgeBase) -> np.ndarray:
    """`row_of` restricted to nodes with their own content."""
    return np.where(kb.source == 1, kb.row_of, -1)


def assert_matches_reference(kb: KnowledgeBase, reference: dict[int, np.ndarray]) -> None:
    pooled = np.flatnonzero(kb.source == 2)
    assert sorted(reference) == pooled.tolist()
    for node, expected in reference.items():
        np.testing.assert_allclose(kb.vectors[kb.row_of[node]], expected, atol=1e-6)


def test_every_content_node_has_its_own_unit_text_vector(
    tiny: Tiny, tiny_kb: KnowledgeBase, encoder: ContentEncoder
) -> None:
    dataset, graph = tiny
    assert dataset.content is not None
    index = dataset.content["index"].to_numpy()
    assert tiny_kb.dim == 384 and tiny_kb.parts == (("text", 384),)
    assert tiny_kb.num_nodes == graph.num_nodes
    assert np.array_equal(np.flatnonzero(tiny_kb.source == 1), np.sort(index))
    vectors, has = tiny_kb.gather(index)
    assert has.all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vectors, encoder.encode(dataset.content["text"].to_list()))
    users = graph.index("user", [0, 1, 2])
    assert (tiny_kb.source[users] == 0).all() and (tiny_kb.row_of[users] == -1).all()


def test_gather_gives_zeros_where_a_node_has_nothing(tiny: Tiny, tiny_kb: KnowledgeBase) -> None:
    _, graph = tiny
    nodes = np.array([graph.index("user", 0)[0], graph.index("ad", 0)[0]])
    vectors, has = tiny_kb.gather(nodes)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert has.tolist() == [False, True] and not vectors[0].any()
    assert tiny_kb.gather(np.zeros(0, dtype=np.int64))[0].shape == (0, 384)
    with pytest.raises(IndexError):
        tiny_kb.gather(np.array([graph.num_nodes]))


def test_campaigns_pool_their_ads(tiny: Tiny, tiny_kb: KnowledgeBase) -> None:
    """The tiny world has no campaign text: campaigns get the mean of their ads."""
    _, graph = tiny
    reference = reference_pool(
        graph, tiny_kb.vectors, own_rows(tiny_kb), {"campaign": ("ad",)}, tiny_kb.parts
    )
    code = graph.type_code("campaign")
    campaigns = np.arange(graph.type_offsets[code], graph.type_offsets[code + 1])
    assert (tiny_kb.source[campaigns] == 2).all()
    assert_matches_reference(tiny_kb, reference)


def test_advertisers_without_content_pool_products_and_ads(
    tiny: Tiny, encoder: ContentEncoder
) -> None:
    dataset, graph = tiny
    assert dataset.content is not None
    content = dataset.content.filter(pl.col("node_type") != "advertiser")
    kb = build_knowledge(dataclasses.replace(dataset, content=content), graph, encoder)
    advertisers = graph.index("advertiser", graph.node_ids[graph.type_code("advertiser")])
    assert (kb.source[advertisers] == 2).all()
    pool_from = {"advertiser": ("product", "ad"), "campaign": ("ad",)}
    assert_matches_reference(
        kb, reference_pool(graph, kb.vectors, own_rows(kb), pool_from, kb.parts)
    )
    np.testing.assert_allclose(np.linalg.norm(kb.gather(advertisers)[0], axis=1), 1.0, atol=1e-6)


def test_as_of_sees_only_earlier_structural_edges(tiny: Tiny, encoder: ContentEncoder) -> None:
    dataset, graph = tiny
    assert dataset.content is not None
    no_advertisers = dataclasses.replace(
        dataset, content=dataset.content.filter(pl.col("node_type") != "advertiser")
    )
    as_of = dataset.manifest.time.validation_start
    kb = build_knowledge(no_advertisers, graph, encoder, as_of=as_of)
    pool_from = {"advertiser": ("product", "ad"), "campaign": ("ad",)}
    reference = reference_pool(graph, kb.vectors, own_rows(kb), pool_from, kb.parts, as_of)
    assert_matches_reference(kb, reference)

    # the same as building from data that stops at the cutoff: later edges change nothing
    before = dataclasses.replace(no_advertisers, edges=dataset.edges.filter(pl.col("ts") < as_of))
    cut = build_knowledge(before, build_graph(before), encoder)
    for field in ("vectors", "row_of", "source"):
        assert np.array_equal(getattr(kb, field), getattr(cut, field))
    # and the cutoff matters in this world: campaigns created later have nothing yet
    full = build_knowledge(no_advertisers, graph, encoder)
    assert (kb.source == 2).sum() < (full.source == 2).sum()


def test_pool_from_is_checked_and_can_be_turned_off(tiny: Tiny, encoder: ContentEncoder) -> None:
    dataset, graph = tiny
    assert (build_knowledge(dataset, graph, encoder, pool_from={}).source == 2).sum() == 0
    with pytest.raises(InputError, match="store"):
        build_knowledge(dataset, graph, encoder, pool_from={"store": ("ad",)})


def test_no_content_gives_an_empty_knowledge_base(tiny: Tiny, encoder: ContentEncoder) -> None:
    dataset, graph = tiny
    kb = build_knowledge(dataclasses.replace(dataset, content=None), graph, encoder)
    assert kb.dim == 384 and len(kb.vectors) == 0
    assert (kb.row_of == -1).all() and (kb.source == 0).all()
    vectors, has = kb.gather(np.arange(5))
    assert not has.any() and not vectors.any()


def test_graph_must_come_from_the_dataset(tiny: Tiny, encoder: ContentEncoder) -> None:
    dataset, graph = tiny
    other = dataclasses.replace(dataset, fingerprint="another")
    with pytest.raises(ValueError, match="not built from this dataset"):
        build_knowledge(other, graph, encoder)


def image_content(images: list[list[float] | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "node_type": ["ad", "ad", "advertiser"],
            "node_id": [20, 21, 30],
            "text": ["trail running shoes sale", "road bike helmet", "Zantro outdoor gear"],
            "image": images,
        },
        schema_overrides={"image": pl.List(pl.Float64)},
    )


def test_vector_columns_are_normalized_and_fused(
    write_dataset: WriteDataset, encoder: ContentEncoder
) -> None:
    dataset = load_dataset(write_dataset(content=image_content([[3.0, 4.0], [0.0, 2.0], None])))
    graph = build_graph(dataset)
    kb = build_knowledge(dataset, graph, encoder)
    assert kb.parts == (("text", 384), ("image", 2)) and kb.dim == 386
    ads, advertiser = graph.index("ad", [20, 21]), graph.index("advertiser", 30)
    vectors, has = kb.gather(np.concatenate([ads, advertiser]))
    assert has.all() and (kb.source[[*ads, *advertiser]] == 1).all()
    np.testing.assert_allclose(np.linalg.norm(vectors[:, :384], axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors[:, 384:], [[0.6, 0.8], [0.0, 1.0], [0.0, 0.0]])
    texts = ["trail running shoes sale", "road bike helmet", "Zantro outdoor gear"]
    assert np.array_equal(vectors[:, :384], encoder.encode(texts))

    # without its own content the advertiser pools both parts of its ads, each normalized
    ads_only = dataclasses.replace(dataset, content=dataset.content.filter(pl.col("index") < 4))
    pooled = build_knowledge(ads_only, graph, encoder)
    assert pooled.source[advertiser[0]] == 2
    reference = reference_pool(
        graph, pooled.vectors, own_rows(pooled), {"advertiser": ("ad",)}, pooled.parts
    )
    assert_matches_reference(pooled, reference)
    np.testing.assert_allclose(
        pooled.gather(advertiser)[0][0, 384:], np.array([0.6, 1.8]) / np.hypot(0.6, 1.8)
    )


def test_fixed_size_array_columns_are_accepted(
    write_dataset: WriteDataset, encoder: ContentEncoder
) -> None:
    dataset = load_dataset(write_dataset(content=image_content([[3.0, 4.0], [0.0, 2.0], None])))
    assert dataset.content is not None
    as_array = dataset.content.with_columns(pl.col("image").cast(pl.Array(pl.Float32, 2)))
    graph = build_graph(dataset)
    kb = build_knowledge(dataclasses.replace(dataset, content=as_array), graph, encoder)
    assert np.array_equal(kb.vectors, build_knowledge(dataset, graph, encoder).vectors)


@pytest.mark.parametrize("bad", [[float("nan"), 1.0], [1.0, None]])
def test_non_finite_vector_values_are_rejected(
    write_dataset: WriteDataset, encoder: ContentEncoder, bad: list[float | None]
) -> None:
    """Refused when the dataset is read (validation), before any graph or encoder work,
    and by `build_knowledge` for a dataset whose content was replaced in memory."""
    with pytest.raises(InputError, match="non-finite") as error:
        load_dataset(write_dataset(content=image_content([[3.0, 4.0], bad, None])))
    assert error.value.column == "image"
    assert error.value.rows == ("row 1: node_type='ad', node_id=21",)
    dataset = load_dataset(write_dataset(content=image_content([[3.0, 4.0], [0.0, 2.0], None])))
    assert dataset.content is not None
    broken = dataset.content.with_columns(
        pl.Series("image", [[3.0, 4.0], bad, None], dtype=pl.List(pl.Float64))
    )
    with pytest.raises(InputError, match="non-finite") as error:
        build_knowledge(dataclasses.replace(dataset, content=broken), build_graph(dataset), encoder)
    assert error.value.column == "image" and error.value.rows == ("ad 21",)


def test_pooled_rows_are_never_used_before_their_as_of(tiny, encoder):
    """A pooled vector summarizes structural edges up to `as_of`: at an earlier cutoff it
    would leak them, so `gather` with cutoffs leaves it out."""
    dataset, graph = tiny
    as_of = graph.manifest.time.validation_start
    kb = build_knowledge(dataset, graph, encoder, as_of=as_of)
    pooled = np.flatnonzero(kb.source == 2)
    own = np.flatnonzero(kb.source == 1)[:5]
    assert len(pooled) > 0  # the tiny world's campaigns have no text of their own
    nodes = np.concatenate([pooled[:5], own])
    _, before = kb.gather(nodes, np.full(len(nodes), as_of - 1))
    _, after = kb.gather(nodes, np.full(len(nodes), as_of))
    assert not before[:5].any() and before[5:].all()
    assert after.all()
    _, unbounded = build_knowledge(dataset, graph, encoder).gather(
        nodes, np.full(len(nodes), as_of)
    )
    assert not unbounded[:5].any() and unbounded[5:].all()


class _NoEncoding:
    """An encoder that must not be asked: `like` holds the text vectors."""

    def encode(self, texts, **_):  # noqa: ANN001, ANN003, ANN201
        raise AssertionError("the text was embedded again")


def test_like_reuses_the_content_rows_and_pools_as_of_its_own_time(
    tiny: Tiny, write_dataset: WriteDataset, encoder: ContentEncoder
) -> None:
    """With `like` (a base of the same data at another time), the own content rows are
    taken from it and only the pooling is redone: the result equals building from
    scratch at the new time. Vector columns come along with the text."""
    dataset, graph = tiny
    as_of = graph.manifest.time.validation_start
    early = build_knowledge(dataset, graph, encoder, as_of=as_of)
    for later in (as_of + 7 * 86_400, None):
        fresh = build_knowledge(dataset, graph, encoder, as_of=later)
        reused = build_knowledge(dataset, graph, _NoEncoding(), as_of=later, like=early)  # type: ignore[arg-type]
        for field in ("vectors", "row_of", "source", "parts", "pooled_as_of"):
            assert np.array_equal(getattr(reused, field), getattr(fresh, field)), field
    assert (early.source == 2).sum() < (fresh.source == 2).sum()  # the time matters here
    # a base of other content is refused, not silently misread
    fewer = dataclasses.replace(dataset, content=dataset.content.slice(1))  # one row less
    with pytest.raises(ValueError, match="`like` was not built from this dataset's content"):
        build_knowledge(fewer, graph, _NoEncoding(), like=early)  # type: ignore[arg-type]

    images = load_dataset(write_dataset(content=image_content([[3.0, 4.0], [0.0, 2.0], None])))
    graph = build_graph(images)
    fused = build_knowledge(images, graph, encoder)
    again = build_knowledge(images, graph, _NoEncoding(), like=fused)  # type: ignore[arg-type]
    assert again.parts == (("text", 384), ("image", 2))
    assert np.array_equal(again.vectors, fused.vectors)
