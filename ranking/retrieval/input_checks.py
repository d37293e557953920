"""Argument checks shared by the retrieval modules; each raises `InputError` quoting the
offending values.

- `as_codes`: an (N, M) integer array with every code in [0, K).
- `as_embeddings`: a finite (N, D) float32 array, optionally of a required shape.
- `check_positive`: k, candidate budgets, chunk sizes.
- `check_rows`: the shared "these rows are bad" error.
- `check_probes`, `as_occupied`: multi-probe arguments (probes per codebook, occupied
  codewords).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from hir_sdk.errors import MAX_SHOWN_ROWS, InputError

ArrayLike = np.ndarray | torch.Tensor


def to_numpy(values: ArrayLike | list) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        return values.detach().cpu().numpy()
    return np.asarray(values)


def check_rows(ok: np.ndarray, problem: str, describe: Callable[[int], str]) -> None:
    """Raise `InputError(problem)` quoting the first rows where (N,) bool `ok` is False."""
    bad = np.flatnonzero(~ok)
    if bad.size:
        shown = [describe(int(r)) for r in bad[:MAX_SHOWN_ROWS]]
        raise InputError(problem, rows=shown, total=int(bad.size))


def check_positive(value: int, name: str) -> int:
    """`value` as an int, or `InputError` if it is not a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def as_codes(codes: ArrayLike, codebook_size: int, name: str = "codes") -> np.ndarray:
    """`codes` as a contiguous (N, M) int64 array with entries in [0, codebook_size)."""
    check_positive(codebook_size, "codebook_size")
    array = to_numpy(codes)
    if array.ndim != 2 or array.shape[1] < 1:
        raise InputError(f"{name} must have shape (N, M) with M >= 1, got {array.shape}")
    if array.dtype.kind not in "iu":
        raise InputError(f"{name} must hold integers, got dtype {array.dtype}")
    array = np.ascontiguousarray(array, dtype=np.int64)
    check_rows(
        ((array >= 0) & (array < codebook_size)).all(axis=1),
        f"{name} must lie in [0, {codebook_size}) (codebook_size)",
        lambda r: f"row {r}: {array[r].tolist()}",
    )
    return array


def as_embeddings(
    values: ArrayLike, name: str, *, rows: int | None = None, dim: int | None = None
) -> np.ndarray:
    """`values` as a contiguous, finite (rows, dim) float32 array."""
    array = to_numpy(values)
    if array.ndim != 2:
        raise InputError(f"{name} must have shape (N, D), got {array.shape}")
    if rows is not None and array.shape[0] != rows:
        raise InputError(f"{name} must have {rows} rows, got {array.shape[0]}")
    if dim is not None and array.shape[1] != dim:
        raise InputError(f"{name} must have dimension {dim}, got {array.shape[1]}")
    if array.dtype.kind not in "fiu":
        raise InputError(f"{name} must hold numbers, got dtype {array.dtype}")
    array = np.ascontiguousarray(array, dtype=np.float32)
    check_rows(
        np.isfinite(array).all(axis=1),
        f"{name} must be finite (as float32)",
        lambda r: f"row {r}: {array[r, :4].tolist()}...",
    )
    return array


def check_probes(probes: object, levels: int, size: int) -> np.ndarray:
    """(M,) int probes per codebook from one int or M ints, each in [0, K = `size`)."""
    per_level = np.asarray(probes)
    if per_level.ndim == 0:
        per_level = np.full(levels, per_level)
    if (
        per_level.shape != (levels,)
        or per_level.dtype.kind not in "iu"
        or (per_level < 0).any()
        or (per_level >= size).any()
    ):
        raise InputError(
            f"probes must be one int or {levels} ints in [0, K = {size}), got {probes!r}"
        )
    return per_level


def as_occupied(occupied: ArrayLike, levels: int, size: int) -> np.ndarray:
    """The first `levels` rows of an (M, K = `size`) bool array of occupied codewords."""
    held = to_numpy(occupied)
    if held.dtype != np.bool_ or held.ndim != 2 or held.shape[1] != size:
        raise InputError(f"occupied must be a bool (M, K = {size}) array, got {held.shape}")
    if held.shape[0] < levels:
        raise InputError(f"occupied has {held.shape[0]} codebooks, the scores {levels}")
    return held[:levels]
