"""The trainer: self-distillation + engagement prediction on training-window anchors, model
selection on the validation window, atomic checkpoints, bit-identical resume.

A refresh run (`select = "last"`, see `training.as_of`) does no model selection: it never
reads the validation window, and `best.pt` is its last checkpoint. A run that selects on
validation validates every `eval_every` steps and at the step where it stops (the end,
or `max_steps`), so a finished run always has the `best.pt` that `hir embed` reads.

The run folder is an output of kind "run" (see `hir_sdk.io.output_folder`): a new run
starts only in an absent or empty folder, a resumed one continues only in a run folder,
and neither may be, hold or lie inside the dataset or the `init_from` run.

```
RUN/
  config.toml  meta.json  metrics.jsonl
  audience.npz  attributes.npz   (sampling.audience, .node_attributes; when the run has them)
  checkpoints/last.pt  checkpoints/best.pt
```
The terms of each step are `training.step_terms`. Step `k` trains on batch `k mod n` of
epoch `k div n` (the loader's order is a pure function of seed, epoch and batch) and on
engagement pairs drawn with (seed, k), so a run resumed from any checkpoint continues
exactly as the uninterrupted run would.
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TextIO

import numpy as np
import torch
from tqdm import tqdm

from hir_sdk import __version__
from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph, build_graph
from hir_sdk.graph.creation_order import check_creation_order
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.io.atomic import atomic_write_text
from hir_sdk.io.output_folder import check_not_input, check_ours, claim_dir
from hir_sdk.model import HierarchicalEncoder, Impl, choose_impl
from hir_sdk.sampling.loader import (
    AnchorSchedule,
    BatchBuilder,
    LoaderConfig,
    anchors_from_events,
    make_loader,
)
from hir_sdk.schema import load_dataset
from hir_sdk.schema.manifest import TimeSplits
from hir_sdk.training.as_of import selected_until, training_graph
from hir_sdk.training.checkpoint import copy_checkpoint, load_checkpoint, save_checkpoint
from hir_sdk.training.cluster_queue import ClusterQueue
from hir_sdk.training.config import TrainConfig
from hir_sdk.training.config_diff import config_differences, describe_differences, predates
from hir_sdk.training.distributed import (
    average_float_buffers,
    average_gradients,
    device_for,
    local_rank,
    mean_over_ranks,
    on_rank_zero,
    world,
)
from hir_sdk.training.embed_nodes import embed_nodes
from hir_sdk.training.encoder_setup import encoder_config, training_inputs, write_inputs
from hir_sdk.training.metrics_log import METRICS_FILE, metrics_up_to
from hir_sdk.training.objectives import (
    EngagementSampler,
    EngagementScorer,
)
from hir_sdk.training.pair_views import StepPairViews
from hir_sdk.training.preflight import check_before_loading
from hir_sdk.training.prototype_seeding import seed_prototypes, seeding_type_codes
from hir_sdk.training.similarity_terms import SimilarityTerms
from hir_sdk.training.step_terms import StepTerms
from hir_sdk.training.type_layout import check_type_layout, type_layout
from hir_sdk.training.warm_start import warm_start_state


@dataclass(frozen=True)
class TrainResult:
    steps: int
    best_validation: float
    run: Path


def _check_view_relations(config: TrainConfig, graph: TemporalGraph) -> None:
    """An `InputError` when a view's `edge_types` names a relation the dataset lacks, or
    one that several edge types share: resolved as the sampler resolves them."""
    relations = sorted({spec.rel for spec in graph.manifest.edge_types})
    for name in ("teacher_view", "student_view"):
        wanted = getattr(config, name).edge_types
        if not wanted:
            continue
        try:
            graph.edge_type_codes(list(wanted))
        except InputError as err:
            raise InputError(
                f"{name}.edge_types {list(wanted)}: {err.problem} (the dataset's "
                f"relations: {relations})"
            ) from None


class Trainer(StepTerms):
    def __init__(
        self,
        data: str | Path,
        run: str | Path,
        config: TrainConfig | None = None,
    ) -> None:
        self.config = config or TrainConfig()
        self.run = Path(run)
        c = self.config
        self._sources = (data, c.init_from or None)
        check_not_input(self.run, self._sources)  # the folder itself: see fit()
        check_before_loading(c, data)  # init_from, device, seed types: before minutes of work
        dataset = load_dataset(data)
        full = build_graph(dataset)
        check_creation_order(full, data)  # a node used before it exists: refused up front
        self.graph = graph = training_graph(full, c.train_until, c.select)
        self.selects = c.select == "validation"  # else a refresh run: best.pt = last.pt
        owners = OwnersAsOf(graph)  # the engagement samplers read them as of their window
        # whether the text says what users engage with, and so the settings this run trains
        # with (written whole into its config.toml; see content_agreement)
        self.inputs = training_inputs(dataset, graph, c)
        self.featurizer, self.content_agreement = self.inputs.featurizer, self.inputs.agreement
        self.config = c = self.inputs.config
        self.sampler_config = c.sampler()  # the views, written with the run's config
        _check_view_relations(c, graph)  # a typo here failed in a loader worker, late
        self.builder = BatchBuilder(graph, self.sampler_config, featurizer=self.featurizer)
        knowledge = self.featurizer.knowledge
        self.similarity = SimilarityTerms.build(graph, knowledge, c, owners=owners)
        if self.similarity.collaborative_pairs is not None:  # written resolved, as above
            pairs = self.similarity.collaborative_pairs.pairs
            self.config = c = replace(c, collaborative=replace(c.collaborative, pairs=pairs))
        self.rank, self.world_size = world()
        anchors, cutoffs = anchors_from_events(graph, "train")
        if len(anchors) == 0:
            raise InputError(
                "the encoder's training window (up to its train_until, hir fit --until, "
                "else the validation start) has no exposure, click or conversion to learn "
                "from (none, or each at its nodes' created_ts: a view needs what came before "
                "its event); check that window against the edges' timestamps and the nodes' "
                "created_ts"
            )
        self.schedule = AnchorSchedule(
            anchors,
            cutoffs,
            LoaderConfig(
                batch_size=c.batch_size,
                num_workers=c.num_workers,
                seed=c.seed,
                rank=self.rank,
                world_size=self.world_size,
                order=c.anchor_order,
            ),
        )
        self.seed_anchors = np.flatnonzero(
            np.isin(
                graph.node_type_of(self.schedule.anchors),
                seeding_type_codes(graph, c.distill.seed_types),
            )
        )
        if c.distill.seed_prototypes_at and len(self.seed_anchors) < c.model.prototypes[0]:
            raise InputError(
                f"the encoder's training window is too small for its interest clusters: their "
                f"coarsest level ({c.model.prototypes[0]} clusters, model.prototypes) is "
                f"started from as many training anchors of the seeding types, and the window "
                f"has {len(self.seed_anchors)}; give a longer log, or fewer clusters "
                "(model.prototypes in a --config file)"
            )
        negatives = {
            "hard_negatives": c.engagement.hard_negatives,
            "exposed_negatives": c.engagement.exposed_negatives,
        }
        self.engage_train = EngagementSampler(
            graph, owners, "train", c.engagement.roles, **negatives
        )
        if self.selects:
            val_anchors, val_cutoffs = anchors_from_events(graph, "validation")
            pick = np.random.default_rng([c.seed, 0x5A1]).permutation(len(val_anchors))
            pick = np.sort(pick[: c.eval_anchors])
            self.val_anchors, self.val_cutoffs = val_anchors[pick], val_cutoffs[pick]
            self.engage_val = EngagementSampler(
                graph, owners, "validation", c.engagement.roles, **negatives
            )
        torch.manual_seed(c.seed)
        self.model_config = encoder_config(graph, self.featurizer, c)
        self.student = HierarchicalEncoder(self.model_config)
        self.teacher = copy.deepcopy(self.student).requires_grad_(False).eval()
        self.scorer = EngagementScorer(
            len(graph.edge_types), c.model.out_dim, scale=c.engagement.scale
        )
        cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
        self.device = device_for(c.device, local_rank(), cuda_devices)  # cuda:LOCAL_RANK
        if c.init_from:
            self._warm_start(c.init_from, dataset.manifest.time)
        for module in (self.student, self.teacher, self.scorer):
            module.to(self.device)
        self.queue = ClusterQueue(c.distill.queue, c.model.out_dim, self.device)
        self.impl = choose_impl(Impl.AUTO, self.device, grad=True)
        params = [*self.student.parameters(), *self.scorer.parameters()]
        self.optimizer = torch.optim.AdamW(params, lr=c.optim.lr, weight_decay=c.optim.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: c.optim.lr_factor(s, c.steps)
        )

        self.step = 0
        self.best_validation = float("inf")

    def _warm_start(self, init_from: str, splits: TimeSplits) -> None:
        """Start from an earlier run's weights (see `training.warm_start`); `splits` are
        the dataset's own (the run's graph has its training window moved)."""
        state = warm_start_state(init_from, splits, self.trained_until)
        check_type_layout(state, self.graph.manifest, Path(init_from))
        modules = {"student": self.student, "teacher": self.teacher, "scorer": self.scorer}
        try:
            for part, module in modules.items():
                module.load_state_dict(state[part])
        except RuntimeError:
            raise InputError(
                "init_from's model does not fit this run: its sizes (model.*) or the "
                "dataset's node types, edge types or feature columns differ",
                file=init_from,
            ) from None

    @property
    def trained_until(self) -> int:
        """The end of this run's training window: it reads no edge at or after it."""
        return self.graph.manifest.time.validation_start

    # ---- checkpoints -------------------------------------------------------------------
    @property
    def checkpoints(self) -> Path:
        return self.run / "checkpoints"

    def state(self) -> dict[str, object]:
        return {
            "step": self.step,
            "student": self.student.state_dict(),
            "teacher": self.teacher.state_dict(),
            "scorer": self.scorer.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "queue": self.queue.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else [],
            "best_validation": self.best_validation,
            "config": self.config.to_dict(),
            "fingerprint": self.graph.fingerprint,
            **type_layout(self.graph.manifest),
        }

    def resume(self, path: str | Path | None = None) -> None:
        """Continue from a checkpoint (default: this run's last one)."""
        path = Path(path or self.checkpoints / "last.pt")
        state = load_checkpoint(path)
        if state["fingerprint"] != self.graph.fingerprint:
            raise InputError(
                f"checkpoint was trained on data {state['fingerprint']}, this "
                f"dataset is {self.graph.fingerprint}",
                file=path,
            )
        if state["config"] != self.config.to_dict():
            differ = config_differences(state["config"], self.config.to_dict())
            advice = (
                "it was written by an older hir-sdk, which had no value for settings added "
                "since: train it again"
                if predates(differ)
                else "resume with the run's own config.toml"
            )
            raise InputError(
                f"checkpoint was trained with another config ({describe_differences(differ)}); "
                f"{advice}",
                file=path,
            )
        log = self.run / METRICS_FILE  # drop steps logged after this checkpoint
        kept = metrics_up_to(log, int(state["step"])) if log.exists() else None
        self.student.load_state_dict(state["student"])
        self.teacher.load_state_dict(state["teacher"])
        self.scorer.load_state_dict(state["scorer"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.queue.load_state_dict(state["queue"])
        torch.set_rng_state(state["torch_rng"])
        if self.device.type == "cuda" and state.get("cuda_rng"):
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.step = int(state["step"])
        self.best_validation = float(state["best_validation"])
        if kept is not None:
            atomic_write_text(log, kept)

    @torch.no_grad()
    def validate(self) -> dict[str, float]:
        """Metrics of the validation anchors and pairs, the same on every rank and for any
        number of ranks: each rank computes them on all of the same inputs (anchors, pairs
        and the cluster queue, which holds the whole batches on every rank), and they are
        averaged over the ranks so that every rank takes the same decision on them."""
        if not self.selects:
            raise ValueError("a refresh run (select = 'last') reads no validation window")
        self.student.eval()
        batch = self.builder.build(self.val_anchors, self.val_cutoffs)
        with self._autocast():
            loss, metrics = self._losses(
                batch, self.config.seed + 1, 0, self.engage_val, learn=False
            )
        self.student.train()
        return {f"val_{k}": v for k, v in mean_over_ranks(metrics).items()}

    def _ema(self) -> None:
        m = self.config.optim.ema
        with torch.no_grad():
            for t, s in zip(self.teacher.parameters(), self.student.parameters(), strict=True):
                t.mul_(m).add_(s.detach(), alpha=1 - m)

    def embed(
        self, nodes: np.ndarray, cutoffs: np.ndarray, *, batch_size: int = 256, teacher: bool = True
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Embeddings (N, out_dim) and cluster logits per level of `nodes` as of `cutoffs`,
        from the teacher's broad view (the EMA model is the one to deploy)."""
        model = self.teacher if teacher else self.student
        view = self.sampler_config.teacher if teacher else self.sampler_config.student
        return embed_nodes(
            model, self.builder, view, nodes, cutoffs, impl=self.impl, batch_size=batch_size
        )

    def _seed_prototypes(self) -> None:
        """Re-seat the teacher's and student's prototypes on the teacher's embeddings of a
        fixed sample of the training anchors of the seeding types (`distill.seed_types`;
        drawn with the seed and step): hierarchical
        k-means, see `training.prototype_seeding`. The prototypes' optimizer moments
        restart, as for new parameters."""
        c = self.config
        anchors, cutoffs = self.schedule.anchors, self.schedule.cutoffs
        rng = np.random.default_rng([c.seed, self.step, 0x5EED])
        pick = np.sort(
            self.seed_anchors[rng.permutation(len(self.seed_anchors))][: c.distill.seed_rows]
        )
        z, _ = self.embed(anchors[pick], cutoffs[pick])
        seed_prototypes(self.teacher.prototypes, z, seed=c.seed + self.step)
        self.student.prototypes.load_state_dict(self.teacher.prototypes.state_dict())
        for param in self.student.prototypes.parameters():
            self.optimizer.state.pop(param, None)

    def _save(self, name: str) -> None:
        """Write checkpoint `name` (`best.pt` or `last.pt`; a refresh run's `best.pt` is
        its last checkpoint)."""
        save_checkpoint(self.state(), self.checkpoints / name)
        if name == "last.pt" and not self.selects:
            copy_checkpoint(self.checkpoints / "last.pt", self.checkpoints / "best.pt")

    # ---- the loop ----------------------------------------------------------------------
    def _write_run_files(self) -> None:
        """Claim the run folder (a new run: absent or empty; continuing, after `resume`
        or an earlier `fit`: a run folder) and write its config and metadata."""
        c = self.config
        continuing = self.step > 0
        if continuing and self.run.is_dir() and any(self.run.iterdir()):
            check_ours(self.run, kind="run", inputs=self._sources)
        else:
            claim_dir(self.run, kind="run", inputs=self._sources)
        atomic_write_text(self.run / "config.toml", c.to_toml())
        write_inputs(self.run, self.inputs)
        meta = {
            "sdk_version": __version__,
            "torch": torch.__version__,
            "seed": c.seed,
            "fingerprint": self.graph.fingerprint,
            "dataset": self.graph.manifest.name,
            "attention": self.impl.value,
            "world_size": self.world_size,
            "trained_until": self.trained_until,
            "selected_until": selected_until(c.select, self.graph.manifest.time),
        }
        if self.content_agreement is not None:
            meta["content_agreement"] = {
                "auc": self.content_agreement.auc,
                "pairs": self.content_agreement.pairs,
            }
        choice = self.similarity.collaborative_pairs
        if choice is not None:
            coverage = None if math.isnan(choice.coverage) else choice.coverage
            meta["collaborative_pairs"] = {"pairs": choice.pairs, "coverage": coverage}
        atomic_write_text(self.run / "meta.json", json.dumps(meta, indent=2) + "\n")

    def _start_run(self) -> TextIO:
        """Write the run's config and metadata; return its metrics log, open to append."""
        self._write_run_files()
        return (self.run / "metrics.jsonl").open("a", encoding="utf-8")

    def fit(self, max_steps: int | None = None, progress: bool = True) -> TrainResult:
        c = self.config
        stop = min(c.steps, max_steps) if max_steps is not None else c.steps
        main = self.rank == 0
        log = on_rank_zero(self._start_run)  # rank 0's metrics log; None on the others
        per_epoch = len(self.schedule)
        seed_steps = c.distill.seed_steps(
            c.steps, warm_start=bool(c.init_from), keeps_last=not self.selects
        )
        clusters_from = c.distill.clusters_from(c.steps, c.batch_size, keeps_last=not self.selects)
        bar = tqdm(total=stop, initial=self.step, disable=not (progress and main), desc="fit")
        self.student.train()
        # bit-identical runs: the gathers behind the bias tables accumulate gradients with
        # index_put, whose default CPU kernel adds in thread order
        was_deterministic = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            while self.step < stop:
                epoch, index = divmod(self.step, per_epoch)
                pair_views = StepPairViews(
                    self.engage_train,
                    c.engagement.pairs,
                    c.seed,
                    self.rank,
                    self.world_size,
                    self.sampler_config.student,
                )
                loader = make_loader(
                    self.builder,
                    self.schedule,
                    epoch=epoch,
                    start_batch=index,
                    extra=pair_views,
                    anchors_from=clusters_from,
                )
                batches = iter(loader)
                for _ in range(min(per_epoch - index, stop - self.step)):
                    waited = time.perf_counter()
                    batch = next(batches)
                    started = time.perf_counter()
                    with self._autocast():
                        loss, metrics = self._losses(
                            batch,
                            c.seed,
                            self.step,
                            self.engage_train,
                            clusters=self.step >= clusters_from,
                        )
                    forward = time.perf_counter()
                    self.optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    average_gradients([*self.student.parameters(), *self.scorer.parameters()])
                    backward = time.perf_counter()
                    grad = torch.nn.utils.clip_grad_norm_(
                        [*self.student.parameters(), *self.scorer.parameters()], c.optim.clip_norm
                    )
                    self.optimizer.step()
                    self.scheduler.step()
                    self._ema()
                    average_float_buffers(self.student)  # the type centres, as the weights
                    average_float_buffers(self.teacher)
                    updated = time.perf_counter()
                    self.step += 1
                    if self.step in seed_steps:
                        self._seed_prototypes()
                    record = {
                        "step": self.step,
                        "epoch": epoch,
                        **metrics,
                        "grad_norm": float(grad),
                        "lr": self.scheduler.get_last_lr()[0],
                        # host-side times: on a GPU they end at launch, not at completion
                        "data_wait_s": started - waited,
                        "forward_s": forward - started,  # losses (teacher included)
                        "backward_s": backward - forward,  # and the gradients' all-reduce
                        "update_s": updated - backward,  # clipping, optimizer, EMA
                        "step_s": time.perf_counter() - started,
                    }
                    # validate at the stop too (stop <= c.steps), so best.pt always exists
                    if self.selects and (self.step % c.eval_every == 0 or self.step == stop):
                        record |= self.validate()
                        if record["val_loss"] < self.best_validation:  # alike on all ranks
                            self.best_validation = record["val_loss"]
                            on_rank_zero(lambda: self._save("best.pt"))
                    # rank 0 writes; every rank learns whether it could (`on_rank_zero`)
                    if self.step % c.checkpoint_every == 0 or self.step == stop:
                        on_rank_zero(lambda: self._save("last.pt"))
                    on_rank_zero(partial(_append_line, log, json.dumps(record)))
                    bar.update(1)
                    bar.set_postfix(loss=f"{metrics['loss']:.3f}")
        finally:
            batches = None  # noqa: F841  an error would hold the loader to teardown
            torch.use_deterministic_algorithms(was_deterministic)
            if log is not None:
                log.close()
            bar.close()
        return TrainResult(steps=self.step, best_validation=self.best_validation, run=self.run)


def _append_line(log: TextIO, line: str) -> None:
    """Append `line` to the open metrics log and flush it (rank 0 holds the log)."""
    log.write(line + "\n")
    log.flush()
