"""`csv_encoding.encoding_error`: what a CSV file that the reader refused is, recognised
only where its bytes say so, with a conversion that never overwrites the original."""

from __future__ import annotations

import gzip
import io
import re
import shutil
import subprocess
import zipfile

import polars as pl
import pytest

from hir_sdk.datasets import csv_encoding, movielens_csv
from hir_sdk.errors import InputError

RATINGS = "userId,movieId,rating,timestamp\n1,10,4.5,1000\n1,20,2.0,1100\n2,10,4.0,1200\n"
MOVIES = "movieId,title,genres\n10,Toy Story (1995),Adventure\n20,Amélie (2001),Comedy\n"


def _error(tmp_path, data: bytes, name: str = "movies.csv") -> InputError | None:
    path = tmp_path / name
    path.write_bytes(data)
    return csv_encoding.encoding_error(path)


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:  # an .xlsx workbook is a zip
        archive.writestr("xl/worksheets/sheet1.xml", "<x/>" * 100)
    return buffer.getvalue()


def _parquet() -> bytes:
    buffer = io.BytesIO()
    pl.DataFrame({"userId": [1, 2]}).write_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (_zip(), "a zip file, as an Excel .xlsx workbook is"),
        (_parquet(), "a parquet file"),
        (gzip.compress(RATINGS.encode()), "a gzip file"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "an Excel 97-2003 workbook"),
    ],
    ids=["zip", "parquet", "gzip", "xls"],
)
def test_a_binary_file_under_a_csv_name_is_not_a_csv_file(tmp_path, data, what):
    error = _error(tmp_path, data)
    assert error is not None
    assert error.problem.startswith(f"not a CSV file (it is {what}): ")
    assert "UTF-16" not in error.problem and "iconv" not in error.problem


@pytest.mark.parametrize(
    "data",
    [
        (RATINGS + "2,30,3.5\x00,1300\n").encode(),  # a stray NUL in a UTF-8 file
        ("userId,movieId,tag,timestamp\n2,10,pix\x00ar,1250\n" + "é" * 40).encode(),
        bytes(range(256)) * 4,  # NULs, but neither UTF-16/32 nor single-byte text
    ],
    ids=["ragged", "tag", "binary"],
)
def test_nul_bytes_alone_are_not_taken_for_utf16(tmp_path, data):
    assert _error(tmp_path, data) is None  # the reader's own message stands


def test_a_ragged_utf8_file_with_a_nul_gets_the_parsers_message(tmp_path):
    release = tmp_path / "ml"
    release.mkdir()
    ratings = RATINGS + "1,20,2.0,1100,extra\n2,10,4.0\x00,1200\n"
    (release / "ratings.csv").write_bytes(ratings.encode())
    (release / "movies.csv").write_text(MOVIES, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        movielens_csv(release)
    assert "UTF-16" not in str(caught.value) and "not a CSV file" in str(caught.value)


@pytest.mark.parametrize(
    ("encoding", "name"),
    [
        ("utf-16-le", "UTF-16LE"),
        ("utf-16-be", "UTF-16BE"),
        ("utf-32-le", "UTF-32LE"),
        ("utf-32-be", "UTF-32BE"),
    ],
)
@pytest.mark.parametrize(
    "text", [RATINGS, MOVIES + "30,臥虎藏龍 🎬 (2000),Action\n"], ids=["ascii", "wide"]
)
def test_utf16_and_utf32_without_a_mark_are_named(tmp_path, encoding, name, text):
    error = _error(tmp_path, text.encode(encoding))  # ASCII alone is valid UTF-8 too
    assert error is not None
    assert error.problem.startswith(f"not UTF-8 encoded (its NUL bytes fall as in {name} text)")
    assert f"`iconv -f {name} -t UTF-8 movies.csv > movies.utf8.csv`" in error.problem


def test_single_byte_text_gets_a_guess_said_as_one(tmp_path):
    cyrillic = "movieId,title,genres\n10,Брат (1997),Crime\n".encode("cp1251")
    error = _error(tmp_path, cyrillic)
    assert error is not None
    assert error.problem == (
        "not UTF-8 encoded (line 2 is not valid UTF-8): if the file is Western European "
        "text (Windows-1252 / Latin-1), convert it into a new UTF-8 file with `iconv -f "
        "CP1252 -t UTF-8 movies.csv > movies.utf8.csv`; otherwise name its own encoding "
        "with -f (e.g. CP1251 for Cyrillic Windows text, MACINTOSH for Excel for Mac's "
        "'CSV (Macintosh)'). Check the new file, then put it in place of movies.csv (or "
        "re-save the file as UTF-8 from the tool that wrote it)"
    )
    assert error.rows == ("line 2: b'10,\\xc1\\xf0\\xe0\\xf2 (1997),Crime'",)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"])
def test_the_bad_line_is_found_with_any_line_end(tmp_path, monkeypatch, chunk, end):
    monkeypatch.setattr(csv_encoding, "CHUNK_BYTES", chunk)  # line ends straddle the chunks
    text = MOVIES.replace("\n", end)  # "\r" alone: Excel for Mac's 'CSV (Macintosh)'
    error = _error(tmp_path, text.encode("mac_roman"))
    assert error is not None and "line 3 is not valid UTF-8" in error.problem
    assert error.rows == ("line 3: b'20,Am\\x8elie (2001),Comedy'",)


@pytest.mark.skipif(shutil.which("iconv") is None, reason="needs iconv")
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-32-be", "cp1252"])
def test_the_suggested_command_writes_a_new_file_and_keeps_the_original(tmp_path, encoding):
    original = MOVIES.encode(encoding)
    error = _error(tmp_path, original)
    assert error is not None
    command = re.search(r"`(iconv [^`]*)`", error.problem).group(1)
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    assert (tmp_path / "movies.csv").read_bytes() == original
    assert (tmp_path / "movies.utf8.csv").read_text(encoding="utf-8") == MOVIES
