"""The synthetic ads world: a generator with a planted interest hierarchy to score against.

The names below are imported on first use (`hir_sdk.lazy_exports`): the configuration
(`SCALES`, `SynthConfig`) loads without numpy and pyarrow, which the generator needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hir_sdk.lazy_exports import lazy_exports

# name -> the module of this package that defines it
_MODULES = {
    "SCALES": "config",
    "FunnelRates": "config",
    "SynthConfig": "config",
    "Targeting": "config",
    "TRUTH_DIR": "world",
    "World": "world",
    "generate_world": "world",
    "write_world": "world",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:
    from hir_sdk.synth.config import SCALES, FunnelRates, SynthConfig, Targeting
    from hir_sdk.synth.world import TRUTH_DIR, World, generate_world, write_world
