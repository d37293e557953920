"""Interest representations of entities as of a time: embeddings, clusters, BoM tokens,
and the interest hierarchy read from them."""

from hir_sdk.interests.entity_embeddings import (
    EntityEmbeddings,
    embed_entities,
    read_embeddings,
    write_embeddings,
)

__all__ = ["EntityEmbeddings", "embed_entities", "read_embeddings", "write_embeddings"]
