"""Why a CSV file that should be UTF-8 is not, as one `InputError` that says how to
convert it.

The CSV readers call `encoding_error` only once a read has gone wrong (the parser
refused the bytes, or the header is not the documented one), so a good file costs
nothing extra. Three kinds of file are recognised; anything else gets the reader's own
message (None here):

- a file that is no text at all, by its first bytes: a zip (an Excel `.xlsx` workbook
  is one), an Excel 97-2003 workbook, a parquet or a gzip file saved under a `.csv` name;
- UTF-16 or UTF-32 text (what some Windows tools write as "Unicode"): a byte-order mark,
  or, in the first `SNIFF_BYTES`, NUL bytes at the places that ASCII characters (the
  digits, commas and line ends of any CSV) leave NUL in that encoding, and a start that
  decodes in it. A stray NUL in a UTF-8 file is not taken for UTF-16; a file with NULs
  that fit no encoding is not text, so it is not called single-byte text either;
- single-byte text (Latin-1, Windows-1252, Cyrillic Windows-1251, Mac Roman, ...): the
  first line that is not valid UTF-8 is quoted. The bytes do not say which of these it
  is, so the conversion suggested is a guess, said as one: from Windows-1252 (Latin-1
  with curly quotes and a few more characters in 0x80-0x9f, so a Latin-1 file converts
  the same way) for Western European text, and otherwise from the file's own encoding.

Every command suggested writes a new file next to the old one: the encoding is
recognised, not known, so the user checks the result before it replaces the original.
A UTF-8 byte-order mark is valid UTF-8 and the readers drop it: such files are read as
they are.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from hir_sdk.errors import InputError

SNIFF_BYTES = 4096  # how much of the file's start is looked at for a wide encoding
CHUNK_BYTES = 1 << 20  # how much is read at a time when looking for a bad line
_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_NOT_TEXT = (  # first bytes -> what the file is, what to do about it
    (
        b"PK\x03\x04",
        "a zip file, as an Excel .xlsx workbook is",
        "save the sheet as CSV UTF-8 from the tool that wrote it",
    ),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an Excel 97-2003 workbook",
        "save the sheet as CSV UTF-8 from the tool that wrote it",
    ),
    (b"PAR1", "a parquet file", "write the table as CSV"),
    (
        b"\x1f\x8b",
        "a gzip file",
        "decompress it into a new file, e.g. `gunzip -c {name} > {stem}.plain{suffix}`, "
        "then put that in place of {name}",
    ),
)
# encoding -> (bytes per code unit, the byte of a unit that an ASCII character leaves
# NUL, the byte that holds the character)
_WIDE = {
    "UTF-32LE": (4, 1, 0),
    "UTF-32BE": (4, 2, 3),
    "UTF-16LE": (2, 1, 0),
    "UTF-16BE": (2, 0, 1),
}


def _not_text(path: Path, start: bytes) -> InputError | None:
    """The error for a file whose first bytes say it is a binary format, else None."""
    for magic, what, advice in _NOT_TEXT:
        if start.startswith(magic):
            advice = advice.format(name=path.name, stem=path.stem, suffix=path.suffix)
            return InputError(f"not a CSV file (it is {what}): {advice}", file=path)
    return None


def _nul_share(start: bytes, width: int, at: int) -> float:
    """The share of the `width`-byte units of `start` whose byte `at` is NUL."""
    column = start[at : len(start) - len(start) % width : width]
    return column.count(0) / max(len(column), 1)


def _decodes(start: bytes, encoding: str) -> bool:
    """Whether `start` is valid in `encoding`, but for a character cut off at its end."""
    try:
        codecs.getincrementaldecoder(encoding)().decode(start, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _wide_encoding(start: bytes) -> tuple[str, str] | None:
    """(encoding for iconv, how it was recognised) for UTF-16/32 text, else None."""
    for bom, name in _BOMS:
        if start.startswith(bom):
            return name, f"it starts with a {name} byte-order mark"
    if b"\0" not in start:
        return None
    for name, (width, high, low) in _WIDE.items():
        # most characters of a CSV are ASCII: their high byte is NUL, their low one not
        if (
            _nul_share(start, width, high) > 0.5
            and _nul_share(start, width, low) < 0.5
            and _decodes(start, name)
        ):
            return name, f"its NUL bytes fall as in {name} text"
    return None


def _line_ends(data: bytes, end: int | None = None) -> int:
    """How many line ends `data[:end]` holds: CRLF, LF, or CR alone (Excel for Mac)."""
    part = data[:end]
    return part.count(b"\n") + part.count(b"\r") - part.count(b"\r\n")


def _first_bad_line(path: Path) -> tuple[int, bytes] | None:
    """(1-based line number, the line's bytes) of the first line that is not UTF-8."""
    lines_before, carry = 0, b""
    with path.open("rb") as stream:
        while True:
            chunk = stream.read(CHUNK_BYTES)
            data = carry + chunk
            # whole lines only (no UTF-8 sequence holds a CR or LF byte), and never between
            # the CR and LF of one line end: a CR that ends the data may have its LF next
            cut = (
                len(data)
                if not chunk
                else max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1
            )
            whole, carry = data[:cut], data[cut:]
            try:
                whole.decode("utf-8")
            except UnicodeDecodeError as err:
                before = max(whole.rfind(b"\n", 0, err.start), whole.rfind(b"\r", 0, err.start))
                after = [i for i in (whole.find(b"\n", err.start), whole.find(b"\r", err.start))]
                end = min((i for i in after if i >= 0), default=len(whole))
                return lines_before + _line_ends(whole, err.start) + 1, whole[before + 1 : end]
            lines_before += _line_ends(whole)
            if not chunk:
                return None


def _convert(path: Path, encoding: str) -> str:
    """The command that writes a UTF-8 copy of `path` next to it."""
    converted = path.with_name(f"{path.stem}.utf8{path.suffix}")
    return f"`iconv -f {encoding} -t UTF-8 {path.name} > {converted.name}`"


def _then(path: Path) -> str:
    """What to do with the copy, once checked: the encoding was recognised, not known."""
    return (
        f"then put it in place of {path.name} (or re-save the file as UTF-8 from the tool "
        "that wrote it)"
    )


def encoding_error(path: str | Path) -> InputError | None:
    """An `InputError` saying that `path` is not UTF-8 text, what it looks like and how
    to convert it; None when it is UTF-8 (or starts with a UTF-8 byte-order mark), or
    when it is recognised as nothing, for the reader's own message."""
    path = Path(path)
    with path.open("rb") as stream:
        start = stream.read(SNIFF_BYTES)
    binary = _not_text(path, start)
    if binary is not None:
        return binary
    wide = _wide_encoding(start)
    if wide is not None:
        encoding, sign = wide
        return InputError(
            f"not UTF-8 encoded ({sign}): convert it into a new UTF-8 file, e.g. "
            f"{_convert(path, encoding)}; check the new file, {_then(path)}",
            file=path,
        )
    if b"\0" in start:  # no text but UTF-16/32 has NUL bytes: not single-byte text either
        return None
    bad = _first_bad_line(path)
    if bad is None:
        return None
    number, line = bad
    return InputError(
        f"not UTF-8 encoded (line {number} is not valid UTF-8): if the file is Western "
        f"European text (Windows-1252 / Latin-1), convert it into a new UTF-8 file with "
        f"{_convert(path, 'CP1252')}; otherwise name its own encoding with -f (e.g. CP1251 "
        "for Cyrillic Windows text, MACINTOSH for Excel for Mac's 'CSV (Macintosh)'). "
        f"Check the new file, {_then(path)}",
        file=path,
        rows=[f"line {number}: {line[:120]!r}"],
    )
