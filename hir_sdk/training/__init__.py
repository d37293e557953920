"""Training the encoder: self-distillation onto balanced clusters, engagement prediction,
checkpoints with bit-identical resume."""

from hir_sdk.training.config import TrainConfig, load_config
from hir_sdk.training.trainer import Trainer, TrainResult

__all__ = ["TrainConfig", "TrainResult", "Trainer", "load_config"]
