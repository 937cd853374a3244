"""What the trigger schedule's tests hand it in place of the ``Recap`` settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Settings:
    """The schedule's TriggerSettings, with the documented defaults of the ``Recap`` traits."""

    auto: bool = True
    away_seconds: float = 90
    post_turn_seconds: float = 3
    idle_seconds: float = 120
    during_active: bool = False
