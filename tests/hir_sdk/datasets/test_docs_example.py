"""The real-data page's example (mapping a shop's log onto the input format) runs and
prints what the page says."""

from tests.page_example import run_page_example


def test_real_data_page_example() -> None:
    run_page_example("real-data.md")
