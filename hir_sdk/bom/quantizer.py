"""What every quantizer shares: input checks, codes -> BoM tokens, errors, save and load.

Notable:
- a quantizer maps a vector to `num_codebooks` (M) codes, each in [0, `codebook_size`)
  (K); `tokens` turns codes into global ids `m * K + k`, so the M codes of one vector form
  an unordered bag of distinct tokens from a vocabulary of M * K (the Bag-of-Meaning);
- every mistake in the caller's data is an `InputError` naming a few offending rows:
  wrong ndim, non-numeric or non-finite values, the wrong width at encode time, too few
  rows to fit (N < K), codes of the wrong shape or out of range;
- sizes are bounded so that a typo cannot exhaust memory: M <= `MAX_CODEBOOKS`,
  K <= `MAX_CODEWORDS`, and `fit` refuses sizes whose working memory (`fit_bytes`: the
  codebooks, the largest distance block, the additive kind's (M*K, M*K) least-squares
  system) would pass `FIT_MEMORY_LIMIT`, before it allocates any of it;
- `save` writes a folder atomically (`hir_sdk.io.atomic`); `load` reads it back with
  `allow_pickle=False` and checks the kind, shapes and values:

```
QUANTIZER/
  quantizer.json   format version, SDK version, kind, constructor arguments, dim, seed,
                   fit options, data fingerprint, fit history
  codebooks.npz    codebooks: (M, K, D) float32 (additive, residual) or (M, K, D / M) (product)
```
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from hir_sdk import __version__
from hir_sdk.bom.kmeans import CHUNK_ROWS
from hir_sdk.errors import InputError
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.io.saved_meta import read_saved_meta

FORMAT_VERSION = 1
META_FILE = "quantizer.json"
ARRAYS_FILE = "codebooks.npz"
MAX_CODEBOOKS = 64  # M: codes per vector
MAX_CODEWORDS = 65_536  # K: codewords per codebook
FIT_MEMORY_LIMIT = 8 * 2**30  # bytes of working memory a fit may plan for
ROWS_PER_CODEWORD = 16  # fewest fitted rows per codeword that `codebook_size` allows

Q = TypeVar("Q", bound="Quantizer")


def codebook_size(rows: int, wanted: int) -> int:
    """Codewords per codebook to fit on `rows` vectors: `wanted`, halved (down to 2) until
    each codeword has at least `ROWS_PER_CODEWORD` rows. Each codebook is a k-means over
    residuals, which needs tens of rows per centre; with fewer, the codes memorise the
    fitted rows (near-zero error on them), most codewords hold one or two of them, so an
    inverted index over the tokens has near-empty posting lists, and the fit costs more."""
    size = wanted
    while size > 2 and size * ROWS_PER_CODEWORD > rows:
        size //= 2
    return size


def _shown(rows: np.ndarray, describe: Any) -> list[str]:
    return [describe(int(row)) for row in rows[:5]]


def check_vectors(x: Any, *, dim: int | None = None, what: str = "vectors") -> np.ndarray:
    """`x` as a C-contiguous (N, D) float32 array, or an `InputError` saying what is wrong.

    Args:
        x: array-like of shape (N, D).
        dim: the width `x` must have (`None`: any width >= 1).
        what: how the message names `x`.
    """
    array = np.asarray(x)
    if array.ndim != 2:
        raise InputError(f"{what} must be a 2-d (N, D) array, got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        raise InputError(f"{what} must be numeric, got dtype {array.dtype}")
    if array.shape[1] < 1:
        raise InputError(f"{what} have no columns (shape {array.shape})")
    if dim is not None and array.shape[1] != dim:
        raise InputError(
            f"{what} have {array.shape[1]} dims, but this quantizer was fitted on {dim}"
        )
    with np.errstate(over="ignore", invalid="ignore"):  # too large for float32: inf, below
        array = np.ascontiguousarray(array, dtype=np.float32)  # (N, D)
    finite = np.isfinite(array)
    if not finite.all():
        bad = np.flatnonzero(~finite.all(axis=1))
        raise InputError(
            f"{what} hold non-finite values (NaN or inf, or beyond float32 range)",
            rows=_shown(bad, lambda r: f"row {r}: {array[r][~finite[r]][:3].tolist()}"),
            total=len(bad),
        )
    return array


def check_codes(codes: Any, num_codebooks: int, codebook_size: int) -> np.ndarray:
    """`codes` as an (N, M) int64 array with every value in [0, K), or an `InputError`."""
    array = np.asarray(codes)
    if array.ndim != 2 or array.shape[1] != num_codebooks:
        raise InputError(f"codes must be (N, {num_codebooks}), got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise InputError(f"codes must be integers, got dtype {array.dtype}")
    array = array.astype(np.int64, copy=False)
    out = (array < 0) | (array >= codebook_size)
    if out.any():
        bad = np.flatnonzero(out.any(axis=1))
        raise InputError(
            f"codes out of range [0, {codebook_size})",
            rows=_shown(bad, lambda r: f"row {r}: {array[r].tolist()}"),
            total=len(bad),
        )
    return array


def whole_number(name: str, value: Any, *, least: int) -> int:
    """`value` as an int, or a `ValueError` unless it is a whole number >= `least`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    return int(value)


