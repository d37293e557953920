"""The example in docs/export.md runs and prints what the page says it prints (it is also
the test of a successful `export_run` with a check from scratch; the export tests share
its outputs through the `export_page` fixture)."""

from __future__ import annotations

from tests.page_example import page_example


def test_export_page_example(export_page: tuple[dict[str, object], str]) -> None:
    assert export_page[1] == page_example("export.md")[1]
