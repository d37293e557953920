"""Every setting of the main job in one object: the encoder's training settings before the
schedule, the schedule, and the A/B."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hir_sdk.evaluation.pipeline import ABConfig
    from hir_sdk.training import TrainConfig

DEFAULT_STEPS = 300  # the first encoder's training steps
# the A/B treatments the job offers against XGBoost: the arms that read its snapshots
TREATMENTS = ("xgboost+hir", "multistage", "xgboost+multistage", "xgboost+hir+multistage")
# the encoder settings the job's schedule decides for every run, whatever a config file
# says (`JobSettings.first_run`, `training.refresh_chain`): key -> what decides it instead
SCHEDULED_KEYS = {
    "steps": "--steps trains the first encoder, --refresh-steps each refresh",
    "seed": "--seed",
    "train_until": "the refresh schedule: the first encoder trains until the middle of the "
    "training window, the refreshes until the validation and the test start",
    "select": 'every run keeps its last checkpoint (select = "last"), so nothing after its '
    "train_until is read",
    "eval_every": "a third of --steps, at most a refresh's steps",
    "checkpoint_every": "a third of --steps, at most a refresh's steps",
}


def encoder_settings(
    config: str | Path | None, has_content: bool, defaults: TrainConfig | None = None
) -> TrainConfig:
    """The encoder's settings before the job's schedule: `defaults` (batches of 64 when
    None) with content features on when there is content, and over them `config` (a
    `hir fit` TOML file): the keys it sets replace those of the defaults, and it decides
    content features only when it sets `use_content`."""
    from hir_sdk.training import TrainConfig
    from hir_sdk.training.config import config_from_dict, read_config_table

    base = dataclasses.replace(defaults or TrainConfig(batch_size=64), use_content=has_content)
    if not config:
        return base
    raw = read_config_table(config)
    return config_from_dict(_overlay(base.to_dict(), raw), Path(config))


class ScheduleWarning(UserWarning):
    """A job's config file sets encoder settings that the job replaces with its own
    values, or an `init_from` that its first encoder warm-starts from."""


def scheduled_keys(config: str | Path | None, settings: JobSettings) -> list[str]:
    """The keys of `SCHEDULED_KEYS` that the config file `config` sets to values other
    than those the job trains with under `settings` (none without a file). The file's
    values are those of `settings.encoder`; the job's are `settings.first_run()`'s, with
    `select = "last"`; a `train_until` counts unless empty, since the schedule sets it
    from the data."""
    if not config:
        return []
    from hir_sdk.training.config import read_config_table

    raw, first = read_config_table(config), settings.first_run()
    used = {key: getattr(first, key) for key in SCHEDULED_KEYS} | {"select": "last"}
    used["train_until"] = ""  # the refresh schedule's, whatever the file says
    return [
        key for key in SCHEDULED_KEYS if key in raw and getattr(settings.encoder, key) != used[key]
    ]


def schedule_warning(
    config: str | Path | None, settings: JobSettings, command: str = "the job"
) -> str:
    """What `command` (the job, `hir run`, `hir demo`) does otherwise than the config
    file `config` says, in one warning ("" when nothing): the `scheduled_keys`, each
    with what decides it instead, and an `init_from`, from which only the first encoder
    warm-starts (one that is not a training run is left to the job's error)."""
    if not config:
        return ""
    from hir_sdk.errors import InputError
    from hir_sdk.training.preflight import check_init_from

    unused = scheduled_keys(config, settings)
    parts = []
    if unused:
        instead = "; ".join(f"{key}: {SCHEDULED_KEYS[key]}" for key in unused)
        parts.append(
            f"{command} sets {', '.join(unused)} itself and does not use the file's values "
            f"({instead}). Remove them from the file to silence this; `hir fit --config` "
            "trains one encoder with them"
        )
    init_from = settings.encoder.init_from
    if init_from:
        try:
            check_init_from(init_from)
        except InputError:  # the job refuses it, with its own error
            init_from = ""
    if init_from:
        warm = (
            f"{'T' if parts else 't'}he first encoder warm-starts from the file's init_from, "
            f"{init_from} (each refresh from the run before it); set "
            'init_from = "" to train it from scratch'
        )
        parts.append(warm)
    return ". ".join(parts)


def _overlay(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with the keys of `over` replacing its own, table by table."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _overlay(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class JobSettings:
    """The main job's settings. `steps` trains the first encoder; each of the two refresh
    runs trains `refresh_steps` warm-started steps (None: a third of `steps`; 0: no
    refresh, one encoder). `seed` seeds the encoder's training, the snapshots and the
    A/B's bootstrap of `bootstrap` user resamples; `treatment` (one of `TREATMENTS`) is
    the A/B's arm against XGBoost. The A/B's settings are checked when the object is
    made, before any work."""

    encoder: TrainConfig
    seed: int = 0
    steps: int = DEFAULT_STEPS
    refresh_steps: int | None = None
    bootstrap: int = 200
    treatment: str = TREATMENTS[0]

    def __post_init__(self) -> None:
        from hir_sdk.errors import InputError

        if self.treatment not in TREATMENTS:
            raise InputError(
                f"the job's A/B treatment must be one of {list(TREATMENTS)}, got {self.treatment!r}"
            )
        if self.steps < 1 or (self.refresh_steps is not None and self.refresh_steps < 0):
            raise InputError(
                f"the job needs steps >= 1 and refresh_steps >= 0, got {self.steps} and "
                f"{self.refresh_steps}"
            )
        self.ab  # noqa: B018  (builds the A/B settings, which check the bootstrap count)

    @property
    def refresh(self) -> int:
        """Warm-started steps of each refresh run (0: none)."""
        return max(self.steps // 3, 1) if self.refresh_steps is None else self.refresh_steps

    def first_run(self) -> TrainConfig:
        """The first encoder's training settings: the encoder settings with the job's
        steps and seed, validated and checkpointed every third of the steps."""
        every = max(self.steps // 3, 1)
        return dataclasses.replace(
            self.encoder,
            steps=self.steps,
            seed=self.seed,
            eval_every=every,
            checkpoint_every=every,
        )

    @property
    def ab(self) -> ABConfig:
        """The A/B: the treatment (XGBoost + HIR features by default) against XGBoost."""
        from hir_sdk.evaluation.pipeline import ABConfig

        return ABConfig(
            control="xgboost", treatment=self.treatment, n_bootstrap=self.bootstrap, seed=self.seed
        )

    @classmethod
    def for_data(
        cls,
        data: str | Path,
        config: str | Path | None = None,
        *,
        seed: int = 0,
        steps: int = DEFAULT_STEPS,
        refresh_steps: int | None = None,
        bootstrap: int = 200,
        treatment: str = TREATMENTS[0],
    ) -> JobSettings:
        """The settings for the dataset folder `data`: content features on when it has a
        content table, and `config` (a `hir fit` TOML file) over the encoder's defaults. A
        `ScheduleWarning` says what of `config` the job does otherwise
        (`schedule_warning`)."""
        from hir_sdk.schema.dataset import CONTENT_FILE

        return cls._with_warning(
            config,
            (Path(data) / CONTENT_FILE).exists(),
            None,
            seed=seed,
            steps=steps,
            refresh_steps=refresh_steps,
            bootstrap=bootstrap,
            treatment=treatment,
        )

    @classmethod
    def with_encoder(
        cls,
        config: str | Path | None,
        has_content: bool,
        encoder_defaults: TrainConfig | None = None,
        *,
        seed: int = 0,
        steps: int = DEFAULT_STEPS,
        refresh_steps: int | None = None,
        bootstrap: int = 200,
        treatment: str = TREATMENTS[0],
    ) -> JobSettings:
        """The settings with the encoder's from `config` over `encoder_defaults` (see
        `encoder_settings`), for a caller that knows whether the data has content before
        the data exists (`hir demo` writes its world after checking its options). A
        `ScheduleWarning` says what of `config` the job does otherwise
        (`schedule_warning`)."""
        return cls._with_warning(
            config,
            has_content,
            encoder_defaults,
            seed=seed,
            steps=steps,
            refresh_steps=refresh_steps,
            bootstrap=bootstrap,
            treatment=treatment,
        )

    @classmethod
    def _with_warning(
        cls,
        config: str | Path | None,
        has_content: bool,
        encoder_defaults: TrainConfig | None,
        **job: Any,
    ) -> JobSettings:
        """`with_encoder`, warning its caller's caller (`stacklevel=3`)."""
        settings = cls(encoder=encoder_settings(config, has_content, encoder_defaults), **job)
        note = schedule_warning(config, settings)
        if note:
            warnings.warn(f"{config}: {note}", ScheduleWarning, stacklevel=3)
        return settings

    def to_dict(self, data: str) -> dict[str, object]:
        """Every setting of the job, as written to `job.toml`: the data, the schedule, the
        A/B and the encoder's settings before the schedule (each run's `config.toml` holds
        what that run trained with)."""
        ab = self.ab
        return {
            "data": data,
            "seed": self.seed,
            "steps": self.steps,
            "refresh_steps": self.refresh,
            "ab": {"control": ab.control, "treatment": ab.treatment, "bootstrap": ab.n_bootstrap},
            "encoder": self.encoder.to_dict(),
        }
