"""benchmarks/figures.py: re-running some benchmarks rewrites only their rows of the performance
page (docs/performance.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import figures

BLOCK = """
Measured 2026-11-30 on 2 cores by `benchmarks/figures.py` (1-minute load average 0.8).

| figure | value | target | met | script |
| --- | --- | --- | --- | --- |
| a | 1 ms |  | — | `bench_a.py` |
| b old | 9 / 9 | ≤ 5 | **NOT MET** | `bench_b.py` |
| b gone | 3 |  | — | `bench_b.py` |
| c | 4 |  | — | `bench_c.py` |

Arguments: `bench_a.py --rounds 5`; the others with their defaults.
"""


def test_rows_of_the_rerun_benchmarks_are_replaced_in_place_and_new_ones_appended() -> None:
    rows = [
        figures.Row("b new", "2 / 3", "≤ 5", True, "bench_b.py"),
        figures.Row("d", "7 MB", "", None, "bench_d.py"),
    ]
    merged = figures.merge_rows(BLOCK, rows, ["bench_b.py", "bench_d.py"], "Re-run: b, d.")
    lines = merged.splitlines()
    assert lines[0].endswith("(1-minute load average 0.8). Re-run: b, d.")
    table = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert [line.split("|")[1].strip() for line in table] == ["a", "b new", "c", "d"]
    assert "| yes |" in table[1]
    assert "NOT MET" not in merged and "b gone" not in merged
    assert lines[-1] == "Arguments: `bench_a.py --rounds 5`; the others with their defaults."


def test_the_page_block_round_trips_through_read_and_replace() -> None:
    text = f"intro\n<!-- figures:start -->{BLOCK}<!-- figures:end -->\nafter\n"
    block = figures.read_block(text, "figures")
    merged = figures.merge_rows(block, [], [], "")
    again = figures.replace_block(text, "figures", merged)
    assert again.startswith("intro\n<!-- figures:start -->\nMeasured 2026-11-30")
    assert again.endswith("<!-- figures:end -->\nafter\n")
    assert figures.read_block(again, "figures").count("| `bench_") == 4


def test_a_page_without_the_block_is_a_clear_error() -> None:
    with pytest.raises(SystemExit, match="no <!-- figures:start -->"):
        figures.read_block("no markers here", "figures")
