"""What a kernel tells the agents panel about itself: its turn, its recap, where work stopped.

Built from the transcript in the kernel (see :func:`agent_report`) and sent to the server by
:class:`~jupyter_recap.ipython.reporter.StateReporter`. The cell links in a recap are found
here, by our code, from the cell ids the transcript recorded: a model's text only decides
*where* an ``In[12]`` stands, never what a link points at.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..record.transcript import Entry, Transcript
from ..redact import Redactor
from ..stores.tasks import Task
from ..textutil import printable, shorten

if TYPE_CHECKING:
    # Shapes only: a kernel counts its cells from %load_ext on, the report comes later.
    from ..wire import AgentReport, Link, RecapInfo, StopCell, TurnState

#: Entries that count as the agent doing something (the panel's "last activity").
AGENT_KINDS = frozenset({"user", "assistant", "tool_call", "tool_result", "outcome"})

#: How far back from the newest entry a report looks for the latest turn.
SCAN_LIMIT = 5000

# Every text a report carries is cleaned of terminal escapes and bidi controls (``printable``)
# and cut to what the server accepts (validate.py): one over-long model id must not cost the row.

#: Longest recap text a report carries (the server accepts more; this keeps the body small).
REPORT_RECAP_CHARS = 2000
REPORT_ERROR_CHARS = 300
MAX_CELLS = 2000
"""Cells whose execution count is remembered (the newest win)."""


@functools.cache
def _in_cell() -> re.Pattern[str]:
    return re.compile(r"\bIn ?\[(\d{1,7})\]")


class CellCounts:
    """Which cell got which execution count (``In[n]``), newest first, bounded.

    After a kernel restart counts start again at 1; the newest cell holding a count wins.
    """

    def __init__(self, limit: int = MAX_CELLS) -> None:
        self.limit = max(1, limit)
        self._counts: OrderedDict[str, int] = OrderedDict()
        # Every run's count, so a recap naming an earlier run of a cell still finds it; bounded
        # on its own, since one cell run a thousand times has a thousand counts.
        self._cells: OrderedDict[int, str] = OrderedDict()

    def note(self, cell_id: str | None, count: int | None) -> None:
        """Cell ``cell_id`` ran as ``In[count]``."""
        if not cell_id or count is None:
            return
        counts, cells = self._counts, self._cells
        counts[cell_id] = count
        counts.move_to_end(cell_id)
        cells[count] = cell_id
        cells.move_to_end(count)
        if len(counts) > self.limit:
            counts.popitem(last=False)
        if len(cells) > self.limit:
            cells.popitem(last=False)

    def seed(self, entries: Sequence[Entry]) -> None:
        """Learn the counts a stored transcript recorded (a resumed session)."""
        for entry in entries:
            self.note(entry.cell_id, entry.count)

    def count_of(self, cell_id: str) -> int | None:
        return self._counts.get(cell_id)

    def cell_of(self, count: int) -> str | None:
        return self._cells.get(count)


def utf16_offset(text: str, index: int) -> int:
    """The UTF-16 code unit offset of ``text[index]`` (what a browser string indexes)."""
    prefix = text[:index]
    if prefix.isascii():
        return index
    return len(prefix.encode("utf-16-le")) // 2


def recap_links(text: str, cells: CellCounts, limit: int | None = None) -> list[Link]:
    """The first ``limit`` (default: the bound of the protocol, ``MAX_LINKS``) spans of ``text``
    that name a cell we know (``In[12]``), as UTF-16 offsets."""
    if limit is None:
        from .validate import MAX_LINKS  # here: the recorder imports this module at %load_ext

        limit = MAX_LINKS
    links: list[Link] = []
    for match in _in_cell().finditer(text):
        if len(links) >= limit:
            break
        cell_id = cells.cell_of(int(match.group(1)))
        if cell_id is not None:
            start, end = match.span()
            links.append(
                {
                    "start": utf16_offset(text, start),
                    "end": utf16_offset(text, end),
                    "cell_id": cell_id,
                }
            )
    return links


def _label(entry: Entry, cells: CellCounts, fallback: str) -> str:
    count = cells.count_of(entry.cell_id) if entry.cell_id else None
    count = count if count is not None else entry.count
    return f"In[{count}]" if count is not None else fallback


def _failed(entry: Entry) -> bool:
    kind = entry.kind
    return (kind == "code" and entry.error is not None) or (
        kind == "outcome" and entry.outcome == "errored"
    )


def agent_report(
    transcript: Transcript,
    *,
    cells: CellCounts,
    recap: dict[str, Any] | None = None,
    drafting: bool = False,
    tasks: Sequence[Task] = (),
) -> AgentReport:
    """The body of ``PUT kernels/{id}/agent`` (docs/focus-protocol.md) for this transcript.

    ``recap`` is the latest recap shown (``text``, ``model``, ``at``); its links are added here.
    """
    from .validate import ID_CHARS, LABEL_CHARS

    turn: TurnState | None = None
    started = ended = last_activity = None
    error: str | None = None
    stop: Entry | None = None
    stop_failed = False
    fixed: set[str] = set()  # cells that ran fine after (so their older failures are stale)
    with transcript.locked() as entries:
        for index in range(len(entries) - 1, max(-1, len(entries) - 1 - SCAN_LIMIT), -1):
            entry = entries[index]
            if last_activity is None and entry.kind in AGENT_KINDS:
                last_activity = entry.time
            if entry.kind == "outcome" and turn is None:
                turn, ended, error = entry.outcome, entry.time, entry.error
            # Only a failure we can point at: a cell without an id (terminal IPython) would hide
            # the agent cell behind a stop cell nobody can open.
            if stop is None and entry.cell_id and _failed(entry) and entry.cell_id not in fixed:
                stop, stop_failed = entry, True
            elif entry.kind == "code" and entry.error is None and entry.cell_id:
                fixed.add(entry.cell_id)
            if entry.kind == "user":  # the latest turn began here
                started = entry.time
                if turn is None:
                    turn, ended, error = "running", None, None
                if stop is None and entry.cell_id:
                    stop = entry
                break
    stop_cell: StopCell | None = None
    if stop is not None and stop.cell_id and len(stop.cell_id) <= ID_CHARS:
        fallback = "the failed cell" if stop_failed else "the agent cell"
        stop_cell = {
            "cell_id": stop.cell_id,
            "label": _label(stop, cells, fallback)[:LABEL_CHARS],
            "failed": stop_failed,
        }
    shown: RecapInfo | None = None
    if recap is not None:
        # Cleaned before the links are found, so their offsets are into the text sent.
        text = printable(str(recap.get("text", "")))[:REPORT_RECAP_CHARS]
        shown = {
            "text": text,
            "model": printable(str(recap.get("model", "")))[:ID_CHARS],
            "at": _seconds(recap.get("at")),
            "links": [
                link for link in recap_links(text, cells) if len(link["cell_id"]) <= ID_CHARS
            ],
        }
    done = sum(1 for task in tasks if task.status == "completed")
    return {
        "turn": turn,
        "turn_started": started,
        "turn_ended": ended,
        # An error can quote what the code held (a key in a failed request): it leaves the kernel
        # redacted, as everything sent to a model does.
        "error": shorten(printable(Redactor()(error)), REPORT_ERROR_CHARS) if error else None,
        "last_activity": last_activity,
        "recap": shown,
        "drafting": drafting,
        "progress": {"done": done, "total": len(tasks)} if tasks else None,
        "stop_cell": stop_cell,
    }


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
