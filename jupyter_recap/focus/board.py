"""The agents board: one row per kernel with jupyter_recap loaded, for the agents panel.

Kernels report their agent state (turn, recap, tasks, where the work stopped) with
:func:`parse_report`; the server adds what only it sees (which notebook, whether the person looks
at it, restarts, deaths and long cells). The board decides who *needs the person*: a turn that
ended while nobody looked at its notebook, until someone does. It also numbers the absences in
which that happened (``notice``), so the page shows at most one notification per notebook per
absence. See docs/focus-protocol.md, "Agents panel".

Like the focus hub, nothing here does I/O or knows about HTTP: the clock and the kernel facts
are injected, and every change is announced through ``on_change`` (the server pushes it).
Not thread-safe: the server touches it only from its event loop.
"""

from __future__ import annotations

import math
import posixpath
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, ParamSpec, TypeVar

from ..wire import AgentRow, Link, Progress, RecapInfo, RowState, StopCell, TurnState

MAX_AGENTS = 64
"""Rows kept; beyond it the row updated least recently goes."""

MAX_ROW_EVENTS = 10
"""Server events (restarts, deaths, long cells) kept per row."""

TURN_STATES = ("running", "ok", "errored", "aborted")

#: Longest accepted string fields of a report (the kernel cuts its texts to fit).
RECAP_CHARS = 4000
ERROR_CHARS = 300
LABEL_CHARS = 64
ID_CHARS = 256
MAX_LINKS = 32
#: Most tasks a report's ``progress`` counts; more is a bad field, not a task list.
MAX_TASKS = 100_000

Action = Literal["update", "remove"]
Facts = Callable[[str], tuple[bool | None, str]]
"""A kernel's (aggregate focus, execution state), from the focus hub."""

_P = ParamSpec("_P")
_T = TypeVar("_T")
_D = TypeVar("_D")


class ReportError(ValueError):
    """A kernel's report is not a JSON object; the message is one line."""


@dataclass(frozen=True, slots=True)
class Report:
    """One kernel's agent state, as it last reported it (validated)."""

    turn: TurnState | None = None
    turn_started: float | None = None
    turn_ended: float | None = None
    error: str | None = None
    last_activity: float | None = None
    recap: RecapInfo | None = None
    drafting: bool = False
    progress: Progress | None = None
    stop_cell: StopCell | None = None
    ignored: tuple[str, ...] = ()
    """One line per field dropped when the report was read (:func:`parse_report`): the route's
    answer and the server's log say them, the rows do not."""


@dataclass(slots=True)
class _Row:
    kernel_id: str
    updated: float
    report: Report = field(default_factory=Report)
    path: str = ""
    needs_you: Literal["finished", "errored"] | None = None
    notice: int = 0
    noticed: bool = False
    """A notice was given in the current absence (reset when the person looks)."""
    kernel_state: Literal["restarting", "dead"] | None = None
    """``restarting`` or ``dead`` while the server sees the kernel so, else None."""
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_ROW_EVENTS))


