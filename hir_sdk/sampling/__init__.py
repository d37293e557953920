"""Temporal subgraph sampling: teacher / student views, structural encodings, packing and
the pipelined, reproducible loader."""

from hir_sdk.sampling.config import SamplerConfig, ViewConfig
from hir_sdk.sampling.subgraphs import Subgraphs
from hir_sdk.sampling.views import Views, ViewSampler

__all__ = ["SamplerConfig", "Subgraphs", "ViewConfig", "ViewSampler", "Views"]
