"""hir-sdk: Hierarchical Interest Representations for ads entities, and the rankers that use them.

The core package (`hir_sdk`) holds the upstream representation layer: the input contract
(`hir_sdk.schema`), the synthetic ads world (`hir_sdk.synth`) and the temporal graph store
(`hir_sdk.graph`). `hir_sdk.ranking`, `hir_sdk.export` and `hir_sdk.evaluation` build on it;
the core never imports them.
"""

__version__ = "0.1.0"
