"""Training configuration: nested frozen dataclasses, read from and written to TOML.

The main keys and their defaults (every key: docs/training.md, Configuration):

```toml
steps = 200
batch_size = 64
seed = 0
[model]        dim = 128, heads = 4, layers = 2, out_dim = 32, prototypes = [16, 128, 1024]
[optim]        lr = 3e-3, weight_decay = 0.05, warmup_steps = 20, clip_norm = 1.0, ema = 0.95
[distill]      student_temperature = 0.1, teacher_epsilon = 0.05, sinkhorn_iterations = 3
[engagement]   pairs = 128, weight = 1.0
[content]      weight = 6.0, target_temperature = 0.002, co_engagement = 4.0
[collaborative] weight = 0.0, dim = 64, roles = ["exposure", "click"], pairs = "auto"
[audience]     dim = 64, roles = ["exposure", "click"], basis_at = 0.5
[teacher_view] fanout = [16, 8], max_nodes = 96    (sampling.config.ViewConfig)
[student_view] fanout = [8], max_nodes = 24
```
Unknown keys are an error (a typo must not silently train with defaults).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import tomli_w

from hir_sdk.errors import InputError
from hir_sdk.model.config import PrototypeConfig, check_encoder_sizes
from hir_sdk.sampling.config import ANCHOR_ORDERS, SamplerConfig, ViewConfig
from hir_sdk.schema.manifest import EDGE_ROLES
from hir_sdk.training.as_of import SELECTIONS
from hir_sdk.training.co_engagement import ROLES as CO_ENGAGEMENT_ROLES

# which pairs the collaborative targets factorise: the exposures that converted, the
# edges of `roles`, or the first where they reach enough of the nodes (collaborative_targets)
COLLABORATIVE_PAIRS = ("auto", "converted", "reached")
MAX_SEED = 2**63 - 1  # seeds feed numpy and torch generators, which take up to 64 bits


class ConfigError(InputError, ValueError):
    """A bad config value: an `InputError` (one message, exit code 2, also when a CLI option
    such as `hir fit --seed` replaces a value) that is still a `ValueError`."""


@dataclass(frozen=True)
class ModelSizes:
    dim: int = 128
    heads: int = 4
    layers: int = 2
    out_dim: int = 32
    prototypes: tuple[int, ...] = (16, 128, 1024)
    center_types: bool = False  # per-type centred embeddings (see docs/encoder.md)

    def __post_init__(self) -> None:
        """The encoder's own checks (`hir_sdk.model.config`), at load time rather than when
        the trainer builds the encoder."""
        try:
            check_encoder_sizes(self.dim, self.heads, self.layers, self.out_dim)
            PrototypeConfig(sizes=tuple(self.prototypes))
        except ValueError as err:
            raise ConfigError(f"ModelSizes: {err}") from None


@dataclass(frozen=True)
class OptimConfig:
    lr: float = 3e-3
    weight_decay: float = 0.05
    warmup_steps: int = 20
    clip_norm: float = 1.0
    ema: float = 0.95  # teacher = ema * teacher + (1 - ema) * student

    def __post_init__(self) -> None:
        if not self.lr > 0 or not 0 <= self.ema < 1 or self.warmup_steps < 0:
            raise ConfigError("OptimConfig: need lr > 0, 0 <= ema < 1, warmup_steps >= 0")

    def lr_factor(self, step: int, total: int) -> float:
        """The share of `lr` at `step` of `total`: linear warm-up, then cosine decay."""
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        progress = (step - self.warmup_steps) / max(total - self.warmup_steps, 1)
        return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


@dataclass(frozen=True)
class DistillConfig:
    student_temperature: float = 0.1
    teacher_epsilon: float = 0.05  # Sinkhorn entropy (the teacher's sharpness)
    teacher_epsilon_start: float = 0.05  # linear warm-up from this value ...
    teacher_warmup_steps: int = 0  # ... to teacher_epsilon over these steps
    sinkhorn_iterations: int = 3
    weight: float = 1.0
    queue: int = 2048  # recent teacher embeddings the targets are balanced over, per type
    cross_weight: float = 1.0  # each end of an engagement edge predicts the other's clusters
    mask_anchor_id: bool = True  # the student does not see its anchor's id hash
    # False: the cluster terms train the prototypes only (they read the embedding space
    # that engagement shapes, and do not pull it towards balanced clusters)
    shapes_encoder: bool = True
    # shares of `steps` after which the prototypes are re-seated on the teacher's
    # embeddings of `seed_rows` training anchors by hierarchical k-means (where the
    # cluster terms only read the space, fewer: see `seed_steps`)
    seed_prototypes_at: tuple[float, ...] = (0.5, 0.8)
    seed_rows: int = 8192
    # node types whose anchors seed them; empty: the types engaged with (the destinations
    # of exposure, click, engagement and conversion edges: ads, products, pixels), whose
    # embeddings are single interests, not the mixtures users are
    seed_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if min(self.student_temperature, self.teacher_epsilon, self.teacher_epsilon_start) <= 0:
            raise ConfigError("DistillConfig: temperatures must be > 0")
        if self.queue < 0 or self.cross_weight < 0:
            raise ConfigError("DistillConfig: queue and cross_weight must be >= 0")
        if self.teacher_warmup_steps < 0:
            raise ConfigError("DistillConfig: teacher_warmup_steps must be >= 0")
        if not all(0 < share <= 1 for share in self.seed_prototypes_at) or self.seed_rows < 1:
            raise ConfigError(
                "DistillConfig: seed_prototypes_at shares must be in (0, 1], seed_rows >= 1"
            )

    def seed_steps(
        self, steps: int, *, warm_start: bool = False, keeps_last: bool = False
    ) -> set[int]:
        """The steps (1-based, after the update) at which the prototypes are seeded.

        Without `shapes_encoder` the prototypes shape nothing but the clusters. A warm
        start then does not seed: it starts from prototypes seated on its init run's
        embeddings, and the cluster terms keep them on the space as it moves. A run that
        keeps its last checkpoint (`keeps_last`: a refresh run) seeds once, at its last
        share: that seeding re-seats them whatever came before. (A run that selects its
        checkpoint on validation seeds at every share: it may keep one from before the
        last.)
        Each seeding left out saves a pass of the teacher over `seed_rows` broad views."""
        steps_at = {max(1, round(share * steps)) for share in self.seed_prototypes_at}
        if self.shapes_encoder or not steps_at:
            return steps_at
        if warm_start:
            return set()
        return {max(steps_at)} if keeps_last else steps_at

    def clusters_from(self, steps: int, anchors_per_step: int, *, keeps_last: bool = False) -> int:
        """The first step (0-based) whose loss includes the cluster terms.

        Where the cluster terms only read the space and a run keeps its last checkpoint,
        they train the prototypes alone, and only their last stretch reaches what the run
        keeps:

        - a run that seeds once (`seed_steps`) re-seats the prototypes then, whatever the
          terms trained before: the teacher's passes and the terms before it serve
          nothing the run keeps. They start just in time to fill the queue the targets
          after the seeding are balanced over.
        - a warm start does not seed: its prototypes start where its init run left them,
          near the space, which moves little in a refresh. The terms that keep them on it
          start where a cold run's would (the last seeding share, less the steps that
          fill the queue), so that they follow the last stretch of the run.

        Everywhere else: from step 0."""
        if self.shapes_encoder or not keeps_last:
            return 0
        fill = -(-self.queue // anchors_per_step)  # steps whose anchors fill the queue
        # a warm start's own seeding steps are none: those a cold run would have
        seeds = self.seed_steps(steps, keeps_last=True)
        if not seeds:
            return 0
        return max(0, min(seeds) - fill)

    def teacher_epsilon_at(self, step: int) -> float:
        """The teacher's Sinkhorn epsilon at a training step (the temperature schedule)."""
        if step >= self.teacher_warmup_steps:
            return self.teacher_epsilon
        share = step / self.teacher_warmup_steps
        return self.teacher_epsilon_start + share * (
            self.teacher_epsilon - self.teacher_epsilon_start
        )