class AgentBoard:
    """The rows of the agents panel and the rules for who needs the person."""

    def __init__(
        self,
        *,
        facts: Facts,
        on_change: Callable[[str, Action, int], None] | None = None,
        max_agents: int = MAX_AGENTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._facts = facts
        self._on_change = on_change
        self.max_agents = max(1, max_agents)
        self._clock = clock
        self._rows: dict[str, _Row] = {}
        self.version = 0
        """One counter for the whole board, +1 on every change (pages detect gaps with it)."""

    # -- inputs ------------------------------------------------------------------------------

    def report(self, kernel_id: str, report: Report) -> None:
        """A kernel's new agent state; a turn that ended while away makes it need the person."""
        row = self._rows.get(kernel_id)
        if row is None:
            row = self._rows[kernel_id] = _Row(kernel_id, self._clock())
            self._evict()
        before = row.report
        row.report = report
        ended = (
            report.turn in ("ok", "errored")
            and report.turn_ended is not None
            and report.turn_ended != before.turn_ended
        )
        if ended:
            focused, _ = self._facts(kernel_id)
            if focused is not True:
                row.needs_you = "errored" if report.turn == "errored" else "finished"
                if not row.noticed:
                    row.notice += 1
                    row.noticed = True
        if row.kernel_state == "restarting":
            row.kernel_state = None  # the kernel reports again: it is up
        self._changed(row)

    def set_path(self, kernel_id: str, path: str) -> None:
        """The notebook the kernel serves (from the browser or the server's sessions).

        A dead kernel's row of the same notebook has said what it had to: this one replaces it.
        """
        row = self._rows.get(kernel_id)
        if row is not None and path and row.path != path:
            row.path = path
            for other in [r for r in self._rows.values() if r.path == path and r is not row]:
                if other.kernel_state == "dead":
                    self.forget(other.kernel_id)
            self._changed(row)

    def is_dead(self, kernel_id: str) -> bool:
        """Whether the row is of a kernel that died (kept after the server dropped the kernel,
        so the panel can say so)."""
        row = self._rows.get(kernel_id)
        return row is not None and row.kernel_state == "dead"

    def path(self, kernel_id: str) -> str | None:
        row = self._rows.get(kernel_id)
        return None if row is None else row.path

    def focus(self, kernel_id: str, focused: bool | None) -> None:
        """The kernel's aggregate focus changed: looking at it ends the absence."""
        row = self._rows.get(kernel_id)
        if row is None or focused is not True:
            return
        row.noticed = False
        if row.needs_you is not None:
            row.needs_you = None
            self._changed(row)

    def kernel_event(
        self,
        kernel_id: str,
        kind: str,
        *,
        state: Literal["restarting", "dead"] | None = None,
        **fields: Any,
    ) -> None:
        """Something the server saw: ``restarted`` (``crashed``), ``died``, ``long_cell``.

        ``state`` (``restarting`` or ``dead``) is how the kernel is until :meth:`kernel_up`.
        """
        row = self._rows.get(kernel_id)
        if row is None:
            return
        now = self._clock()
        row.events.append({"type": kind, "at": round(now, 3), **fields})
        if state is not None:
            row.kernel_state = state
        if kind in ("restarted", "died") and row.report.turn == "running":
            # The process that ran the turn is gone; it never reports how the turn ended.
            why = "the kernel died" if kind == "died" else "the kernel restarted"
            row.report = _replace(row.report, turn="aborted", turn_ended=now, error=why)
        self._changed(row)

    def kernel_up(self, kernel_id: str) -> None:
        """The server saw the (restarted) kernel answer again."""
        row = self._rows.get(kernel_id)
        if row is not None and row.kernel_state == "restarting":
            row.kernel_state = None
            self._changed(row)

    def forget(self, kernel_id: str) -> None:
        """The kernel was shut down or culled: its row leaves the panel."""
        if self._rows.pop(kernel_id, None) is not None:
            self._announce(kernel_id, "remove")

    # -- reads -------------------------------------------------------------------------------

    def kernel_ids(self) -> set[str]:
        return set(self._rows)

    def __contains__(self, kernel_id: object) -> bool:
        return kernel_id in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def row(self, kernel_id: str) -> AgentRow | None:
        """One row as the protocol sends it, or None."""
        row = self._rows.get(kernel_id)
        return None if row is None else self._to_json(row)

    def rows(self) -> list[AgentRow]:
        """Every row, those needing the person first (see :func:`_order`)."""
        return sorted((self._to_json(row) for row in self._rows.values()), key=_order)

    def needing(self) -> int:
        """How many notebooks need the person now."""
        return sum(1 for row in self._rows.values() if row.needs_you is not None)

    # -- internals ---------------------------------------------------------------------------

    def _to_json(self, row: _Row) -> AgentRow:
        focused, execution = self._facts(row.kernel_id)
        report = row.report
        return {
            "kernel_id": row.kernel_id,
            "path": row.path,
            "name": posixpath.basename(row.path) if row.path else "",
            "state": _state(row),
            "needs_you": row.needs_you,
            "notice": row.notice,
            "turn": report.turn,
            "turn_started": report.turn_started,
            "turn_ended": report.turn_ended,
            "error": report.error,
            "last_activity": report.last_activity,
            "recap": report.recap,
            "drafting": report.drafting,
            "progress": report.progress,
            "stop_cell": report.stop_cell,
            "focused": focused,
            "execution_state": row.kernel_state or execution,
            "events": list(row.events),
            "updated": round(row.updated, 3),
        }

    def _changed(self, row: _Row) -> None:
        row.updated = self._clock()
        self._announce(row.kernel_id, "update")

    def _announce(self, kernel_id: str, action: Action) -> None:
        self.version += 1
        if self._on_change is not None:
            self._on_change(kernel_id, action, self.version)

    def _evict(self) -> None:
        while len(self._rows) > self.max_agents:
            oldest = min(self._rows.values(), key=lambda row: row.updated)
            self.forget(oldest.kernel_id)


def _state(row: _Row) -> RowState:
    if row.kernel_state is not None:
        return row.kernel_state
    if row.report.turn == "running":
        return "running"
    if row.needs_you is not None:
        return row.needs_you
    return "errored" if row.report.turn == "errored" else "idle"


def _order(row: AgentRow) -> tuple[int, float]:
    """Needing the person (latest turn end first), then running turns, then by activity."""
    if row["needs_you"] is not None:
        return 0, -(row["turn_ended"] or 0.0)
    latest = row["last_activity"] or row["updated"]
    return (1 if row["state"] == "running" else 2), -latest


def _replace(report: Report, **changes: Any) -> Report:
    values = {name: getattr(report, name) for name in Report.__dataclass_fields__}
    values.update(changes)
    return Report(**values)


# -- reading a kernel's report -----------------------------------------------------------------


def parse_report(body: object) -> Report:
    """Validate a kernel's ``PUT kernels/{id}/agent`` body; ``ignored`` of the report has one
    line per field it dropped (``"recap.model: longer than 256 characters"``).

    Only a body that is not an object is refused (:class:`ReportError`). A bad field takes its
    default and the rest is kept, so one bad value (a model id too long) does not leave the row
    as it was ("drafting…") until the next report. A bad part of a recap drops just that part,
    except its text, without which it is no recap; a bad link drops the links. Unknown fields
    are ignored, so a newer kernel can talk to an older server.
    """
    if not isinstance(body, dict):
        raise ReportError("the report is not a JSON object")
    drops = _Drops()
    take = drops.take
    return Report(
        turn=take(None, _turn, body, "turn"),
        turn_started=take(None, _time, body, "turn_started"),
        turn_ended=take(None, _time, body, "turn_ended"),
        error=take(None, _text, body, "error", ERROR_CHARS),
        last_activity=take(None, _time, body, "last_activity"),
        recap=take(None, _recap, body, "recap", drops),
        drafting=take(False, _flag, body, "drafting"),
        progress=take(None, _progress, body, "progress"),
        stop_cell=take(None, _stop_cell, body, "stop_cell", drops),
        ignored=tuple(drops.lines),  # last: arguments are evaluated in order, all drops are in
    )


class _BadField(ValueError):
    """One field of a report is bad; the message is the line that says which and why."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")


class _Drops:
    """The fields dropped from one report, one line each."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def take(
        self, default: _D, read: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T | _D:
        """What ``read`` makes of a field, or ``default`` (and a line) when the field is bad."""
        try:
            return read(*args, **kwargs)
        except _BadField as bad:
            self.lines.append(str(bad))
            return default


# The readers below take the object holding a field and the field's dotted path, which names
# the field in a message; its last part is the field's key.


def _get(data: dict[str, Any], path: str, default: object = None) -> Any:
    return data.get(path.rpartition(".")[2], default)


def _turn(data: dict[str, Any], path: str) -> TurnState | None:
    value: TurnState | None = _get(data, path)
    if value is not None and value not in TURN_STATES:
        raise _BadField(path, f"must be one of {', '.join(TURN_STATES)} or null")
    return value


def _time(data: dict[str, Any], path: str) -> float | None:
    value = _get(data, path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _BadField(path, "must be a number of seconds or null")
    try:
        finite = math.isfinite(value)  # an integer of 400 digits overflows a float here
    except OverflowError:
        finite = False
    if not finite:
        raise _BadField(path, "must be a number of seconds or null")
    if value < 0:
        raise _BadField(path, "must not be negative")
    return round(float(value), 3)


def _text(data: dict[str, Any], path: str, cap: int) -> str | None:
    """An optional string field."""
    if _get(data, path) is None:
        return None
    return _string(data, path, cap)


def _string(data: dict[str, Any], path: str, cap: int) -> str:
    """A required string field."""
    value = _get(data, path)
    if not isinstance(value, str):
        raise _BadField(path, "must be a string")
    if len(value) > cap:
        raise _BadField(path, f"longer than {cap} characters")
    return value


def _flag(data: dict[str, Any], path: str) -> bool:
    value = _get(data, path, False)
    if not isinstance(value, bool):
        raise _BadField(path, "must be true or false")
    return value


def _count(data: dict[str, Any], path: str, most: int) -> int:
    value = _get(data, path)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise _BadField(path, f"must be an integer from 0 to {most}")
    return value


def _object(data: dict[str, Any], path: str) -> dict[str, Any] | None:
    value = _get(data, path)
    if value is not None and not isinstance(value, dict):
        raise _BadField(path, "must be an object or null")
    return value


def _recap(data: dict[str, Any], path: str, drops: _Drops) -> RecapInfo | None:
    recap = _object(data, path)
    if recap is None:
        return None
    text = _string(recap, f"{path}.text", RECAP_CHARS)  # a bad text drops the whole recap
    return {
        "text": text,
        "model": drops.take("", _text, recap, f"{path}.model", ID_CHARS) or "",
        "at": drops.take(None, _time, recap, f"{path}.at"),
        "links": drops.take([], _links, recap, f"{path}.links", text),
    }


def _links(data: dict[str, Any], path: str, text: str) -> list[Link]:
    """The links of a recap's ``text``: one bad link drops them all (they index one text)."""
    items = _get(data, path, [])
    if not isinstance(items, list) or len(items) > MAX_LINKS:
        raise _BadField(path, f"must be a list of at most {MAX_LINKS} links")
    links: list[Link] = []
    # Offsets are UTF-16 code units (what the page indexes): at most two per character.
    limit, end = 2 * len(text), 0
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        if not isinstance(item, dict):
            raise _BadField(where, "must be an object")
        start, stop = _count(item, f"{where}.start", limit), _count(item, f"{where}.end", limit)
        if not end <= start <= stop:
            raise _BadField(where, "overlapping or out of order")
        cell_id = _string(item, f"{where}.cell_id", ID_CHARS)
        links.append({"start": start, "end": stop, "cell_id": cell_id})
        end = stop
    return links


def _progress(data: dict[str, Any], path: str) -> Progress | None:
    progress = _object(data, path)
    if progress is None:
        return None
    done = _count(progress, f"{path}.done", MAX_TASKS)
    total = _count(progress, f"{path}.total", MAX_TASKS)
    if done > total:
        raise _BadField(f"{path}.done", f"larger than {path}.total")
    return {"done": done, "total": total}


def _stop_cell(data: dict[str, Any], path: str, drops: _Drops) -> StopCell | None:
    stop_cell = _object(data, path)
    if stop_cell is None:
        return None
    cell_id = _string(stop_cell, f"{path}.cell_id", ID_CHARS)  # where: no cell, no stop cell
    return {
        "cell_id": cell_id,
        "label": drops.take("", _text, stop_cell, f"{path}.label", LABEL_CHARS) or "",
        "failed": drops.take(False, _flag, stop_cell, f"{path}.failed"),
    }
