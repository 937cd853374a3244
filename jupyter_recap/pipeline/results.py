"""What a draft produces: :class:`WrittenRecap` and :class:`RecapResult` (re-exported by
:mod:`.service`, with :class:`~.stats.RecapStats`, which it counts into).

A module of their own, importing nothing of the pipeline: a kernel shows results from its first
draft on, while the pipeline itself (its regular expressions, the offline engine, the price
table, the providers) loads with that draft. ``%load_ext`` imports neither this nor the
pipeline: a kernel's :class:`~.stats.RecapStats` is in a module of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .stats import RecapStats as RecapStats


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
    """Why the offline engine wrote this recap rather than a model ("daily budget of 100 calls
    reached", "openai:gpt-4o-mini's answer had no recap"): the banner and ``%recap`` show it
    next to the engine."""
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
