"""The terms of one training step, as the trainer computes them (`StepTerms`, a part of
`Trainer`): the anchors' distillation term, the engagement pairs' terms (engagement, the
cross-view cluster term, content similarity, collaborative targets) and their sum with
the step's metrics. `DistillConfig.clusters_from` says from which step the cluster terms,
and every pass they need, are in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch

from hir_sdk.model import HierarchicalEncoder
from hir_sdk.model.inputs import EncoderInputs, inputs_from_packed
from hir_sdk.sampling.packing import PackedBatch
from hir_sdk.training.diagnostics import cluster_usage
from hir_sdk.training.distributed import gather_shares
from hir_sdk.training.objectives import (
    EngagementSample,
    EngagementSampler,
    distillation_loss,
    engagement_loss,
)
from hir_sdk.training.pair_views import draw_pairs

if TYPE_CHECKING:
    from hir_sdk.model import Impl
    from hir_sdk.sampling.config import SamplerConfig
    from hir_sdk.sampling.loader import BatchBuilder
    from hir_sdk.training.cluster_queue import ClusterQueue
    from hir_sdk.training.config import TrainConfig
    from hir_sdk.training.objectives import EngagementScorer
    from hir_sdk.training.similarity_terms import SimilarityTerms


class PairTerms(NamedTuple):
    """Terms on the engagement pairs' views: the engagement loss and its positive and
    negative logits, the cross-distillation loss (each end of a positive edge predicts the
    teacher's clusters of the other), the content-similarity and collaborative-target
    losses, and the number of subgraph tokens the views hold."""

    engagement: torch.Tensor
    pos: torch.Tensor
    neg: torch.Tensor
    cross: torch.Tensor
    content: torch.Tensor
    collaborative: torch.Tensor
    tokens: int


class AnchorTerms(NamedTuple):
    """The distillation term of a step's anchors, the teacher's embeddings of their broad
    views (for the queue) with the views' node types, the subgraph tokens through student
    and teacher, and the per-level cluster diagnostics."""

    distill: torch.Tensor
    teacher: torch.Tensor
    types: torch.Tensor
    student_tokens: int
    teacher_tokens: int
    diagnostics: dict[str, float]


class StepTerms:
    """The step's terms, computed from the trainer's models, queue and views (the
    attributes below, which `Trainer` sets)."""

    config: TrainConfig
    device: torch.device
    impl: Impl
    student: HierarchicalEncoder
    teacher: HierarchicalEncoder
    scorer: EngagementScorer
    queue: ClusterQueue
    builder: BatchBuilder
    sampler_config: SamplerConfig
    similarity: SimilarityTerms
    rank: int
    world_size: int

    def _inputs(self, packed: PackedBatch) -> EncoderInputs:
        return inputs_from_packed(packed).to(self.device)

    def _similarities(self, model: HierarchicalEncoder, z: torch.Tensor) -> list[torch.Tensor]:
        """Prototype cosines in float32 even under autocast (bf16 would blur the targets)."""
        with torch.autocast(self.device.type, enabled=False):
            return model.prototypes.similarities(z.float())

    def _autocast(self) -> torch.autocast:
        """bf16 autocast for the forward passes (`precision`: "auto" on a GPU only)."""
        precision = self.config.precision
        bf16 = precision == "bfloat16" or (precision == "auto" and self.device.type == "cuda")
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16)

    def _targets(self, z: torch.Tensor, types: torch.Tensor, step: int) -> list[torch.Tensor]:
        """Balanced cluster targets of teacher embeddings `z` (over the queue, per type)."""
        d = self.config.distill
        return self.queue.targets(
            lambda rows: self._similarities(self.teacher, rows),
            z,
            types,
            epsilon=d.teacher_epsilon_at(step),
            iterations=d.sinkhorn_iterations,
        )

    def _engagement(
        self,
        model: HierarchicalEncoder,
        sampler: EngagementSampler,
        seed: int,
        step: int,
        *,
        share: bool = True,
        built: PackedBatch | None = None,
        clusters: bool = True,
    ) -> PairTerms:
        """The terms computed on the engagement pairs' views (see `PairTerms`); `built`:
        those views, when the loader built them (`StepPairViews`); without `clusters`, no
        cross-view cluster term (zero), and no teacher pass for it."""
        c = self.config
        # this rank's share of the pairs (validation: all of them, see `validate`)
        ranks = (self.rank, self.world_size) if share else (0, 1)
        d = draw_pairs(sampler, c.engagement.pairs, seed, step, *ranks)
        s, mine, parts, count, nodes = d.sample, d.mine, d.parts, d.count, d.nodes
        if built is None:  # the loader did not build them (validation)
            built = self.builder.build_view(nodes, d.cutoffs, self.sampler_config.student)
        inputs = self._inputs(built)
        z = model(inputs, self.impl).embedding
        types = inputs.node_type[inputs.offsets[:-1]]  # of each view's node, in part order
        etype = torch.from_numpy(s.etype[mine]).to(self.device)
        dst = torch.from_numpy(parts[1]).to(self.device)
        loss, pos, neg = engagement_loss(
            self.scorer,
            z.float(),
            etype,
            count,
            dst=dst,
            dst_type=types[count : 2 * count],
            in_batch=c.engagement.in_batch,
            log_q=self._log_q(s, mine) if c.engagement.logq_correction else None,
        )
        cross = torch.zeros((), device=self.device)
        if clusters and c.distill.cross_weight > 0:
            with torch.no_grad():
                zt = self.teacher(inputs, self.impl).embedding[: 2 * count]
            q_src, q_dst = zip(
                *(q.split(count) for q in self._targets(zt, types[: 2 * count], step)),
                strict=True,
            )
            ends = z[: 2 * count] if c.distill.shapes_encoder else z[: 2 * count].detach()
            sims_src, sims_dst = zip(
                *(x.split(count) for x in self._similarities(model, ends)), strict=True
            )
            tau = c.distill.student_temperature
            cross = (
                distillation_loss(list(sims_src), list(q_dst), student_temperature=tau)
                + distillation_loss(list(sims_dst), list(q_src), student_temperature=tau)
            ) / 2
        content, collaborative = self.similarity.losses(nodes, z, types)
        return PairTerms(loss, pos, neg, cross, content, collaborative, int(inputs.offsets[-1]))

    def _log_q(self, s: EngagementSample, mine: slice) -> tuple[torch.Tensor, torch.Tensor]:
        """The draws' log-probabilities of this rank's pairs (see `engagement_loss`)."""
        return (
            torch.from_numpy(s.dst_log_q[mine]).float().to(self.device),
            torch.from_numpy(s.neg_log_q[:, mine]).float().to(self.device),
        )

    def _losses(
        self,
        batch,
        seed: int,
        step: int,
        sampler: EngagementSampler,
        *,
        learn: bool = True,
        clusters: bool = True,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """The step's loss and metrics. Without `clusters` (see `DistillConfig.clusters_from`)
        the cluster terms are zero and left out of the metrics, with every pass they need:
        the anchors' views through student and teacher, and the teacher's pass over the
        pairs' views."""
        c = self.config
        anchors = self._anchor_terms(batch, step, learn=learn) if clusters else None
        built = batch.extra if learn else None  # the loader's views are of a rank's share
        pairs = self._engagement(
            self.student, sampler, seed, step, share=learn, built=built, clusters=clusters
        )
        distill = anchors.distill if anchors else torch.zeros((), device=self.device)
        loss = (
            c.distill.weight * distill
            + c.engagement.weight * pairs.engagement
            + c.distill.cross_weight * pairs.cross
            + c.content.weight * pairs.content
            + c.collaborative.weight * pairs.collaborative
        )
        if anchors and learn:  # every rank queues the whole batch, as one rank would
            self.queue.push(*gather_shares(anchors.teacher, anchors.types))
        metrics = {"loss": loss.item()}
        if anchors:
            metrics |= {"distill": distill.item(), "cross": pairs.cross.item()}
        metrics |= {
            "content": pairs.content.item(),
            "collaborative": pairs.collaborative.item(),
            "engagement": pairs.engagement.item(),
            "engagement_acc": float(
                ((pairs.pos > 0).float().mean() + (pairs.neg < 0).float().mean()) / 2
            ),
            # subgraph tokens through the student (forward and backward) and through the
            # teacher (forward only; the pairs' views go through both): training compute
            "student_tokens": (anchors.student_tokens if anchors else 0) + pairs.tokens,
            "teacher_tokens": (anchors.teacher_tokens if anchors else 0)
            + (pairs.tokens if anchors and c.distill.cross_weight > 0 else 0),
        }
        if anchors:
            metrics |= anchors.diagnostics
        return loss, metrics

    def _anchor_terms(self, batch, step: int, *, learn: bool) -> AnchorTerms:
        """The distillation term of the step's anchors: the student's clusters of their
        views against the teacher's balanced targets of their broad views."""
        c = self.config
        student_inputs = self._inputs(batch.student)
        if c.distill.mask_anchor_id:
            student_inputs = student_inputs.without_anchor_id()
        # without `shapes_encoder` the anchors' views only place the prototypes
        with torch.set_grad_enabled(torch.is_grad_enabled() and c.distill.shapes_encoder):
            student = self.student(student_inputs, self.impl)
        teacher_inputs = self._inputs(batch.teacher)
        types = teacher_inputs.node_type[teacher_inputs.offsets[:-1]]
        with torch.no_grad():  # the teacher keeps its own type centres (not the student's)
            teacher = self.teacher(teacher_inputs, self.impl, track_centers=learn)
        targets = self._targets(teacher.embedding, types, step)
        distill = distillation_loss(
            self._similarities(self.student, student.embedding),
            targets,
            student_temperature=c.distill.student_temperature,
        )
        diagnostics = {}
        for level, (q, logits) in enumerate(zip(targets, student.logits, strict=True)):
            usage = cluster_usage(torch.softmax(logits.detach(), dim=1))
            diagnostics[f"l{level}_usage_entropy"] = usage["usage_entropy"]
            diagnostics[f"l{level}_empty_share"] = usage["empty_share"]
            diagnostics[f"l{level}_target_entropy"] = cluster_usage(q)["usage_entropy"]
        return AnchorTerms(
            distill,
            teacher.embedding.float(),
            types,
            int(student_inputs.offsets[-1]),
            int(teacher_inputs.offsets[-1]),
            diagnostics,
        )
