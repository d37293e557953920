"""What every benchmark script does with its result: print the Markdown block and, with
`--record FILE`, append it to a results file under `benchmarks/results/`."""

from __future__ import annotations


def publish(lines: list[str], record: str | None) -> None:
    text = "\n".join(lines)
    print(text)
    if record:
        with open(record, "a", encoding="utf-8") as handle:
            handle.write(text + "\n\n")