@dataclass(frozen=True)
class EngagementConfig:
    pairs: int = 128  # positive edges per step; each gets a random and a hard negative
    weight: float = 1.0
    roles: tuple[str, ...] = ("click", "engagement", "conversion")
    in_batch: float = 1.0  # weight of the in-batch softmax (see objectives)
    # subtract each candidate's log sampling probability in that softmax (keeps popularity)
    logq_correction: bool = False
    hard_negatives: bool = False  # a second negative from the destination's owner
    # a second negative the source was exposed to without acting on (before hard_negatives)
    exposed_negatives: bool = False
    # the scorer's logit scale at the start (learned from there): the corrected softmax's
    # logits span the draws' log-probabilities, wider than a unit-norm score at 5 reaches
    scale: float = 5.0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ConfigError(f"EngagementConfig: scale must be > 0, got {self.scale}")
        unknown = sorted(set(self.roles) - set(EDGE_ROLES))
        if unknown:
            raise ConfigError(
                f"EngagementConfig: roles {unknown} are not funnel roles {EDGE_ROLES}"
            )


@dataclass(frozen=True)
class ContentConfig:
    """Content-similarity distillation (`training.content_similarity`); only with
    `use_content`."""

    weight: float = 6.0
    target_temperature: float = 0.002
    temperature: float = 0.1
    # weight of the co-engaged content in the targets (`training.co_engagement`); 0: none
    co_engagement: float = 4.0
    co_engagement_roles: tuple[str, ...] = CO_ENGAGEMENT_ROLES

    def __post_init__(self) -> None:
        if self.weight < 0 or min(self.target_temperature, self.temperature) <= 0:
            raise ConfigError("ContentConfig: need weight >= 0 and temperatures > 0")
        if self.co_engagement < 0:
            raise ConfigError("ContentConfig: co_engagement must be >= 0")
        unknown = sorted(set(self.co_engagement_roles) - set(EDGE_ROLES))
        if unknown:
            raise ConfigError(
                f"ContentConfig: co_engagement_roles {unknown} are not funnel roles {EDGE_ROLES}"
            )


