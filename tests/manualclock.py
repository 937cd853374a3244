"""A clock the test sets: what the code under test reads instead of ``time.time``."""

from __future__ import annotations


class Clock:
    """Starts at 1,000 s; the test moves it (``clock.now = …`` or :meth:`tick`)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float = 1.0) -> float:
        self.now += seconds
        return self.now
