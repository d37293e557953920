"""World knowledge: entity content embedded by a real language model, cached, fused and pooled."""

from hir_sdk.knowledge.content_encoder import (
    DIM,
    MODEL_NAME,
    ContentEncoder,
    canonical_batches,
    default_cache_dir,
    model_path,
)
from hir_sdk.knowledge.knowledge_base import (
    DEFAULT_POOL_FROM,
    KnowledgeBase,
    build_knowledge,
)
from hir_sdk.knowledge.vector_cache import CacheWarning, VectorCache

__all__ = [
    "DEFAULT_POOL_FROM",
    "DIM",
    "MODEL_NAME",
    "CacheWarning",
    "ContentEncoder",
    "KnowledgeBase",
    "VectorCache",
    "build_knowledge",
    "canonical_batches",
    "default_cache_dir",
    "model_path",
]
