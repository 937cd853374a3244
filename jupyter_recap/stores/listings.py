"""The listings people read: stored sessions (``jupyter recap --sessions``, ``%recap sessions``)
and a project's memory notes (``%notes``, ``jupyter recap --notes``). One formatter each, shared
by the magics and the command line.

Each session is one line: a short id prefix (enough to pass back to ``jupyter recap ID``), the
age of its last write, its turn count, its title and, when the listing spans notebooks, the
notebook's file name. The title follows the work (it is taken from the latest recap), so under
it come the first prompt, when it says something else, then the last recap shown and the task
list's progress, if any::

    01931f2a   3 min   4 turns  Fixing the foreign key on orders  [sales.ipynb]
               asked: I have orders.csv with columns id, customer_id, total and a…
               ✦ You were fixing the foreign key on orders. Next: rerun the migration.
               tasks ########.... 2/3
    01931e07    2 h    1 turn   plot the churn by cohort          [churn.ipynb]

A project's notes, oldest first, with their hit counts::

    3 notes for /home/me/loader (1 recalled at least once)
     hits  kind      note
        2  gotcha    the loader drops rows with a BOM
        0  command   pytest -x tests/test_loader.py

Pure string work: nothing here reads the store. Every field is passed through
:func:`~jupyter_recap.textutil.printable`: the listings are for people, and titles, recaps and
notes are model output.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..textutil import printable, shorten
from .tasks import TaskList, progress_line

if TYPE_CHECKING:
    from ..wire import SessionSummaryJSON
    from .memory import Entry as Note
    from .sessionfiles import SessionRecord
    from .usage import DayUsage

__all__ = [
    "EMPTY",
    "NOTES_HEADER",
    "PREFIX_CHARS",
    "SessionSummary",
    "format_age",
    "format_notes",
    "format_sessions",
    "format_usage",
    "unique_prefixes",
]

#: Characters of an id shown when they are enough to tell the sessions apart.
PREFIX_CHARS = 8

#: The line shown when there is no session to list.
EMPTY = "No sessions stored yet."

_UNTITLED = "(untitled)"

#: Characters of the first prompt shown under a title that says something else.
_ASKED_CHARS = 80
_SENTENCE_MARKS = " .!?…。！？"


# Here, not with the session files: only a listing needs it, and `%load_ext` then does not
# make its dataclass.
@dataclass(frozen=True)
class SessionSummary:
    """One line of a session listing."""

    id: str
    updated: float
    title: str
    turns: int
    notebook: str | None
    last_recap: str | None = None
    progress: str | None = None
    """The task list's progress line (``tasks ####........ 2/5``), when the session has one."""
    first_prompt: str = ""
    """The session's first prompt (its ``title`` is the living one)."""

    @classmethod
    def of(cls, record: SessionRecord) -> SessionSummary:
        """The summary of a stored session's header."""
        return cls(
            record.id,
            record.updated,
            record.title,
            record.turns,
            record.notebook,
            record.last_recap,
            progress_line(TaskList.from_list(record.tasks).tasks) or None,
            record.first_prompt,
        )

    def to_dict(self) -> SessionSummaryJSON:
        """The JSON form used by the CLI's ``--json`` and the HTTP listing."""
        return {
            "id": self.id,
            "updated": self.updated,
            "title": self.title,
            "turns": self.turns,
            "notebook": self.notebook,
            "last_recap": self.last_recap,
            "progress": self.progress,
            "first_prompt": self.first_prompt,
        }

    @property
    def age(self) -> float:
        """Seconds since the last write."""
        return max(0.0, time.time() - self.updated)


