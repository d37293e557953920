"""The example in docs/retrieval.md runs and prints what the page says it prints."""

from __future__ import annotations

from tests.page_example import run_page_example


def test_retrieval_page_example() -> None:
    run_page_example("retrieval.md")
