"""What a kernel counts of its drafts: :class:`RecapStats` (re-exported by :mod:`.results` and
:mod:`.service`).

A module of its own: a kernel holds its ``RecapStats`` from ``%load_ext`` on, and imports the
results of a draft (:mod:`.results`) with its first draft.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RecapStats:
    """Model-call counters shown by ``%recap status``."""

    calls: int = 0
    failures: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    """US dollars, for the calls whose model has a known price."""
    unpriced: int = 0
    """Calls whose model has no known price."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    on_tokens: Callable[[int, int], None] | None = field(default=None, repr=False, compare=False)
    """Told of every model call's tokens (the session record keeps a running count)."""

    def add(self, **deltas: float) -> None:
        """Add to counters from any thread."""
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)
        if self.on_tokens is not None and ("tokens_in" in deltas or "tokens_out" in deltas):
            self.on_tokens(int(deltas.get("tokens_in", 0)), int(deltas.get("tokens_out", 0)))
