"""Reading a kernel's agent report (``PUT kernels/{id}/agent``) into a :class:`Report`.

The kernel builds the report (:mod:`.report`); the server reads it here, field by field with the
readers of :mod:`.fields`, and hands the result to the agents board (:mod:`.board`). See
docs/focus-protocol.md, "Agents panel".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from .. import fields
from ..fields import FieldError
from ..wire import Link, Progress, RecapInfo, StopCell, TurnState

TURN_STATES: tuple[TurnState, ...] = ("running", "ok", "errored", "aborted")

#: Longest accepted string fields of a report (the kernel cuts its texts to fit).
RECAP_CHARS = 4000
ERROR_CHARS = 300
LABEL_CHARS = 64
ID_CHARS = 256
MAX_LINKS = 32
#: Most tasks a report's ``progress`` counts; more is a bad field, not a task list.
MAX_TASKS = 100_000

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
        turn=take(None, fields.one_of, body, "turn", TURN_STATES),
        turn_started=take(None, fields.seconds, body, "turn_started"),
        turn_ended=take(None, fields.seconds, body, "turn_ended"),
        error=take(None, fields.text, body, "error", ERROR_CHARS),
        last_activity=take(None, fields.seconds, body, "last_activity"),
        recap=take(None, _recap, body, "recap", drops),
        drafting=take(False, fields.flag, body, "drafting"),
        progress=take(None, _progress, body, "progress"),
        stop_cell=take(None, _stop_cell, body, "stop_cell", drops),
        ignored=tuple(drops.lines),  # last: arguments are evaluated in order, all drops are in
    )


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
        except FieldError as bad:
            self.lines.append(str(bad))
            return default


# The parts of a report made of several fields; like the readers of .fields, each takes the
# object holding its part and the part's dotted path.


def _recap(data: dict[str, Any], path: str, drops: _Drops) -> RecapInfo | None:
    recap = fields.obj(data, path)
    if recap is None:
        return None
    text = fields.string(recap, f"{path}.text", RECAP_CHARS)  # a bad text drops the recap
    return {
        "text": text,
        "model": drops.take("", fields.text, recap, f"{path}.model", ID_CHARS) or "",
        "at": drops.take(None, fields.seconds, recap, f"{path}.at"),
        "links": drops.take([], _links, recap, f"{path}.links", text),
    }


def _links(data: dict[str, Any], path: str, text: str) -> list[Link]:
    """The links of a recap's ``text``: one bad link drops them all (they index one text)."""
    items = fields.get(data, path, [])
    if not isinstance(items, list) or len(items) > MAX_LINKS:
        raise FieldError(path, f"must be a list of at most {MAX_LINKS} links")
    links: list[Link] = []
    # Offsets are UTF-16 code units (what the page indexes): at most two per character.
    limit, end = 2 * len(text), 0
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        if not isinstance(item, dict):
            raise FieldError(where, "must be an object")
        start = fields.count(item, f"{where}.start", limit)
        stop = fields.count(item, f"{where}.end", limit)
        if not end <= start <= stop:
            raise FieldError(where, "overlapping or out of order")
        cell_id = fields.string(item, f"{where}.cell_id", ID_CHARS)
        links.append({"start": start, "end": stop, "cell_id": cell_id})
        end = stop
    return links


def _progress(data: dict[str, Any], path: str) -> Progress | None:
    progress = fields.obj(data, path)
    if progress is None:
        return None
    done = fields.count(progress, f"{path}.done", MAX_TASKS)
    total = fields.count(progress, f"{path}.total", MAX_TASKS)
    if done > total:
        raise FieldError(f"{path}.done", f"larger than {path}.total")
    return {"done": done, "total": total}


def _stop_cell(data: dict[str, Any], path: str, drops: _Drops) -> StopCell | None:
    stop_cell = fields.obj(data, path)
    if stop_cell is None:
        return None
    cell_id = fields.string(stop_cell, f"{path}.cell_id", ID_CHARS)  # no cell, no stop cell
    return {
        "cell_id": cell_id,
        "label": drops.take("", fields.text, stop_cell, f"{path}.label", LABEL_CHARS) or "",
        "failed": drops.take(False, fields.flag, stop_cell, f"{path}.failed"),
    }
