"""One recorded event of an agent session, and how it is read back from a file.

Its own module, below both the transcript and the session state folded from it: each reads
entries, neither needs the other's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard, get_args

Kind = Literal[
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "code",
    "summary",
    "outcome",
    "recap",
    "meta",
    "event",
]
Outcome = Literal["ok", "errored", "aborted"]

#: Longest text kept for one entry; longer text keeps its head and tail around a marker.
MAX_ENTRY_CHARS = 4000


def clip(text: str, limit: int = MAX_ENTRY_CHARS) -> str:
    """Keep at most ``limit`` characters of ``text``: its head and tail around a marker."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 2)
    from ..redact import redact_ends  # here: only a long text needs it

    # Redacted before the cut: a secret cut in two leaves a piece no pattern recognises later.
    head, tail = redact_ends(text, keep // 2, keep - keep // 2)
    return f"{head}\n… [{len(text) - keep} characters omitted] …\n{tail}"


@dataclass(slots=True)
class Entry:
    """One recorded event. ``text`` is already bounded; ``time`` is a UNIX timestamp.

    Entries are never changed after they are appended (treat them as read-only); the class is
    not frozen only because frozen dataclasses are several times slower to create, and one is
    created for every cell.
    """

    kind: Kind
    text: str = ""
    time: float = field(default_factory=time.time)
    cell_id: str | None = None
    name: str | None = None
    """Tool name for tool calls and results, model id for agent prompts."""
    error: str | None = None
    """For code cells, tool results and outcomes: what went wrong, if anything."""
    count: int | None = None
    """The execution count of a notebook cell (``In[n]``)."""
    outcome: Outcome | None = None
    """For ``outcome`` entries: how the agent turn ended."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict without the fields left at their defaults (None, no text)."""
        values = ((name, getattr(self, name)) for name in _ENTRY_FIELDS)
        return {k: v for k, v in values if v is not None and not (k == "text" and v == "")}

    @classmethod
    def from_dict(cls, data: object) -> Entry:
        """Rebuild an entry written by :meth:`to_dict`; ValueError when ``data`` is not one.

        Entries come back from files anyone could have edited, so every field is checked: a
        wrong type must become a skipped line, never a crash in whoever reads it later.
        """
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        known = {k: data[k] for k in _ENTRY_FIELDS if k in data}
        if "kind" not in known:
            raise ValueError("an entry without a kind")
        for name, value in known.items():
            if not _FIELD_CHECKS[name](value):
                raise ValueError(f"bad {name!r} in a {known.get('kind')!r} entry")
        return cls(**known)


_ENTRY_FIELDS = tuple(Entry.__dataclass_fields__)
_KINDS = frozenset(get_args(Kind))
_OUTCOMES = frozenset(get_args(Outcome))


def is_optional_text(value: object) -> bool:
    """Whether ``value`` read from a file is text or null."""
    return value is None or isinstance(value, str)


def is_finite_number(value: object) -> TypeGuard[float]:
    """Whether ``value`` read from a file is a number (not a bool, not NaN, not infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


_FIELD_CHECKS: dict[str, Callable[[object], bool]] = {
    "kind": lambda value: isinstance(value, str) and value in _KINDS,
    "text": lambda value: isinstance(value, str),
    "time": is_finite_number,
    "cell_id": is_optional_text,
    "name": is_optional_text,
    "error": is_optional_text,
    "count": lambda value: value is None or (type(value) is int),
    "outcome": lambda value: value is None or (isinstance(value, str) and value in _OUTCOMES),
}


def first_code_line(source: str) -> str:
    """The first line of ``source`` that is code (not blank, not a comment), stripped."""
    for line in source.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return ""
