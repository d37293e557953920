"""The Hierarchical Encoder: node and edge encoders, graph transformer (FLEX / DENSE), heads."""

from hir_sdk.model.attention import Impl, choose_impl
from hir_sdk.model.config import DeepHashConfig, EncoderConfig, PrototypeConfig
from hir_sdk.model.encoder import EncoderOutput, HierarchicalEncoder
from hir_sdk.model.inputs import EncoderInputs, inputs_from_packed

__all__ = [
    "DeepHashConfig",
    "EncoderConfig",
    "EncoderInputs",
    "EncoderOutput",
    "HierarchicalEncoder",
    "Impl",
    "PrototypeConfig",
    "choose_impl",
    "inputs_from_packed",
]
