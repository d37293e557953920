"""The multi-stage sequence ranker: an offline user model over long event histories whose
embeddings are cached per (user, snapshot time), and a light online ranker with
target-aware attention and mixture-of-experts heads routed by super-interest."""

from hir_sdk.ranking.sequence.history import EventHistory, EventWindow
from hir_sdk.ranking.sequence.multistage import (
    MultiStageConfig,
    MultiStageRanker,
    RankingExamples,
)
from hir_sdk.ranking.sequence.online_ranker import OnlineRanker, OnlineRankerConfig
from hir_sdk.ranking.sequence.user_cache import UserEmbeddingCache, snapshot_time
from hir_sdk.ranking.sequence.user_model import UserModel, UserModelConfig

__all__ = [
    "EventHistory",
    "EventWindow",
    "MultiStageConfig",
    "MultiStageRanker",
    "OnlineRanker",
    "OnlineRankerConfig",
    "RankingExamples",
    "UserEmbeddingCache",
    "UserModel",
    "UserModelConfig",
    "snapshot_time",
]
