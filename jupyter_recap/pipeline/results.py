"""What a draft produces and counts: :class:`WrittenRecap`, :class:`RecapResult`,
:class:`RecapStats` (re-exported by :mod:`.service`).

A module of their own, importing nothing of the pipeline: a kernel holds a ``RecapStats`` and
the types of results from ``%load_ext`` on, while the pipeline itself (its regular
expressions, the offline engine, the price table, the providers) loads with the first draft.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WrittenRecap:
    """A recap ready to show: ``text`` (plain, ≤ ~400 chars) and the ``model`` that wrote it.

    Not to be confused with :class:`jupyter_recap.settings.Recap`, the settings (``c.Recap``):
    ``jupyter_recap.Recap`` stays a deprecated alias of this class for code written against 0.1.
    """

    text: str
    model: str
    reason: str = "manual"
    """The trigger that asked for it: manual, away, post_turn, idle, resume, cli, http."""
    fingerprint: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    created: float = field(default_factory=time.time)
    note: str = ""
    """Why an automatic recap was written offline ("daily budget of 100 calls reached"): the
    banner shows it next to the engine."""
    notice: str = ""
    """For an automatic recap a hosted model wrote: the announcement to show the first time."""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class RecapResult:
    """The outcome of one draft: a recap, or None and the one-line reason why not."""

    recap: WrittenRecap | None
    reason: str
    model: str | None = None
    fingerprint: str = ""
    context_chars: int = 0


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
