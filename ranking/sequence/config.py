"""The multi-stage sequence ranker's settings: the user model's, the online ranker's and
the training's. Plain dataclasses, apart from the modules that use them (which import
torch and TorchRec), so that an A/B's settings can be made and checked without them."""

from __future__ import annotations

from dataclasses import dataclass, field

from hir_sdk.schema.manifest import DAY


@dataclass(frozen=True)
class UserModelConfig:
    dim: int = 32
    heads: int = 2
    layers: int = 2
    out_dim: int = 32
    history: int = 128  # events read per user (the serving path may read up to 4,096)
    id_buckets: int = 1 << 14
    # none by default: validation preferred it on MovieLens-100K and `small`, and the
    # ranker's fit is faster without it
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.dim % self.heads or min(self.dim, self.layers, self.out_dim, self.history) < 1:
            raise ValueError(
                "UserModelConfig: need dim divisible by heads and dim, layers, out_dim, "
                "history >= 1"
            )


@dataclass(frozen=True)
class OnlineRankerConfig:
    dim: int = 32
    heads: int = 2
    recent: int = 16  # recent events read online
    hidden: int = 64
    experts: int = 4
    top_k: int = 2
    id_buckets: int = 1 << 13
    dropout: float = 0.2

    def __post_init__(self) -> None:
        if self.dim % self.heads or min(self.dim, self.recent, self.hidden, self.experts) < 1:
            raise ValueError(
                "OnlineRankerConfig: need dim divisible by heads and dim, recent, hidden, "
                "experts >= 1"
            )


@dataclass(frozen=True)
class MultiStageConfig:
    user_model: UserModelConfig = field(default_factory=UserModelConfig)
    ranker: OnlineRankerConfig = field(default_factory=OnlineRankerConfig)
    refresh_s: int = DAY  # stage-1 cache refresh period
    epochs: int = 2  # on `small` the best validation loss comes after 1; later ones overfit
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.05
    click_weight: float = 0.5
    click_window_s: int = DAY
    max_train_examples: int = 80_000  # a seeded sample of the training window
    max_valid_examples: int = 20_000
    # the A/B's `multistage` arm: the HIR feature columns (`HirFeatures`, what
    # `xgboost+hir` reads) join the as-of features among the dense inputs
    hir_columns: bool = True
    # piecewise-linear pieces per dense column over its training quantiles
    # (`dense_inputs`); 0: the standardized value alone
    dense_bins: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if min(self.refresh_s, self.epochs, self.batch_size, self.click_window_s) < 1:
            raise ValueError("MultiStageConfig: refresh_s, epochs, batch_size must be >= 1")
        if self.dense_bins < 0:
            raise ValueError(f"MultiStageConfig: dense_bins must be >= 0, got {self.dense_bins}")
