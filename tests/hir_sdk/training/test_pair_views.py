"""Engagement pairs' views built ahead by the loader: the same views the training process
would build, for the step the batch belongs to, and each rank's share of the draw."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hir_sdk.sampling.loader import AnchorSchedule, make_loader
from hir_sdk.training import Trainer
from hir_sdk.training.pair_views import StepPairViews, draw_pairs
from tests.hir_sdk.training.test_trainer import CONFIG


@pytest.fixture(scope="module")
def trainer(tiny_world, tmp_path_factory):
    return Trainer(tiny_world, tmp_path_factory.mktemp("pairs") / "run", CONFIG)


def _views(trainer, rank: int = 0, world_size: int = 1) -> StepPairViews:
    c = trainer.config
    return StepPairViews(
        trainer.engage_train,
        c.engagement.pairs,
        c.seed,
        rank,
        world_size,
        trainer.sampler_config.student,
    )


def _same(a, b) -> None:
    """Dataclasses of arrays (nested ones too) equal field by field, bit for bit."""
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if dataclasses.is_dataclass(x):
            _same(x, y)
        else:
            assert np.array_equal(x, y), field.name


@pytest.mark.parametrize("workers", [0, 1])
def test_the_loader_builds_the_views_of_its_steps_pairs(trainer, workers):
    s = trainer.schedule
    schedule = AnchorSchedule(
        s.anchors, s.cutoffs, dataclasses.replace(s.config, num_workers=workers)
    )
    per_epoch = len(schedule)
    batches = make_loader(trainer.builder, schedule, epoch=1, start_batch=2, extra=_views(trainer))
    for offset, batch in zip(range(2), batches, strict=False):
        step = per_epoch + 2 + offset  # epoch 1, batch 2 + offset
        d = draw_pairs(trainer.engage_train, CONFIG.engagement.pairs, CONFIG.seed, step, 0, 1)
        expected = trainer.builder.build_view(d.nodes, d.cutoffs, trainer.sampler_config.student)
        assert batch.extra is not None
        _same(batch.extra, expected)
    other = draw_pairs(trainer.engage_train, CONFIG.engagement.pairs, CONFIG.seed, step + 1, 0, 1)
    assert not np.array_equal(other.nodes, d.nodes)  # steps draw different pairs


def test_ranks_share_one_draw(trainer):
    pairs, seed = CONFIG.engagement.pairs, CONFIG.seed
    whole = draw_pairs(trainer.engage_train, pairs, seed, 7, 0, 1)
    shares = [draw_pairs(trainer.engage_train, pairs, seed, 7, r, 2) for r in range(2)]
    assert sum(s.count for s in shares) == whole.count == pairs
    for part in range(4):
        merged = np.empty_like(whole.parts[part])
        merged[0::2], merged[1::2] = shares[0].parts[part], shares[1].parts[part]
        assert np.array_equal(merged, whole.parts[part])
    nodes, cutoffs, view = _views(trainer, 1, 2)(7)
    assert np.array_equal(nodes, shares[1].nodes) and np.array_equal(cutoffs, shares[1].cutoffs)
    assert view == trainer.sampler_config.student
    assert len(nodes) == len(cutoffs) == 4 * shares[1].count


@pytest.mark.parametrize("workers", [0, 1])
def test_steps_before_anchors_from_get_the_pairs_views_alone(trainer, workers):
    """The batches of steps before `anchors_from` carry no anchor views, and their pairs'
    views are those of the loader that builds everything; from that step on, all views."""
    s = trainer.schedule
    schedule = AnchorSchedule(
        s.anchors, s.cutoffs, dataclasses.replace(s.config, num_workers=workers)
    )
    views = _views(trainer)
    full = list(make_loader(trainer.builder, schedule, epoch=0, start_batch=1, extra=views))
    part = list(
        make_loader(trainer.builder, schedule, epoch=0, start_batch=1, extra=views, anchors_from=3)
    )
    assert len(part) == len(full) >= 3
    for step, (a, b) in enumerate(zip(part, full, strict=True), start=1):
        _same(a.extra, b.extra)
        if step < 3:
            assert a.teacher is None and a.student is None
        else:
            _same(a.teacher, b.teacher)
            _same(a.student, b.student)
