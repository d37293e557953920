"""The settings two config dicts disagree on, named for a refused resume."""

from __future__ import annotations

from hir_sdk.training.config_diff import config_differences, describe_differences, predates


def test_differences_are_dotted_sorted_and_say_which_side_lacks_a_key():
    saved = {"seed": 0, "optim": {"lr": 0.003, "warmup": 10}, "old": True}
    current = {"seed": 0, "optim": {"lr": 0.001, "warmup": 10, "decay": 0.1}, "roles": ("a",)}
    assert config_differences(saved, current) == [
        "old: True in the checkpoint, absent now",
        "optim.decay: absent in the checkpoint, 0.1 now",
        "optim.lr: 0.003 in the checkpoint, 0.001 now",
        "roles: absent in the checkpoint, ('a',) now",
    ]
    assert config_differences(current, current) == []
    assert predates(config_differences(saved, current))  # optim.decay, roles: added since
    assert not predates(config_differences(current, {**current, "roles": ()}))


def test_a_description_names_five_and_counts_the_rest():
    saved = {f"k{i}": i for i in range(8)}
    current = {f"k{i}": -i - 1 for i in range(8)}
    described = describe_differences(config_differences(saved, current))
    assert described.startswith("k0: 0 in the checkpoint, -1 now; k1: 1 in the checkpoint")
    assert described.count("in the checkpoint") == 5 and described.endswith("; and 3 more")
    assert describe_differences(config_differences({"a": 1}, {"a": 2})) == (
        "a: 1 in the checkpoint, 2 now"
    )
