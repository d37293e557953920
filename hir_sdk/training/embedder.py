"""A trained run, loaded to embed a dataset's entities as of a time.

```python
embedder = Embedder("runs/hir", "data/world", as_of="test_start")
z, logits = embedder.embed(nodes)          # (N, out_dim), [(N, K_l) per level]
nodes = embedder.entities(["ad", "user"])  # every ad and user that exists at as_of
```
With `across_ranks=True`, every rank of a `torchrun` process group builds its own
`Embedder` and makes the same calls; each embeds its share of the batches and all get the
whole result (`embed_nodes`).
The model is the run's teacher (the EMA weights, the ones training selected), from
`checkpoints/best.pt` by default. Every view is cut at `as_of`, world knowledge is
pooled from structural edges before it and audience rows (`sampling.audience`, in the
basis the run saved) read engagement edges before it, so adding edges after `as_of` to
the data never changes an embedding (tested). The dataset may be another one than the
run was trained on (new entities, later days), as long as it declares the same node and
edge types.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import numpy as np
import torch

from hir_sdk.errors import InputError
from hir_sdk.graph import build_graph
from hir_sdk.model import HierarchicalEncoder, Impl, choose_impl
from hir_sdk.sampling.audience import AudienceTerms
from hir_sdk.sampling.loader import BatchBuilder
from hir_sdk.schema import load_dataset
from hir_sdk.schema.dataset import CONTENT_FILE
from hir_sdk.training.as_of import parse_as_of, run_selected_until, run_trained_until
from hir_sdk.training.checkpoint import load_checkpoint, state_hash
from hir_sdk.training.config import load_config
from hir_sdk.training.embed_nodes import embed_nodes
from hir_sdk.training.encoder_setup import (
    encoder_config,
    make_featurizer,
    run_attributes,
    run_audience,
)
from hir_sdk.training.type_layout import check_type_layout


class Embedder:
    def __init__(
        self,
        run: str | Path,
        data: str | Path,
        as_of: str | int,
        *,
        checkpoint: str = "best",
        batch_size: int = 256,
        across_ranks: bool = False,
    ) -> None:
        self.run = Path(run)
        if not (self.run / "config.toml").is_file():
            raise InputError("not a training run (no config.toml)", file=self.run)
        self.config = config = load_config(self.run / "config.toml")
        if config.use_content and not (Path(data) / CONTENT_FILE).exists():
            raise InputError(
                "the run was trained with use_content = true, and this dataset has no "
                "content table: its encoder reads each entity's text, and without it the "
                "embeddings would not be the ones the run learned; embed data with its "
                "content table",
                file=Path(data) / CONTENT_FILE,
            )
        self.dataset = dataset = load_dataset(data)
        self.graph = graph = build_graph(dataset)
        self.as_of = parse_as_of(as_of, graph.manifest.time)
        # the encoder saw no edge at or after this time (see training.as_of)
        self.trained_until = run_trained_until(
            self.run, config.train_until, config.select, graph.manifest.time
        )
        # ...but chose its checkpoint on edges before this one (None: a refresh run)
        self.selected_until = run_selected_until(self.run, config.select, graph.manifest.time)
        path = self.run / "checkpoints" / f"{checkpoint}.pt"
        state = load_checkpoint(path)
        self.step = int(state["step"])
        self.trained_on = str(state["fingerprint"])
        check_type_layout(state, graph.manifest, path)
        self._content = None
        if config.use_content:
            from hir_sdk.knowledge import ContentEncoder

            self._content = ContentEncoder()  # kept: `at` reuses its loaded vector cache
        self.audience = run_audience(self.run)  # the basis the run trained with, if any
        self._audience_terms: AudienceTerms | None = None  # built by the first `at`
        self.attributes = run_attributes(self.run)  # its attribute scale, if any
        featurizer = make_featurizer(
            dataset,
            graph,
            config,
            knowledge_as_of=self.as_of,
            encoder=self._content,
            audience=self.audience,
            attributes=self.attributes,
        )
        self.sampler_config = config.sampler()  # the views the run trained with
        self.builder = BatchBuilder(graph, self.sampler_config, featurizer=featurizer)
        self.model = HierarchicalEncoder(encoder_config(graph, featurizer, config)).eval()
        try:
            self.model.load_state_dict(state["teacher"])
        except RuntimeError:
            raise InputError(
                "this dataset does not fit the run: its node types, edge types or feature "
                f"columns differ from the data the run was trained on ({self.trained_on}), "
                "or an older SDK trained the run (its encoder had other parameters)",
                file=path,
            ) from None
        self.impl = choose_impl(Impl.AUTO, torch.device("cpu"), grad=True)  # as in training
        self.batch_size = batch_size
        # every rank of a torchrun group embeds its share of each call (embed_nodes)
        self.across_ranks = across_ranks

    @functools.cached_property
    def encoder_hash(self) -> str:
        """A digest of the encoder's weights (bit for bit), which an embeddings folder
        records so that its quantizer is never paired with another encoder."""
        return state_hash(self.model.state_dict())[:16]

    def at(self, as_of: str | int) -> Embedder:
        """The same run and dataset as of another time: shares the graph and the model,
        rebuilds only what depends on the time (pooled world knowledge, audience rows,
        the views)."""
        if self.audience is not None and self._audience_terms is None:
            hashes = self.builder.featurizer.node_hashes
            self._audience_terms = AudienceTerms.of(self.audience, self.graph, hashes)
        moved = copy.copy(self)
        moved.as_of = parse_as_of(as_of, self.graph.manifest.time)
        featurizer = make_featurizer(
            self.dataset,
            self.graph,
            self.config,
            knowledge_as_of=moved.as_of,
            like=self.builder.featurizer,
            encoder=self._content,
            audience=self.audience,
            audience_terms=self._audience_terms,  # found once, for every later time
            attributes=self.attributes,
        )
        moved.builder = BatchBuilder(self.graph, self.sampler_config, featurizer=featurizer)
        return moved

    @property
    def prototypes(self) -> list[np.ndarray]:
        """Unit-norm interest prototypes per level, coarse to fine: (K_l, out_dim)."""
        return [p.detach().numpy() for p in self.model.prototypes.prototypes()]

    def entities(
        self, node_types: list[str] | None = None, *, before: int | None = None
    ) -> np.ndarray:
        """Global indices of the nodes of `node_types` (default: all; a type named twice
        counts once) created before as_of (or before `before`)."""
        g = self.graph
        types = list(g.node_types) if node_types is None else list(dict.fromkeys(node_types))
        nodes = [
            np.arange(g.type_offsets[c], g.type_offsets[c + 1])
            for c in (g.type_code(t) for t in types)
        ]
        nodes = np.concatenate(nodes) if nodes else np.zeros(0, dtype=np.int64)
        return nodes[g.created_ts[nodes] < (self.as_of if before is None else before)]

    def embed(
        self, nodes: np.ndarray, cutoffs: np.ndarray | None = None
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Embeddings (N, out_dim) and cluster logits per level of `nodes`, as of as_of, or
        each as of its own `cutoffs[i]` (views hold only edges before it). World knowledge
        pooled and audience rows built as of `as_of` are used only at cutoffs from `as_of`
        on, so an earlier cutoff never reads them (`KnowledgeBase.gather`,
        `AudienceRows.gather`)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if cutoffs is None:
            cutoffs = np.full(len(nodes), self.as_of, dtype=np.int64)
        return embed_nodes(
            self.model,
            self.builder,
            self.sampler_config.teacher,
            nodes,
            np.asarray(cutoffs, dtype=np.int64),
            impl=self.impl,
            batch_size=self.batch_size,
            across_ranks=self.across_ranks,
        )
