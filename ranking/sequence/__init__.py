"""The multi-stage sequence ranker: an offline user model over long event histories whose
embeddings are cached per (user, snapshot time), and a light online ranker with
target-aware attention and mixture-of-experts heads routed by super-interest.

The names below are imported on first use (`hir_sdk.lazy_exports`): the models need
TorchRec, whose import takes seconds, and most users of this package (the event
histories, the settings) do not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hir_sdk.lazy_exports import lazy_exports

# name -> the module of this package that defines it
_MODULES = {
    "EventHistory": "history",
    "EventWindow": "history",
    "MultiStageConfig": "config",
    "OnlineRankerConfig": "config",
    "UserModelConfig": "config",
    "RankingExamples": "examples",
    "MultiStageRanker": "multistage",
    "OnlineRanker": "online_ranker",
    "UserEmbeddingCache": "user_cache",
    "snapshot_time": "user_cache",
    "UserModel": "user_model",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:
    from hir_sdk.ranking.sequence.config import (
        MultiStageConfig,
        OnlineRankerConfig,
        UserModelConfig,
    )
    from hir_sdk.ranking.sequence.examples import RankingExamples
    from hir_sdk.ranking.sequence.history import EventHistory, EventWindow
    from hir_sdk.ranking.sequence.multistage import MultiStageRanker
    from hir_sdk.ranking.sequence.online_ranker import OnlineRanker
    from hir_sdk.ranking.sequence.user_cache import UserEmbeddingCache, snapshot_time
    from hir_sdk.ranking.sequence.user_model import UserModel