@dataclass(frozen=True)
class CollaborativeConfig:
    """Collaborative targets (`training.collaborative_targets`): the destinations keep the
    neighbourhoods of a rank-`dim` SVD of who reached them, or of who converted through
    them (`pairs`). Content not needed."""

    weight: float = 0.0  # the engagement settings set COLLABORATIVE_WEIGHT
    dim: int = 64
    roles: tuple[str, ...] = CO_ENGAGEMENT_ROLES  # the edges that count as reaching a node
    pairs: str = "auto"  # one of COLLABORATIVE_PAIRS
    target_temperature: float = 0.002
    temperature: float = 0.1

    def __post_init__(self) -> None:
        if self.weight < 0 or self.dim < 1 or min(self.target_temperature, self.temperature) <= 0:
            raise ConfigError(
                "CollaborativeConfig: need weight >= 0, dim >= 1 and temperatures > 0"
            )
        if self.pairs not in COLLABORATIVE_PAIRS:
            raise ConfigError(
                f"CollaborativeConfig.pairs must be one of {COLLABORATIVE_PAIRS}, "
                f"got {self.pairs!r}"
            )
        unknown = sorted(set(self.roles) - set(EDGE_ROLES))
        if unknown or not self.roles:
            raise ConfigError(
                f"CollaborativeConfig: roles {unknown or '[]'} are not funnel roles {EDGE_ROLES}"
            )


