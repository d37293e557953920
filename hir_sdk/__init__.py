"""hir-sdk: Hierarchical Interest Representations for ads entities, and the rankers that use them.

The core (`hir_sdk`), the upstream representation layer:

- `hir_sdk.schema`: the input contract (manifest, table validation, `Dataset`).
- `hir_sdk.datasets`: public data sets (MovieLens-100K) mapped onto the input contract.
- `hir_sdk.synth`: the synthetic ads world, with a planted interest hierarchy.
- `hir_sdk.graph`: the temporal graph store (build, as-of queries, save / load).
- `hir_sdk.io`: atomic writes, the output-folder rule, data fingerprints.
- `hir_sdk.knowledge`: entity content embedded by a language model.
- `hir_sdk.sampling`: teacher / student subgraph views, structural encodings, the loader.
- `hir_sdk.model`: the Hierarchical Encoder (FLEX / DENSE attention).
- `hir_sdk.training`: self-distillation and engagement prediction, checkpoints, torchrun.
- `hir_sdk.interests`: snapshots of embeddings, clusters and the interest hierarchy.
- `hir_sdk.bom`: Bag-of-Meaning tokens by additive quantization.
- `hir_sdk.pipeline`: the main job as a library (`JobSettings`, `run_job`); with
  `hir_sdk.cli`, the application layer over all four source roots.
- `hir_sdk.cli`: the `hir` command.

Built on the core, which never imports them:

- `hir_sdk.ranking`: as-of features, HIR features, baselines, `ranking.retrieval` (the BoM
  inverted index) and `ranking.sequence` (the multi-stage sequence ranker).
- `hir_sdk.export`: ONNX export, onnxruntime serving, parity checks.
- `hir_sdk.evaluation`: deep-funnel labels, metrics, the offline A/B and its report.
"""

__version__ = "0.1.0"
