"""The synthetic ads world: a generator with a planted interest hierarchy to score against."""

from hir_sdk.synth.config import SCALES, FunnelRates, SynthConfig, Targeting
from hir_sdk.synth.world import TRUTH_DIR, World, generate_world, write_world

__all__ = [
    "SCALES",
    "TRUTH_DIR",
    "FunnelRates",
    "SynthConfig",
    "Targeting",
    "World",
    "generate_world",
    "write_world",
]