@dataclass(frozen=True)
class AudienceConfig:
    """Audience vectors as an encoder input (`sampling.audience`): a rank-`dim` SVD of who
    reached what (`roles` edges), its basis fitted at `basis_at` of the way through the
    training window (the tokens after it learn to read the rows). `dim = 0`: off."""

    dim: int = 64
    roles: tuple[str, ...] = CO_ENGAGEMENT_ROLES
    basis_at: float = 0.5

    def __post_init__(self) -> None:
        if self.dim < 0 or not 0 < self.basis_at < 1:
            raise ConfigError("AudienceConfig: need dim >= 0 and 0 < basis_at < 1")
        unknown = sorted(set(self.roles) - set(EDGE_ROLES))
        if unknown or not self.roles:
            raise ConfigError(
                f"AudienceConfig: roles {unknown or '[]'} are not funnel roles {EDGE_ROLES}"
            )


OBJECTIVES = ("auto", "as_configured", "engagement")
PRECISIONS = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 200
    batch_size: int = 64
    seed: int = 0
    eval_every: int = 50
    eval_anchors: int = 256
    checkpoint_every: int = 50
    num_workers: int = 1  # loader processes preparing batches ahead (0: in the training loop)
    # the training window's anchors: "time" (week by week, in time order) or "spread"
    # (every stretch of batches spans the window); see sampling.loader
    anchor_order: str = "time"
    device: str = "auto"  # "auto" (CUDA when present), "cpu" or "cuda"
    # the forward passes' arithmetic: "auto" (bf16 autocast on CUDA, float32 on CPU),
    # "float32", or "bfloat16" (autocast on any device: on CPU only where it has native
    # bf16 matrix instructions, AVX512-BF16 or AMX; elsewhere bf16 is emulated)
    precision: str = "auto"
    use_content: bool = False  # embed entity text with the content encoder (slow first run)
    # read the numeric columns of nodes.parquet as node statistics (sampling.node_attributes)
    use_attributes: bool = True
    train_until: str = ""  # end the training window early (a time, see training.as_of)
    select: str = "validation"  # best.pt: lowest validation loss, or "last" (a refresh run)
    init_from: str = ""  # warm start: an earlier run whose best.pt weights this one starts from
    # "auto": the engagement settings without content, and with content when the text
    # says little about engagement (training.content_agreement), else the settings below;
    # "as_configured": always the settings below; "engagement": always the engagement ones
    objectives: str = "auto"
    model: ModelSizes = field(default_factory=ModelSizes)
    optim: OptimConfig = field(default_factory=OptimConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    engagement: EngagementConfig = field(default_factory=EngagementConfig)
    content: ContentConfig = field(default_factory=ContentConfig)
    collaborative: CollaborativeConfig = field(default_factory=CollaborativeConfig)
    audience: AudienceConfig = field(default_factory=AudienceConfig)
    # the teacher's and the student's view of each anchor (sampling.config): training and
    # every embedding of the run sample with these
    teacher_view: ViewConfig = field(default_factory=lambda: SamplerConfig().teacher)
    student_view: ViewConfig = field(default_factory=lambda: SamplerConfig().student)

    def __post_init__(self) -> None:
        if (
            min(
                self.steps,
                self.batch_size,
                self.eval_every,
                self.checkpoint_every,
                self.eval_anchors,
            )
            < 1
        ):
            raise ConfigError(
                "TrainConfig: steps, batch_size, eval_every, eval_anchors and checkpoint_every "
                "must be >= 1"
            )
        if self.num_workers < 0:
            raise ConfigError(
                f"TrainConfig.num_workers must be >= 0 (0: no loader process), "
                f"got {self.num_workers}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"TrainConfig.seed must be in [0, 2**63 - 1], got {self.seed}")
        if self.select not in SELECTIONS:
            raise ConfigError(
                f"TrainConfig.select must be one of {SELECTIONS}, got {self.select!r}"
            )
        if self.anchor_order not in ANCHOR_ORDERS:
            raise ConfigError(
                f"TrainConfig.anchor_order must be one of {ANCHOR_ORDERS}, "
                f"got {self.anchor_order!r}"
            )
        if self.objectives not in OBJECTIVES:
            raise ConfigError(
                f"TrainConfig.objectives must be one of {OBJECTIVES}, got {self.objectives!r}"
            )
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"TrainConfig.device must be auto, cpu or cuda, got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"TrainConfig.precision must be one of {PRECISIONS}, got {self.precision!r}"
            )
        try:
            self.sampler()
        except ValueError as err:
            raise ConfigError(f"TrainConfig: {err}") from None

    def sampler(self) -> SamplerConfig:
        """The views training and embedding sample, seeded with the run's seed."""
        return SamplerConfig(teacher=self.teacher_view, student=self.student_view, seed=self.seed)

    def to_dict(self) -> dict[str, Any]:
        """Every setting, nested as in TOML; settings that are None (a view's `edge_types`:
        all) are left out, as TOML has no null."""
        return _without_none(dataclasses.asdict(self))

    def to_toml(self) -> str:
        """Render as TOML that `load_config` reads back to an equal config: every value is
        rendered by `tomli_w`, so any string (an `init_from` path with quotes or
        backslashes) is escaped; arrays stay on one line, as in docs/training.md."""
        data = self.to_dict()
        lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
        for k, v in data.items():
            if isinstance(v, dict):
                lines += ["", f"[{k}]", *[f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]]
        return "\n".join(lines) + "\n"


def _without_none(table: dict[str, Any]) -> dict[str, Any]:
    return {
        k: _without_none(v) if isinstance(v, dict) else v for k, v in table.items() if v is not None
    }


def _toml_value(value: Any) -> str:
    """One TOML value written by `tomli_w` (which escapes strings); arrays on one line.
    Keys need no escaping: they are the dataclasses' field names."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return tomli_w.dumps({"v": value}).removeprefix("v = ").removesuffix("\n")


def _value(value: Any, hint: Any, key: str, file: Path | None) -> Any:
    """`value` of config key `key` checked against the field's type `hint` (TOML gives
    ints for floats written without a point: those are accepted)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):  # `X | None`: TOML writes X or leaves it out
        (inner,) = [a for a in args if a is not type(None)]
        return _value(value, inner, key, file)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"config key '{key}' must be an array, got {value!r}", file=file)
        return tuple(_value(v, args[0], key, file) for v in value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if hint is float and isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"config key '{key}' must be a finite number, got {value!r}", file=file)
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise InputError(
            f"config key '{key}' must be of type {hint.__name__}, got {value!r}", file=file
        )
    return value


