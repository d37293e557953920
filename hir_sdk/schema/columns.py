"""Column checks shared by the three input tables: presence, dtype family, values.

Each check raises `InputError` with the file, the column and up to five offending rows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from hir_sdk.errors import MAX_SHOWN_ROWS, InputError
from hir_sdk.schema.manifest import MAX_TIME
from hir_sdk.schema.parquet_parts import locate_rows, read_parts, read_schema, table_parts

ROW = "__row"  # 0-based row number in the file, carried for error messages
INT64_MAX = np.iinfo(np.int64).max
FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_LISTED_NAMES = 10  # declared names quoted in a message about an unknown one
MAX_NAMED = 1 << 12  # a categorical's physical ids named one by one up to this
_PANDAS_INDEX = re.compile(r"__index_level_\d+__")  # how pandas names an unnamed index
# the arrow string types that a parquet read turns into dictionaries (read_dictionary);
# string_view, which pyarrow has from version 16 on, too
_STRING_TYPES = tuple(
    getattr(pa.types, name)
    for name in ("is_string", "is_large_string", "is_string_view")
    if hasattr(pa.types, name)
)


def is_categorical(dtype: pl.DataType) -> bool:
    """A categorical or enum column, whatever its category mapping (a named
    `pl.Categories` compares unequal to the plain `pl.Categorical`)."""
    return isinstance(dtype, (pl.Categorical, pl.Enum))


def listed(names: list) -> str:
    """`names` for a message: all of them, or the first few and how many more."""
    if len(names) <= MAX_LISTED_NAMES:
        return str(list(names))
    shown = ", ".join(repr(name) for name in names[:MAX_LISTED_NAMES])
    return f"[{shown}, ... ({len(names) - MAX_LISTED_NAMES:,} more)]"


def read_table(path: Path, categories: tuple[str, ...] = ()) -> pl.DataFrame:
    """Read one parquet table into polars, with a row-number column for error messages:
    a file, or a folder of part files read as one table (`parquet_parts`).

    String columns named in `categories` (the few distinct type names repeated on every
    row; stored as string, large_string or string_view) are read as dictionaries, so they
    arrive as polars categoricals: their rows are never decoded into separate strings,
    and their codes come from the small dictionary.
    """
    if not path.exists():
        raise InputError("file not found", file=path)
    try:
        schema = read_schema(path)
        as_dictionary = [
            name
            for name in categories
            if name in schema.names
            and any(is_string(schema.field(name).type) for is_string in _STRING_TYPES)
        ]
        table = read_parts(path, read_dictionary=as_dictionary or None)
    except InputError:
        raise
    except Exception as err:  # pyarrow raises several types for corrupt files
        where = path if not path.is_dir() else table_parts(path)[0]  # a part's own schema
        raise InputError(f"cannot read parquet: {err}", file=where) from None
    table = table.drop_columns(pandas_index_columns(table.schema))
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a table is never a Series
        raise InputError("cannot read parquet as a table", file=path)
    if frame.height == 0:
        raise InputError("table is empty", file=path)
    if ROW in frame.columns:
        raise InputError(reserved(ROW), file=path, column=ROW)
    return frame.with_row_index(ROW)


def pandas_index_columns(schema: pa.Schema) -> list[str]:
    """The columns in which pandas' `to_parquet` stored an unnamed index
    (`__index_level_0__`, ...: a filtered frame's row labels), as its metadata lists them.
    They are the frame's row labels, not data, and a reader that keeps them would take
    them for a node attribute; a named index (`set_index("node_id")`) is a real column
    and is kept."""
    try:
        meta = json.loads((schema.metadata or {}).get(b"pandas", b"{}"))
    except ValueError:
        return []
    index = meta.get("index_columns", []) if isinstance(meta, dict) else []
    return [
        name
        for name in index
        if isinstance(name, str) and _PANDAS_INDEX.fullmatch(name) and name in schema.names
    ]


def reserved(column: str) -> str:
    """The message for a column whose name the validator uses for its own."""
    return (
        f"the column name {column!r} is reserved (the SDK's own column of that name would "
        "clash with it): rename or drop the column"
    )


def render_rows(frame: pl.DataFrame, columns: list[str]) -> list[str]:
    """Render the first offending rows as `row N: col=value, ...`."""
    shown = frame.head(MAX_SHOWN_ROWS).select(ROW, *columns)
    # times and dates are shown as polars prints them: Python's datetime cannot hold
    # those after the year 9999, which parquet can
    dated = [c for c in columns if isinstance(shown[c].dtype, (pl.Datetime, pl.Date))]
    shown = shown.with_columns(pl.col(c).cast(pl.String) for c in dated)
    lines = []
    for record in shown.iter_rows(named=True):
        cells = ", ".join(f"{c}={record[c]!r}" for c in columns)
        lines.append(f"row {record[ROW]}: {cells}")
    return lines


def fail_rows(
    problem: str, bad: pl.DataFrame, *, file: Path, column: str, show: list[str]
) -> InputError:
    """An `InputError` quoting the offending rows of `bad`. For a table read from a
    folder of parts, it names the part that holds them (or, when they lie in several,
    the folder and each row's part), with row numbers within the part."""
    if not file.is_dir():
        rows = render_rows(bad, show)
        return InputError(problem, file=file, column=column, rows=rows, total=bad.height)
    parts, part_of, local = locate_rows(file, bad[ROW].to_numpy())  # every offending row
    shown = bad.head(MAX_SHOWN_ROWS)
    which = part_of[: shown.height]
    rows = render_rows(shown.with_columns(pl.Series(ROW, local[: shown.height])), show)
    if len(np.unique(part_of)) == 1:
        file = parts[int(which[0])]
    else:
        rows = [f"{parts[int(w)].name} {row}" for w, row in zip(which, rows, strict=True)]
    return InputError(problem, file=file, column=column, rows=rows, total=bad.height)


def refuse_rows(
    problem: str,
    frame: pl.DataFrame,
    bad: pl.Series | np.ndarray,
    *,
    file: Path,
    column: str,
    show: list[str],
) -> None:
    """Raise `fail_rows` quoting the rows of `frame` where the mask `bad` holds; nothing
    when it holds nowhere."""
    mask = bad if isinstance(bad, pl.Series) else pl.Series(bad)
    if mask.any():
        raise fail_rows(problem, frame.filter(mask), file=file, column=column, show=show)


def require_columns(frame: pl.DataFrame, names: list[str], file: Path) -> None:
    missing = [name for name in names if name not in frame.columns]
    if missing:
        present = [c for c in frame.columns if c != ROW]
        raise InputError(
            f"missing required column(s) {missing}; found {present}", file=file, column=missing[0]
        )


def _mistyped(frame: pl.DataFrame, column: str, expected: str, file: Path) -> InputError:
    return InputError(
        f"mistyped column: expected {expected}, found {frame[column].dtype}",
        file=file,
        column=column,
    )


def as_string(frame: pl.DataFrame, column: str, file: Path) -> pl.Series:
    """A non-null string column (categoricals are decoded)."""
    series = frame[column]
    if is_categorical(series.dtype):
        series = series.cast(pl.String)
    if series.dtype != pl.String:
        raise _mistyped(frame, column, "string", file)
    _no_nulls(frame, series, column, file)
    return series


def _no_nulls(
    frame: pl.DataFrame,
    series: pl.Series,
    column: str,
    file: Path,
    what: str = "null values",
    show: list[str] | None = None,
) -> None:
    if series.null_count():
        raise fail_rows(
            what, frame.filter(series.is_null()), file=file, column=column, show=show or [column]
        )


def type_codes(
    frame: pl.DataFrame, column: str, names: list[str], file: Path, what: str
) -> np.ndarray:
    """Codes (positions in `names`) of a non-null string or categorical column.

    Categorical columns (parquet dictionaries) are mapped through their small dictionary,
    never decoded row by row. Values outside `names` raise `InputError`.
    """
    series = frame[column]
    if is_categorical(series.dtype):
        _no_nulls(frame, series, column, file)
        codes = category_positions(series, names)[series.to_physical().to_numpy()]
    elif series.dtype == pl.String:
        _no_nulls(frame, series, column, file)
        mapping = {name: i for i, name in enumerate(names)}
        codes = series.replace_strict(mapping, default=-1, return_dtype=pl.Int32).to_numpy()
    else:
        raise _mistyped(frame, column, "string", file)
    if len(codes) and codes.min() < 0:
        bad = frame.filter(pl.Series(codes < 0))
        values = sorted({str(v) for v in bad[column].head(1000).to_list()})[:5]
        raise fail_rows(
            f"unknown {what} {values}; the manifest declares {listed(names)}",
            bad,
            file=file,
            column=column,
            show=[column],
        )
    return codes.astype(np.int32, copy=False)


def category_positions(series: pl.Series, names: list[str], top: int | None = None) -> np.ndarray:
    """(P,) int32: the position in `names` of the category with physical id p, -1 for a
    name not among them, for every physical id up to the largest of `series` (a
    categorical without nulls; `top`, that largest, when the caller has it): a row's
    position is then one gather from its physical id, and no row is decoded into its
    string."""
    if top is None:
        largest = series.to_physical().max()
        if largest is None:  # no rows
            return np.zeros(0, dtype=np.int32)
        top = int(largest)  # type: ignore[arg-type]
    values, ids = _categories(series, top)
    table = np.full(top + 1, -1, dtype=np.int32)
    position = {name: i for i, name in enumerate(names)}
    for physical, value in zip(ids.tolist(), values, strict=True):
        table[physical] = position.get(value, -1) if value is not None else -1
    return table


def _categories(series: pl.Series, top: int) -> tuple[list[str | None], np.ndarray]:
    """The names of physical ids 0..`top` (`top`: the column's largest): read from the
    dtype's category list where polars gives it by id (an Enum's list; a Categorical's
    process-wide mapping, asked id by id while `top` is small), else the values the
    column holds (a pass over its rows)."""
    categories = getattr(series.dtype, "categories", None)
    if isinstance(categories, pl.Series):  # an Enum: its categories in physical order
        named = categories.cast(pl.String).to_list()[: top + 1]
        return list(named), np.arange(len(named))
    if categories is not None and top < MAX_NAMED and hasattr(categories, "__getitem__"):
        try:
            return [categories[i] for i in range(top + 1)], np.arange(top + 1)
        except (IndexError, TypeError):  # an id reserved but not yet named, an old polars
            pass
    present = series.unique()
    return present.cast(pl.String).to_list(), present.to_physical().to_numpy()


def id_kind(dtype: pl.DataType) -> str | None:
    """'int' or 'str' for the dtypes allowed as node ids, else None."""
    if dtype.is_integer():
        return "int"
    if dtype == pl.String or is_categorical(dtype):
        return "str"
    return None


def as_id(
    frame: pl.DataFrame, column: str, file: Path, kind: str | None = None, *, nul: bool = True
) -> pl.Series:
    """A non-null id column, normalized to Int64 or String; `kind` forces one family.

    Integer ids must fit in Int64 (unsigned ids of 2**63 and more do not); string ids may
    not contain NUL characters, which fixed-width numpy strings (the saved graph's id
    arrays) cannot hold: `"n0"` and `"n0\\0"` would become the same id. `nul=False`
    leaves that check to the caller: ids only looked up among the nodes' (which have
    none) cannot be found when they hold one (`nul_ids` then names them).
    """
    series = frame[column]
    found = id_kind(series.dtype)
    if found is None or (kind is not None and found != kind):
        expected = {"int": "integer ids", "str": "string ids"}.get(
            kind or "", "integer or string ids"
        )
        suffix = " (the same kind as nodes.node_id)" if kind else ""
        raise _mistyped(frame, column, expected + suffix, file)
    if series.dtype == pl.UInt64:
        refuse_rows(
            "integer ids must be below 2**63 (signed 64-bit); store larger ids as strings",
            frame,
            series > INT64_MAX,
            file=file,
            column=column,
            show=[column],
        )
    series = series.cast(pl.Int64 if found == "int" else pl.String)
    _no_nulls(frame, series, column, file, "null ids")
    if found == "str" and nul:
        nul_ids(frame, series, column, file)
    return series


def nul_ids(
    frame: pl.DataFrame, ids: pl.Series, column: str, file: Path, rows: pl.Series | None = None
) -> None:
    """Raise `InputError` naming the string ids (among `rows`, default all) that hold a
    NUL character."""
    bad = ids.str.contains("\x00", literal=True)
    if rows is not None:
        bad &= rows
    refuse_rows(
        "string ids may not contain NUL characters ('\\x00')",
        frame,
        bad,
        file=file,
        column=column,
        show=[column],
    )


def as_seconds(
    frame: pl.DataFrame,
    column: str,
    file: Path,
    *,
    nullable: bool = False,
    show: list[str] | None = None,
) -> pl.Series:
    """Timestamps as Int64 seconds since the epoch: ints, floats (floored) or datetimes.

    Nulls (unless `nullable`), NaN / infinite values, negative values and values after
    `MAX_TIME` (9999-12-31T23:59:59Z) are errors.
    """
    series = frame[column]
    show = show or [column]
    dtype = series.dtype
    if isinstance(dtype, pl.Datetime) or dtype == pl.Date:
        series = series.dt.epoch("s")  # any time unit; no cast that could overflow
    elif dtype.is_float():
        series = series.cast(pl.Float64)
        bad = series.is_nan() | series.is_infinite()
        refuse_rows("non-finite timestamps", frame, bad, file=file, column=column, show=show)
    elif dtype.is_integer():
        if dtype != pl.UInt64:  # every other integer type fits in Int64
            series = series.cast(pl.Int64)
    else:
        raise _mistyped(frame, column, "timestamps (integer/float seconds or datetime)", file)
    if not nullable:
        _no_nulls(frame, series, column, file, "null timestamps", show)
    # range checks before the cast to Int64, which floats and UInt64 may not survive; the
    # rows are found only where the smallest or largest value is out of range
    low, high = series.min(), series.max()
    for outside, problem in (
        (low is not None and low < 0, "negative timestamps (seconds before 1970)"),
        (
            high is not None and high > MAX_TIME,
            f"timestamps after 9999-12-31T23:59:59Z ({MAX_TIME} seconds; times are seconds "
            "since the epoch, so milliseconds must be divided by 1000)",
        ),
    ):
        if outside:
            bad = series < 0 if problem.startswith("negative") else series > MAX_TIME
            raise fail_rows(problem, frame.filter(bad), file=file, column=column, show=show)
    if series.dtype == pl.Float64:
        series = series.floor()
    return series.cast(pl.Int64).alias(column)


def _within(series: pl.Series, *, non_negative: bool, float32: bool) -> bool:
    """True when a null-free Float64 column passes every check of `as_number`: no NaN,
    and its smallest and largest values in range (polars finds them chunk by chunk,
    without a copy of the column); False sends the column through the row-by-row checks
    that name the offending rows."""
    if series.null_count() or not len(series) or series.is_nan().any():
        return False
    low, high = float(series.min()), float(series.max())  # type: ignore[arg-type]
    if not (np.isfinite(low) and np.isfinite(high)):
        return False
    if non_negative and low < 0:
        return False
    return not (float32 and max(-low, high) > FLOAT32_MAX)


def as_number(
    frame: pl.DataFrame,
    column: str,
    file: Path,
    *,
    nullable: bool,
    non_negative: bool = False,
    float32: bool = False,
) -> pl.Series:
    """A numeric column as Float64, finite, optionally non-negative, and optionally within
    float32's range (for values stored as float32, which would otherwise become inf)."""
    series = frame[column]
    if not (series.dtype.is_numeric()) or series.dtype == pl.Boolean:
        raise _mistyped(frame, column, "a numeric column", file)
    series = series.cast(pl.Float64)
    if not nullable:
        _no_nulls(frame, series, column, file)
    if _within(series, non_negative=non_negative, float32=float32):
        return series
    where = {"file": file, "column": column, "show": [column]}
    refuse_rows("non-finite values", frame, series.is_nan() | series.is_infinite(), **where)
    if non_negative:
        refuse_rows("negative values", frame, series < 0, **where)
    if float32:
        too_large = f"values too large for float32 (largest {FLOAT32_MAX:.4g})"
        refuse_rows(too_large, frame, series.abs() > FLOAT32_MAX, **where)
    return series
