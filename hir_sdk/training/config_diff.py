"""The settings two configs disagree on, for a message that names them.

A checkpoint stores its run's settings (`TrainConfig.to_dict()`); `Trainer.resume`
refuses to continue under other ones. The refusal names what differs, nested keys
dotted, so the user sees which setting changed, and whether the checkpoint predates a
setting (a run written by an older hir-sdk has no value for settings added since).
"""

from __future__ import annotations

from typing import Any

ABSENT = "absent"
SHOWN = 5  # differences a description names (then "and N more")


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """`"key: <saved> in the checkpoint, <current> now"` for each setting (nested keys
    dotted, in sorted order) whose value differs, `absent` where one side lacks it."""
    out: list[str] = []
    _walk(saved, current, "", out)
    return out


def describe_differences(differences: list[str]) -> str:
    """The first `SHOWN` of `differences` (`config_differences`), joined, and how many
    more there are."""
    more = f"; and {len(differences) - SHOWN} more" if len(differences) > SHOWN else ""
    return "; ".join(differences[:SHOWN]) + more


def predates(differences: list[str]) -> bool:
    """Whether the checkpoint lacks a setting the current config has (an older writer)."""
    return any(f"{ABSENT} in the checkpoint" in d for d in differences)


def _walk(saved: Any, current: Any, prefix: str, out: list[str]) -> None:
    if isinstance(saved, dict) and isinstance(current, dict):
        for key in sorted(set(saved) | set(current)):
            name = f"{prefix}{key}"
            if key not in saved or key not in current:
                was = repr(saved[key]) if key in saved else ABSENT
                now = repr(current[key]) if key in current else ABSENT
                out.append(f"{name}: {was} in the checkpoint, {now} now")
            else:
                _walk(saved[key], current[key], f"{name}.", out)
    elif saved != current:
        out.append(f"{prefix.rstrip('.')}: {saved!r} in the checkpoint, {current!r} now")
