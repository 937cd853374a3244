"""When to draft a recap: a pure state machine driven by focus, turns, input and a clock.

Nothing here sleeps, starts threads or does I/O. Every input is a method that returns the actions
the caller must carry out (start or cancel a draft, show or clear the banner, refuse a manual
request); timers are deadlines the caller waits for (:meth:`Schedule.next_deadline`) before calling
:meth:`Schedule.tick`. The clock, the transcript fingerprint and the count of completed turns are
injected, so the whole behaviour can be replayed with a fake clock.

The parts: the actions (:mod:`.actions`), the schedule that decides when (:mod:`.machine`), and
its bookkeeping of the draft in flight and the recap on the banner (:mod:`.drafts`).
"""

from __future__ import annotations

from .actions import (
    OUTSIDE_NOTE,
    Action,
    CancelDraft,
    ClearBanner,
    Refuse,
    ShowDrafting,
    ShowRecap,
    StartDraft,
)
from .drafts import MAX_OFFLINE_REDRAFTS, MAX_REDRAFTS, EngineCounters, InFlight
from .machine import OUTSIDE_HOLD_SECONDS, Schedule, TriggerSettings

__all__ = [
    "MAX_OFFLINE_REDRAFTS",
    "MAX_REDRAFTS",
    "OUTSIDE_HOLD_SECONDS",
    "OUTSIDE_NOTE",
    "Action",
    "CancelDraft",
    "ClearBanner",
    "EngineCounters",
    "InFlight",
    "Refuse",
    "Schedule",
    "ShowDrafting",
    "ShowRecap",
    "StartDraft",
    "TriggerSettings",
]