def format_age(seconds: float) -> str:
    """``seconds`` as a short age: ``<1 min``, ``3 min``, ``2 h``, ``5 d`` (rounded down)."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return "<1 min"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def unique_prefixes(ids: Sequence[str], others: Iterable[str] = ()) -> dict[str, str]:
    """A prefix of each of ``ids``: its first :data:`PREFIX_CHARS` characters, or longer.

    A prefix grows until it starts no other id of ``ids`` (or of ``others``, such as every id in
    the store), and never ends on a dash.
    """
    everything = sorted(set(ids).union(others))
    common: dict[str, int] = {}
    for left, right in itertools.pairwise(everything):
        shared = _common_length(left, right)
        common[left] = max(common.get(left, 0), shared)
        common[right] = max(common.get(right, 0), shared)
    prefixes: dict[str, str] = {}
    for session_id in ids:
        length = max(PREFIX_CHARS, common.get(session_id, 0) + 1)
        while length < len(session_id) and session_id[length - 1] == "-":
            length += 1
        prefixes[session_id] = session_id[:length]
    return prefixes


def _common_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def format_sessions(
    summaries: Sequence[SessionSummary],
    now: float,
    *,
    show_notebook: bool | None = None,
    known_ids: Iterable[str] = (),
    empty: str = EMPTY,
) -> str:
    """The listing of ``summaries`` (in the given order), one line each, no trailing newline.

    ``now`` is the UNIX time the ages are measured from. ``show_notebook`` adds each session's
    notebook file name; by default it is shown when the sessions belong to several notebooks.
    Prefixes are unique within the listing and within ``known_ids`` if given. With no sessions,
    the result is the single line ``empty``.
    """
    if not summaries:
        return empty
    if show_notebook is None:
        show_notebook = len({s.notebook for s in summaries}) > 1
    prefixes = unique_prefixes([s.id for s in summaries], known_ids)
    id_width = max(len(p) for p in prefixes.values())
    ages = [format_age(now - s.updated) for s in summaries]
    age_width = max(len(a) for a in ages)
    turns = [f"{s.turns} turn" if s.turns == 1 else f"{s.turns} turns" for s in summaries]
    turns_width = max(len(t) for t in turns)
    # Titles, recaps and notebook names are anyone's text: made inert before they are measured,
    # so that the columns line up and nothing in them can act on the terminal.
    titles = [" ".join(printable(s.title).split()) or _UNTITLED for s in summaries]
    title_width = max(len(t) for t in titles) if show_notebook else 0
    lines = []
    for summary, age, turn, title in zip(summaries, ages, turns, titles, strict=True):
        line = (
            f"{prefixes[summary.id]:<{id_width}}  {age:>{age_width}}  "
            f"{turn:<{turns_width}}  {title:<{title_width}}"
        )
        if show_notebook:
            line += f"  [{_notebook_name(summary.notebook)}]"
        lines.append(line.rstrip())
        asked = _first_prompt(summary, title)
        if asked:
            lines.append(f"{'':<{id_width}}  asked: {asked}")
        if summary.last_recap:
            # What the person was last told, so a listing answers "where was I?" by itself.
            lines.append(f"{'':<{id_width}}  ✦ {shorten(printable(summary.last_recap), 110)}")
        if summary.progress:
            lines.append(f"{'':<{id_width}}  {printable(summary.progress)}")
    return "\n".join(lines)


def _first_prompt(summary: SessionSummary, title: str) -> str | None:
    """The first prompt as listed, or None when the title already says it."""
    asked = " ".join(printable(summary.first_prompt).split())
    if not asked or _same_words(asked, title):
        return None
    return shorten(asked, _ASKED_CHARS)


def _same_words(a: str, b: str) -> bool:
    # The title derived from "Task: fix the FK." is "Fix the FK": the same thing said again.
    return a.rstrip(_SENTENCE_MARKS).casefold() == b.rstrip(_SENTENCE_MARKS).casefold()


def _notebook_name(path: str | None) -> str:
    if not path:
        return "no notebook"
    return " ".join(printable(os.path.basename(path.rstrip("/\\"))).split()) or printable(path)


#: The column header of a notes listing.
NOTES_HEADER = " hits  kind      note"


def format_notes(entries: Sequence[Note], project: Path | str, *, empty: str = "") -> str:
    """The notes, oldest first, with their hit counts; ``empty`` when there are none."""
    # Notes are written by agents (model output) and the project path by anyone: made inert.
    if not entries:
        return printable(empty or f"No notes yet for {project}.")
    recalled = sum(entry.hits > 0 for entry in entries)
    place = printable(str(project))
    lines = [f"{len(entries)} notes for {place} ({recalled} recalled at least once)", NOTES_HEADER]
    lines += [f"{entry.hits:>5}  {entry.kind:<9} {printable(entry.text)}" for entry in entries]
    return "\n".join(lines)


def format_usage(days: Sequence[DayUsage], window: int) -> str:
    """``jupyter recap --usage``: one line per day with model calls (newest first), a total.

    Costs are estimates from list prices (``Recap.prices`` sets your own); a call whose model
    has no known price is counted in its own column rather than guessed at.
    """
    from ..textutil import format_cost

    if not days:
        return f"No model calls in the last {window} days."
    header = ("day", "calls", "automatic", "tokens in", "tokens out", "cost", "unpriced")
    rows = [
        (
            day.day,
            f"{day.calls:,}",
            f"{day.automatic:,}",
            f"{day.tokens_in:,}",
            f"{day.tokens_out:,}",
            format_cost(day.cost),
            f"{day.unpriced:,}",
        )
        for day in days
    ]
    rows.append(
        (
            f"{window} days",
            f"{sum(d.calls for d in days):,}",
            f"{sum(d.automatic for d in days):,}",
            f"{sum(d.tokens_in for d in days):,}",
            f"{sum(d.tokens_out for d in days):,}",
            format_cost(sum(d.cost for d in days)),
            f"{sum(d.unpriced for d in days):,}",
        )
    )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        return "  ".join(cells).rstrip()

    body = [line(header), *(line(row) for row in rows[:-1]), line(rows[-1])]
    note = "Costs are estimates from list prices; set your own with c.Recap.prices."
    return "\n".join([*body, note])
