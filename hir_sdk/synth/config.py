"""Configuration of the synthetic ads world: sizes per scale and the funnel's behaviour."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import DAY

WORLD_START = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class FunnelRates:
    """Probabilities of each funnel step by interest match between user and ad.

    Each tuple is indexed by match level: 0 = same leaf, 1 = same mid, 2 = same super,
    3 = unrelated. Conversions depend on the fine-grained (leaf) match.
    """

    click: tuple[float, float, float, float] = (0.05, 0.025, 0.012, 0.005)
    add_to_cart: tuple[float, float, float, float] = (0.30, 0.08, 0.03, 0.01)
    purchase: tuple[float, float, float, float] = (0.45, 0.20, 0.10, 0.05)
    pixel_fire: float = 0.9  # a purchase fires the advertiser's pixel (when it has one)
    other_product: float = 0.2  # add-to-cart lands on another product of the same advertiser

    def __post_init__(self) -> None:
        for name in ("click", "add_to_cart", "purchase"):
            probs = getattr(self, name)
            if len(probs) != 4 or not all(0.0 <= p <= 1.0 for p in probs):
                raise ValueError(f"FunnelRates.{name} needs four probabilities, got {probs}")


@dataclass(frozen=True)
class Targeting:
    """How the ad system picks an impression's ad: by the user's current leaf, a sibling
    leaf of the same mid, any leaf of the same super-interest, or at random."""

    leaf: float = 0.45
    sibling: float = 0.15
    same_super: float = 0.10

    def __post_init__(self) -> None:
        if (
            min(self.leaf, self.sibling, self.same_super) < 0
            or self.leaf + self.sibling + self.same_super > 1
        ):
            raise ValueError("Targeting shares must be >= 0 and sum to at most 1")


@dataclass(frozen=True)
class SynthConfig:
    """Sizes and timing of one synthetic world, and how hard it is to read.

    `content_reveal` is the share of advertisers, products and ads whose text is drawn
    from their own leaf; the others' text comes from a random leaf, independent of their
    interest (1 = every text reveals its leaf, 0 = none does). `interest_drift` is the
    probability, per user and day, that one of the user's interest slots moves to a
    related leaf; later impressions and conversions follow the moved leaf. The defaults
    (1 and 0) give the same world as before these knobs existed.
    """

    scale: str
    n_users: int
    n_advertisers: int
    impressions_per_user: float
    days: int = 60
    validation_days: int = 14  # longer than the attribution window, so some labels mature
    test_days: int = 14
    cold_start_days: int = 21
    cold_start_share: float = 0.10
    attribution_window_days: float = 7.0
    start: int = WORLD_START
    funnel: FunnelRates = field(default_factory=FunnelRates)
    targeting: Targeting = field(default_factory=Targeting)
    content_reveal: float = 1.0
    interest_drift: float = 0.0

    def __post_init__(self) -> None:
        for name in ("content_reveal", "interest_drift"):
            _check_unit_interval(name, getattr(self, name))
        if self.n_users < 1 or self.n_advertisers < 1 or self.impressions_per_user <= 0:
            raise ValueError("SynthConfig needs users, advertisers and impressions")
        if self.validation_days + self.test_days >= self.days:
            raise ValueError("validation + test windows must be shorter than the world")
        if not 0 <= self.cold_start_share < 1:
            raise ValueError("cold_start_share must be in [0, 1)")

    @property
    def end(self) -> int:
        return self.start + self.days * DAY

    @property
    def test_start(self) -> int:
        return self.end - self.test_days * DAY

    @property
    def validation_start(self) -> int:
        return self.test_start - self.validation_days * DAY


def _check_unit_interval(name: str, value: object) -> None:
    """`value` must be a real number in [0, 1] (an `InputError` names the knob otherwise)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise InputError(f"{name} must be a number in [0, 1], got {value!r}")


SCALES: dict[str, SynthConfig] = {
    "tiny": SynthConfig("tiny", n_users=1_000, n_advertisers=60, impressions_per_user=40.0),
    # the quick `hir demo`'s world: `small`'s advertisers (the same ads per interest) for
    # fewer users, and a test window of 21 days, so that 14 days of exposures have labels
    # that mature inside it (enough test conversions for a small world's A/B)
    "quick": SynthConfig(
        "quick",
        n_users=6_000,
        n_advertisers=1_000,
        impressions_per_user=48.0,
        days=67,
        test_days=21,
    ),
    "small": SynthConfig("small", n_users=20_000, n_advertisers=1_000, impressions_per_user=48.0),
    "medium": SynthConfig(
        "medium", n_users=200_000, n_advertisers=8_000, impressions_per_user=48.0
    ),
}
