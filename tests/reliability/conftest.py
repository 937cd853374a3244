"""The reliability and abuse suite: every hole found by attacking jupyter_recap, kept closed.

Each test here reproduces one way the recap could hurt the person, their data or their agent —
a store someone else can write, a symlink, a corrupt record, a secret that slips through, a
terminal escape, a full disk, two kernels on one notebook, hostile HTTP — and asserts that it
no longer does. Property-based tests (Hypothesis) cover whole input spaces where examples
cannot. The shared fixtures of ``tests/conftest.py`` apply here too.
"""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many hostile requests the run saw refused, by status code (see tests/refusals.py)."""
    from refusals import COUNTS

    if COUNTS:
        codes = ", ".join(f"{code}: {count}" for code, count in sorted(COUNTS.items()))
        terminalreporter.write_line(f"hostile requests refused: {sum(COUNTS.values())} ({codes})")
