"""A parquet table stored as one file or as a folder of part files, as Spark and Hive
write it, read as one table.

```
edges.parquet                           one file, or
edges.parquet/                          a folder: one table
  _SUCCESS                              not read: names that start with "_" or "."
  .part-00000-1b2c.snappy.parquet.crc   (Spark's markers and checksums, Hive's staging)
  part-00000-1b2c.snappy.parquet        the parts, in sorted name order: rows keep that
  part-00001-1b2c.snappy.parquet        order, part after part
```

A `partitionBy` folder is read too: each level of subfolders is named `column=value`,
and that column, absent from the files, takes the folder's value on each row of the
parts under it, as Spark's reader gives it:

```
edges.parquet/
  edge_type=click/part-00000-1b2c.snappy.parquet     rows get edge_type "click"
  edge_type=like/part-00000-1b2c.snappy.parquet      rows get edge_type "like"
```

A partition column's values are integers (int64) when every folder's value is one,
decimal numbers (float64) when every value is a number, and strings otherwise; Spark's
escapes (`%3A`) are undone and `__HIVE_DEFAULT_PARTITION__` is a null. Parts are read in
sorted order of their paths within the folder. Every part must sit under the same
partition columns, in the same order, none of them also a column of the files.

Every part must have the columns of the first with the same types (nullability, column
order and how strings are stored aside: plain, large or dictionary-encoded strings are
one type); a part that differs is refused, naming it and the column. Row numbers in
messages count from 0 within the part that holds the row (`locate_rows`), as they do
within a file.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hir_sdk.errors import InputError

HIDDEN_PREFIXES = ("_", ".")  # Spark's and Hive's markers, checksums and staging files
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # the folder of a partition column's nulls
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def table_parts(path: Path) -> list[Path]:
    """The files of the table at `path`: `path` itself when it is not a folder, else the
    folder's part files (under its partition subfolders, if any) in sorted order of their
    paths within it. Raises `InputError` for a subfolder not named `column=value`,
    parts under different partition columns, or a folder without any part file."""
    if not path.is_dir():
        return [path]
    parts = sorted(_walk(path, path), key=lambda part: part.relative_to(path).parts)
    if not parts:
        raise InputError(
            "the table's folder holds no part file (names that start with '_' or '.' are not read)",
            file=path,
        )
    first = _partition_keys(path, parts[0])
    if len(set(first)) < len(first):
        raise InputError(
            f"this part lies under the partition columns {first}, one of them twice",
            file=parts[0],
        )
    for part in parts[1:]:
        keys = _partition_keys(path, part)
        if keys != first:
            raise InputError(
                f"this part lies under the partition columns {keys}, the folder's first part "
                f"{parts[0].relative_to(path).as_posix()} under {first}: every part of a "
                "partitioned table needs the same partition columns, in the same order",
                file=part,
            )
    return parts


def _walk(root: Path, folder: Path) -> list[Path]:
    """Every part file under `folder` (markers and hidden names left out); a subfolder
    must be a partition, `column=value`."""
    found = []
    for entry in folder.iterdir():
        if entry.name.startswith(HIDDEN_PREFIXES):
            continue
        if not entry.is_dir():
            found.append(entry)
            continue
        column, equals, _ = entry.name.partition("=")
        if not column or not equals:
            raise InputError(
                f"the table's folder holds the subfolder {entry.relative_to(root).as_posix()!r}, "
                "which is not a partition (named column=value, as partitionBy writes it): a "
                "table's folder holds its part files, or partition subfolders of them",
                file=root,
            )
        found += _walk(root, entry)
    return found


def _partition_keys(root: Path, part: Path) -> list[str]:
    return [name.partition("=")[0] for name in part.relative_to(root).parts[:-1]]


def partition_values(root: Path, part: Path) -> dict[str, str | None]:
    """The partition columns of the part file `part` of the table folder `root`, with
    their values as the folder names give them (unescaped; None for Hive's null)."""
    values: dict[str, str | None] = {}
    for name in part.relative_to(root).parts[:-1]:
        column, _, value = name.partition("=")
        values[unquote(column)] = None if value == HIVE_NULL else unquote(value)
    return values


def partition_type(values: list[str | None]) -> pa.DataType:
    """The type Spark's reader infers for a partition column with these folder values:
    int64 when every value is an integer, float64 when every value is a number, else a
    string (nulls do not count)."""
    present = [v for v in values if v is not None]
    if present and all(_INTEGER.fullmatch(v) and -(2**63) <= int(v) < 2**63 for v in present):
        return pa.int64()
    if present and all(_NUMBER.fullmatch(v) for v in present):
        return pa.float64()
    return pa.string()


def read_schema(path: Path) -> pa.Schema:
    """The schema of the table at `path` (for a folder, its first part's, followed by the
    partition columns)."""
    parts = table_parts(path)
    schema = pq.read_schema(parts[0])
    for column, dtype in _partition_types(path, parts).items():
        schema = schema.append(pa.field(column, dtype))
    return schema


def _partition_types(path: Path, parts: list[Path]) -> dict[str, pa.DataType]:
    if parts[0] == path:
        return {}
    values = [partition_values(path, part) for part in parts]
    return {column: partition_type([v[column] for v in values]) for column in values[0]}


def read_parts(path: Path, read_dictionary: list[str] | None = None) -> pa.Table:
    """The table at `path` (a file, or a folder of parts read one after another, each
    with its partition columns). A part that cannot be read, or whose columns differ from
    the first part's, raises `InputError` naming it; pyarrow's own errors for a file are
    left to the caller."""
    parts = table_parts(path)
    if len(parts) == 1 and parts[0] == path:
        return pq.read_table(path, read_dictionary=read_dictionary)
    partitions = _partition_types(path, parts)
    tables: list[pa.Table] = []
    schema = first_table = None
    for part in parts:
        try:
            table = pq.read_table(part, read_dictionary=read_dictionary)
        except Exception as err:  # pyarrow raises several types for corrupt files
            raise InputError(f"cannot read parquet: {err}", file=part) from None
        if schema is None:  # the first part's column order and types, all nullable
            first, first_table = table.schema, table
            schema = pa.schema([pa.field(f.name, f.type) for f in first], metadata=first.metadata)
        both = [column for column in partitions if column in table.schema.names]
        if both:
            raise InputError(
                f"the column {both[0]!r} is both in this part and in the partition folders' "
                "names: keep it in one place",
                file=part,
                column=both[0],
            )
        _same_columns(first_table, table, parts[0], part)
        try:
            table = table.select(schema.names).cast(schema)
        except pa.ArrowException as err:  # a string column that cannot be re-encoded
            raise InputError(f"cannot read parquet: {err}", file=part) from None
        values = partition_values(path, part)
        for column, dtype in partitions.items():
            value = None if values[column] is None else _typed(values[column], dtype)
            constant = pa.repeat(pa.scalar(value, type=dtype), table.num_rows)
            if read_dictionary and column in read_dictionary and dtype == pa.string():
                constant = constant.dictionary_encode()
            table = table.append_column(column, constant)
        tables.append(table)
    return pa.concat_tables(tables)


def _typed(value: str, dtype: pa.DataType) -> int | float | str:
    if dtype == pa.int64():
        return int(value)
    return float(value) if dtype == pa.float64() else value


def _same_columns(first: pa.Table, table: pa.Table, first_path: Path, path: Path) -> None:
    """An `InputError` naming `path` and a column when `table`'s column names or types
    differ from those of `first`, the folder's first part."""
    want = {f.name: _logical(f.type) for f in first.schema}
    have = {f.name: _logical(f.type) for f in table.schema}
    if want == have:
        return
    missing = [name for name in want if name not in have]
    extra = [name for name in have if name not in want]
    retyped = [name for name in want if name in have and have[name] != want[name]]
    if missing:
        column, what = missing[0], f"lacks the column(s) {missing}"
    elif extra:
        column, what = extra[0], f"has column(s) {extra} that the first lacks"
    else:
        column = retyped[0]
        what = f"stores it as {have[column]}, not as {want[column]}"
    raise InputError(
        f"this part's columns differ from those of the folder's first part, "
        f"{first_path.name}: it {what}; every part of a table needs the same columns "
        "and types",
        file=path,
        column=column,
    )


def _logical(dtype: pa.DataType) -> pa.DataType:
    """`dtype` with strings in one form: a dictionary's values, and `string` for the large
    and view forms (parts written by different tools store one column each way)."""
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_large_string(dtype) or getattr(pa.types, "is_string_view", lambda _: False)(
        dtype
    ):
        return pa.string()
    return dtype


def locate_rows(path: Path, rows: np.ndarray) -> tuple[list[Path], np.ndarray, np.ndarray]:
    """For row numbers `rows` of the table read from the folder `path`: its parts, and
    for each row the index of its part and its row number within that part."""
    parts = table_parts(path)
    starts = np.cumsum([0] + [pq.read_metadata(part).num_rows for part in parts])
    which = np.searchsorted(starts, rows, side="right") - 1
    return parts, which, np.asarray(rows) - starts[which]
