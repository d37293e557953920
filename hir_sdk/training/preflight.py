"""The checks of a training config that need the dataset's manifest at most, never its
tables or its graph, so they can refuse a run in a second rather than after the data is
validated and the graph built:

- `init_from` names a training run (a folder with its `config.toml`);
- `device` can be had on this machine (`device = "cuda"` needs a visible GPU; under
  `torchrun`, one per rank of the machine);
- `distill.seed_types` are node types of the dataset;
- `use_content = true` has a content table to read: no default turns it on without one
  (`hir run` turns it on only for data that has the table), so a run that sets it on
  data without text was asked for text it cannot have, and is refused rather than
  trained without any.

`check_before_loading` runs them all; `Trainer` calls it before it reads the data, and
`hir run`'s job before it builds the graph. The places that use each setting raise the
same messages through the same functions (`warm_start`, `prototype_seeding`,
`distributed.device_for`), for callers that reach them another way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.errors import InputError
from hir_sdk.schema.dataset import CONTENT_FILE
from hir_sdk.schema.manifest import MANIFEST_FILE, DatasetManifest, load_manifest

if TYPE_CHECKING:
    from hir_sdk.training.config import TrainConfig


def check_init_from(run: str | Path) -> None:
    """An `InputError` unless `run` is a training run's folder."""
    if not (Path(run) / "config.toml").is_file():
        raise InputError("init_from is not a training run (no config.toml)", file=run)


def check_seed_types(names: Sequence[str], manifest: DatasetManifest) -> None:
    """An `InputError` naming the prototype-seeding types that the dataset lacks."""
    unknown = [name for name in names if name not in manifest.node_types]
    if unknown:
        raise InputError(
            f"distill.seed_types {unknown} are not node types of the dataset "
            f"{list(manifest.node_types)}"
        )


def check_device(choice: str) -> None:
    """An `InputError` when the training device `choice` is not on this machine (as
    `distributed.device_for` resolves it for this process's rank)."""
    if choice == "cpu":
        return
    import torch

    from hir_sdk.training.distributed import device_for, local_rank

    cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    device_for(choice, local_rank(), cuda_devices)


def check_content(use_content: bool, root: Path) -> None:
    """An `InputError` naming the missing content table when `use_content` asks for the
    text of the dataset folder `root` and it has none."""
    if use_content and not (root / CONTENT_FILE).exists():
        raise InputError(
            "use_content = true, but the dataset has no content table: add it, or set "
            "use_content = false to train without text",
            file=root / CONTENT_FILE,
        )


def check_before_loading(config: TrainConfig, data: str | Path) -> DatasetManifest:
    """Every check of the module docstring for training `config` on the dataset folder
    `data`; returns its manifest. Raises `InputError` as reading the data would for a
    missing folder or a bad manifest."""
    root = Path(data)
    if not root.is_dir():
        raise InputError("dataset folder not found", file=root)
    manifest = load_manifest(root / MANIFEST_FILE)
    if config.init_from:
        check_init_from(config.init_from)
    check_seed_types(config.distill.seed_types, manifest)
    check_content(config.use_content, root)
    check_device(config.device)
    return manifest