def check_sizes(num_codebooks: Any, codebook_size: Any) -> tuple[int, int]:
    """`(M, K)` as ints, or an error: a `ValueError` unless both are whole numbers >= 1,
    an `InputError` beyond `MAX_CODEBOOKS` / `MAX_CODEWORDS` (a caller can check sizes
    given on a command line with it before any other work)."""
    m = whole_number("num_codebooks", num_codebooks, least=1)
    k = whole_number("codebook_size", codebook_size, least=1)
    if m > MAX_CODEBOOKS or k > MAX_CODEWORDS:
        raise InputError(
            f"at most {MAX_CODEBOOKS} codebooks of at most {MAX_CODEWORDS:,} codewords, "
            f"got {m:,} codebooks of {k:,}"
        )
    return m, k


def fingerprint_array(x: np.ndarray) -> str:
    """SHA-256 of an array's shape and float32 bytes, as 16 hex digits."""
    digest = hashlib.sha256(str(x.shape).encode())
    digest.update(np.ascontiguousarray(x, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]


def squared_norms(r: np.ndarray) -> np.ndarray:
    """(N,) float32 ||r||^2 per row of `r` (N, D), e.g. of a residual x - x_hat."""
    return np.einsum("nd,nd->n", r, r)


class Quantizer(ABC):
    """Base of the quantizers: M codebooks of K codewords; subclasses define fit and codes.

    Args:
        num_codebooks: M, codes (and tokens) per vector.
        codebook_size: K, codewords per codebook.

    Attributes:
        codebooks: float32 codebooks after `fit` (shape depends on the kind), else None.
        dim: D, the width of the vectors it was fitted on (None before `fit`).
        seed: the seed `fit` used.
        fit_options: the other `fit` arguments, as saved.
        fingerprint: a hash of the training vectors, as saved.
        history: mean squared error per vector, ||x - x_hat||^2 averaged over the training
            rows, at each stage of `fit` (the keys depend on the kind).
    """

    kind: str = ""
    beam_size: int = 1  # partial codes kept per row when encoding (kinds with a beam set it)

    def __init__(self, num_codebooks: int = 8, codebook_size: int = 256) -> None:
        self.num_codebooks, self.codebook_size = check_sizes(num_codebooks, codebook_size)
        self.codebooks: np.ndarray | None = None
        self.dim: int | None = None
        self.seed: int | None = None
        self.fit_options: dict[str, Any] = {}
        self.fingerprint: str | None = None
        self.history: dict[str, list[float]] = {}

    def __repr__(self) -> str:
        state = f"dim={self.dim}" if self.is_fitted else "not fitted"
        return (
            f"{type(self).__name__}(num_codebooks={self.num_codebooks}, "
            f"codebook_size={self.codebook_size}; {state})"
        )

    @property
    def is_fitted(self) -> bool:
        return self.codebooks is not None

    @property
    def vocabulary_size(self) -> int:
        """M * K, the number of distinct tokens."""
        return self.num_codebooks * self.codebook_size

    # ---- the interface subclasses fill in ---------------------------------------------
    @abstractmethod
    def _encode(self, x: np.ndarray) -> np.ndarray:
        """(N, M) int64 codes of checked (N, D) float32 rows."""

    @abstractmethod
    def _decode(self, codes: np.ndarray) -> np.ndarray:
        """(N, D) float32 reconstruction of checked (N, M) int64 codes."""

    def _init_args(self) -> dict[str, Any]:
        """Constructor arguments, saved so `load` can rebuild the instance."""
        return {"num_codebooks": self.num_codebooks, "codebook_size": self.codebook_size}

    def _codebook_shape(self, dim: int) -> tuple[int, ...]:
        return (self.num_codebooks, self.codebook_size, dim)

    def _check_width(self, dim: int) -> None:
        """Raise `InputError` when this kind cannot quantize vectors of width `dim`."""
        return None  # any width will do, unless a subclass says otherwise

    def fit_bytes(self, dim: int) -> int:
        """Working memory a fit on `dim`-wide vectors needs whatever the row count: the
        float32 codebooks and the largest (rows, beam * K) float32 distance block of
        k-means and beam search (rows: `CHUNK_ROWS`). Kinds with more add theirs."""
        codebooks = 4 * int(np.prod(self._codebook_shape(dim), dtype=np.int64))
        return codebooks + 4 * CHUNK_ROWS * self.beam_size * self.codebook_size

    # ---- shared ------------------------------------------------------------------------
    def _start_fit(self, x: Any, *, seed: int, **options: Any) -> np.ndarray:
        """Check the training rows and record what `save` writes about this fit."""
        x = check_vectors(x, what="training vectors")
        if len(x) < self.codebook_size:
            raise InputError(
                f"fitting needs at least codebook_size={self.codebook_size} rows, got {len(x)}"
            )
        self._check_width(int(x.shape[1]))
        need = self.fit_bytes(int(x.shape[1]))
        if need > FIT_MEMORY_LIMIT:
            raise InputError(
                f"fitting {self.num_codebooks} codebooks of {self.codebook_size:,} codewords "
                f"on {x.shape[1]}-dim vectors ({self.kind}) needs about {need / 2**30:,.1f} "
                f"GiB, more than the {FIT_MEMORY_LIMIT / 2**30:.0f} GiB allowed: use fewer "
                "codebooks or codewords"
            )
        self.codebooks = None
        self.dim = int(x.shape[1])
        self.seed = int(seed)
        self.fit_options = dict(options)
        self.fingerprint = fingerprint_array(x)
        self.history = {}
        return x

    def _fitted_codebooks(self) -> np.ndarray:
        if self.codebooks is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted; call fit first")
        return self.codebooks

    def encode(self, x: Any) -> np.ndarray:
        """(N, M) int64 codes of the (N, D) vectors `x`."""
        self._fitted_codebooks()
        return self._encode(check_vectors(x, dim=self.dim))

    def decode(self, codes: Any) -> np.ndarray:
        """(N, D) float32 reconstruction of (N, M) codes."""
        self._fitted_codebooks()
        return self._decode(check_codes(codes, self.num_codebooks, self.codebook_size))

    def tokens(self, codes: Any) -> np.ndarray:
        """(N, M) int64 global token ids `m * K + codes[:, m]`: each row's Bag-of-Meaning."""
        codes = check_codes(codes, self.num_codebooks, self.codebook_size)
        return codes + np.arange(self.num_codebooks, dtype=np.int64) * self.codebook_size

    def codes(self, tokens: Any) -> np.ndarray:
        """(N, M) codes of global token ids: the inverse of `tokens`."""
        offsets = np.arange(self.num_codebooks, dtype=np.int64) * self.codebook_size
        return check_codes(np.asarray(tokens) - offsets, self.num_codebooks, self.codebook_size)

    def relative_error(self, x: Any, codes: Any | None = None) -> float:
        """sum ||x - decode(encode(x))||^2 / sum ||x||^2 over the rows of `x`; pass the
        `codes` of `x` when they are already at hand to skip encoding them again."""
        x = check_vectors(x, dim=self.dim)
        self._fitted_codebooks()
        if codes is None:
            codes = self._encode(x)
        else:
            codes = check_codes(codes, self.num_codebooks, self.codebook_size)
            if len(codes) != len(x):
                raise InputError(f"{len(codes)} codes given for {len(x)} vectors")
        errors = squared_norms(x - self._decode(codes))
        return float(errors.sum(dtype=np.float64) / np.square(x, dtype=np.float64).sum())

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the fitted quantizer to the folder `path` atomically (see the module);
        `overwrite` replaces an earlier saved quantizer only."""
        codebooks = self._fitted_codebooks()
        meta = {
            "format_version": FORMAT_VERSION,
            "sdk_version": __version__,
            "kind": self.kind,
            "init": self._init_args(),
            "dim": self.dim,
            "seed": self.seed,
            "fit_options": self.fit_options,
            "fingerprint": self.fingerprint,
            "history": self.history,
        }
        with atomic_output_dir(path, kind="quantizer", overwrite=overwrite) as tmp:
            np.savez(tmp / ARRAYS_FILE, codebooks=codebooks)
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        return Path(path)

    @classmethod
    def load(cls: type[Q], path: str | Path) -> Q:
        """Read a quantizer that `save` wrote; the folder must hold this class's kind."""
        path = Path(path)
        meta = _read_meta(path, cls.kind)
        try:
            quantizer = cls(**meta["init"])
            dim = int(meta["dim"])
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"bad quantizer metadata: {err}", file=path / META_FILE) from None
        quantizer.codebooks = _read_codebooks(path / ARRAYS_FILE, quantizer._codebook_shape(dim))
        quantizer.dim = dim
        quantizer.seed = meta.get("seed")
        quantizer.fit_options = meta.get("fit_options", {})
        quantizer.fingerprint = meta.get("fingerprint")
        quantizer.history = meta.get("history", {})
        return quantizer


def _read_meta(folder: Path, kind: str) -> dict[str, Any]:
    """The metadata of a saved quantizer of `kind`, or an `InputError` saying why not."""
    meta = read_saved_meta(folder, META_FILE, "quantizer", FORMAT_VERSION)
    if meta.get("kind") != kind:
        raise InputError(
            f"holds a {meta.get('kind')!r} quantizer, not {kind!r}; load it with its class",
            file=folder / META_FILE,
        )
    return meta


def _read_codebooks(file: Path, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 codebooks of shape `shape` saved in `file`, checked."""
    try:
        with np.load(file, allow_pickle=False) as data:
            codebooks = data["codebooks"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise InputError(f"cannot read codebooks: {err}", file=file) from None
    if codebooks.dtype != np.float32 or codebooks.shape != shape:
        raise InputError(
            f"codebooks are {codebooks.dtype} {codebooks.shape}, expected float32 {shape}",
            file=file,
        )
    if not np.isfinite(codebooks).all():
        raise InputError("codebooks hold non-finite values", file=file)
    return codebooks
