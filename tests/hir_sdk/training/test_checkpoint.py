"""Checkpoint files: atomic saves, and best.pt made from last.pt without a second write."""

from __future__ import annotations

import os

import pytest
import torch

from hir_sdk.errors import InputError
from hir_sdk.training.checkpoint import copy_checkpoint, load_checkpoint, save_checkpoint


@pytest.mark.parametrize("links", [True, False])
def test_copy_checkpoint_keeps_its_version_when_the_source_is_saved_again(
    tmp_path, monkeypatch, links
):
    if not links:  # a file system without hard links: a byte copy instead

        def refuse(*_args, **_kwargs):
            raise OSError("hard links not supported")

        monkeypatch.setattr(os, "link", refuse)
    last, best = tmp_path / "last.pt", tmp_path / "best.pt"
    save_checkpoint({"step": 1, "w": torch.arange(4.0)}, last)
    copy_checkpoint(last, best)
    assert best.read_bytes() == last.read_bytes()
    assert (os.stat(best).st_ino == os.stat(last).st_ino) is links
    save_checkpoint({"step": 2, "w": torch.zeros(4)}, last)
    kept = load_checkpoint(best)
    assert kept["step"] == 1 and torch.equal(kept["w"], torch.arange(4.0))
    assert load_checkpoint(last)["step"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "last.pt"]  # no temp left


def test_copy_checkpoint_of_a_missing_file_leaves_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        copy_checkpoint(tmp_path / "last.pt", tmp_path / "best.pt")
    assert not any(tmp_path.iterdir())
    with pytest.raises(InputError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "best.pt")