def _build(cls: type, raw: dict[str, Any], where: str, file: Path | None) -> Any:
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(raw) - set(hints))
    if unknown:
        raise InputError(f"unknown config keys {[where + k for k in unknown]}", file=file)
    kwargs = {}
    for name, value in raw.items():
        if dataclasses.is_dataclass(hints[name]):
            if not isinstance(value, dict):
                raise InputError(f"config key '{where}{name}' must be a table", file=file)
            kwargs[name] = _build(hints[name], value, f"{where}{name}.", file)
        else:
            kwargs[name] = _value(value, hints[name], where + name, file)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as err:
        raise InputError(f"invalid config: {err}", file=file) from None


def config_from_dict(raw: dict[str, Any], file: Path | None = None) -> TrainConfig:
    return _build(TrainConfig, raw, "", file)


def read_config_table(path: str | Path) -> dict[str, Any]:
    """The TOML table of a config file, as written (keys it leaves out are absent)."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is harmless
    except FileNotFoundError:
        raise InputError("config file not found", file=path) from None
    except UnicodeDecodeError:
        raise InputError(
            "cannot read config: it is not UTF-8; save it as UTF-8", file=path
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"cannot read config: {err}", file=path) from None


def load_config(path: str | Path) -> TrainConfig:
    return config_from_dict(read_config_table(path), Path(path))
