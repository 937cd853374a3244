"""A task list for agents working in notebooks: validation, warnings and plain-text views.

``TaskList.write`` replaces the whole list at once (the agent restates its plan every time) and
returns warnings; anything that cannot be stored is refused with a one-line
:class:`~jupyter_recap.errors.InputError` and leaves the list as it was. The text views
(``progress_line``, ``render``, ``prompt_block``, ``context_line``) are pure functions of a
sequence of tasks, so a recap can render a stored list without a ``TaskList``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union

from ..errors import InputError
from ..textutil import printable, shorten

STATUSES = ("pending", "in_progress", "completed", "blocked")
MAX_TEXT = 400
BAR_WIDTH = 12
MARKERS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]", "blocked": "[!]"}

TaskLike = Union["Task", dict[str, Any], str]


@dataclass(frozen=True)
class Task:
    """One step of the plan; constructing an invalid task raises :class:`InputError`."""

    text: str
    status: str = "pending"
    note: str = ""

    def __post_init__(self) -> None:
        values: tuple[object, ...] = (self.text, self.note)  # dicts from JSON may hold anything
        if not all(isinstance(value, str) for value in values):
            raise InputError("task text and note must be strings")
        text, note = self.text.strip(), self.note.strip()
        if not text:
            raise InputError("task text is empty")
        if len(text) > MAX_TEXT:
            raise InputError(f"task text is {len(text)} characters; the limit is {MAX_TEXT}")
        if self.status not in STATUSES:
            raise InputError(
                f"unknown task status {str(self.status)[:40]!r} for {shorten(text, 60)!r};"
                f" use one of {', '.join(STATUSES)}"
            )
        if self.status == "blocked" and not note:
            raise InputError(f"blocked task {shorten(text, 60)!r} needs a note saying why")
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "note", note)

    @classmethod
    def coerce(cls, item: TaskLike) -> Task:
        """A ``Task`` from a ``Task``, a ``{"text", "status", "note"}`` dict or a plain string."""
        if isinstance(item, Task):
            return item
        if isinstance(item, str):
            return cls(item)
        if isinstance(item, dict):
            return cls(item.get("text", ""), item.get("status", "pending"), item.get("note") or "")
        raise InputError(f"a task must be a string or a dict, not {type(item).__name__}")

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "status": self.status, "note": self.note}


def check(tasks: Sequence[Task]) -> list[str]:
    """Warnings about a (valid) list: several tasks in progress, or none while work remains."""
    warnings: list[str] = []
    active = sum(task.status == "in_progress" for task in tasks)
    if active > 1:
        warnings.append(f"{active} tasks are in progress; keep one at a time")
    elif active == 0 and any(task.status == "pending" for task in tasks):
        warnings.append("no task is in progress while work remains; mark the next one in_progress")
    return warnings


class TaskList:
    """The current plan; ``write`` replaces it whole, ``to_list``/``from_list`` persist it."""

    def __init__(self, tasks: Iterable[Task] = ()) -> None:
        self._tasks: tuple[Task, ...] = tuple(tasks)

    @property
    def tasks(self) -> tuple[Task, ...]:
        return self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def write(self, tasks: Iterable[TaskLike]) -> list[str]:
        """Replace the list; return warnings, or raise ``InputError`` leaving it unchanged."""
        if isinstance(tasks, (str, dict)):
            raise InputError("write() takes a list of tasks, not a single task")
        new: list[Task] = []
        for number, item in enumerate(tasks, 1):
            try:
                new.append(Task.coerce(item))
            except InputError as error:
                raise InputError(f"task {number}: {error}") from None
        self._tasks = tuple(new)
        return check(new)

    def to_list(self) -> list[dict[str, str]]:
        """JSON-ready dicts for the session record's ``tasks`` slot."""
        return [task.to_dict() for task in self._tasks]

    @classmethod
    def from_list(cls, items: object) -> TaskList:
        """A list read back from ``to_list`` output; malformed items are skipped, not fatal."""
        tasks: list[Task] = []
        if isinstance(items, list):
            for item in items:
                if not isinstance(item, dict):
                    continue
                try:
                    tasks.append(Task.coerce(item))
                except InputError:
                    continue
        return cls(tasks)


def _count(tasks: Sequence[Task], status: str) -> int:
    return sum(task.status == status for task in tasks)


def progress_counts(tasks: Sequence[Task]) -> dict[str, int] | None:
    """``{done, total, blocked}`` of the list (None when empty): what a progress bar shows."""
    if not tasks:
        return None
    return {
        "done": _count(tasks, "completed"),
        "total": len(tasks),
        "blocked": _count(tasks, "blocked"),
    }


def progress_line(tasks: Sequence[Task]) -> str:
    """``tasks ####........ 2/5  1 blocked``; the bar fills only when every task is completed."""
    if not tasks:
        return ""
    done, total = _count(tasks, "completed"), len(tasks)
    filled = BAR_WIDTH * done // total
    line = f"tasks {'#' * filled}{'.' * (BAR_WIDTH - filled)} {done}/{total}"
    blocked = _count(tasks, "blocked")
    return f"{line}  {blocked} blocked" if blocked else line


def _task_line(task: Task) -> str:
    # Task text is an agent's (model output): shown to people and agents as inert text.
    line = f"{MARKERS[task.status]} {printable(task.text)}"
    return f"{line} — {printable(task.note)}" if task.note else line


def render(tasks: Sequence[Task]) -> str:
    """The progress line, then one marked line per task."""
    if not tasks:
        return ""
    return "\n".join([progress_line(tasks), *(_task_line(task) for task in tasks)])


def _current(tasks: Sequence[Task]) -> Task | None:
    return next((task for task in tasks if task.status == "in_progress"), None)


def _first_pending(tasks: Sequence[Task]) -> Task | None:
    return next((task for task in tasks if task.status == "pending"), None)


def next_step(tasks: Sequence[Task]) -> str | None:
    """The in-progress task's text, else the first pending one's, else ``None``."""
    task = _current(tasks) or _first_pending(tasks)
    return task.text if task else None


def prompt_block(tasks: Sequence[Task]) -> str:
    """What an agent sees before each step: the rendered list and what to work on."""
    if not tasks:
        return ""
    current, pending = _current(tasks), _first_pending(tasks)
    if current:
        focus = f"Now: {current.text}"
    elif pending:
        focus = f"Next: {pending.text} (mark it in_progress before starting)"
    elif _count(tasks, "blocked"):
        focus = "Nothing left to start; resolve the blocked tasks or revise the plan."
    else:
        focus = "All tasks are completed."
    return f"{render(tasks)}\n{focus}"


def context_line(tasks: Sequence[Task], limit: int = 200) -> str:
    """One line for a recap's framing, e.g. ``Tasks 2/5 done; in progress: X; next: Y``."""
    if not tasks or limit <= 0:
        return ""
    parts = [f"Tasks {_count(tasks, 'completed')}/{len(tasks)} done"]
    current, pending = _current(tasks), _first_pending(tasks)
    if current:
        parts.append(f"in progress: {current.text}")
    if pending:
        parts.append(f"next: {pending.text}")
    blocked = _count(tasks, "blocked")
    if blocked:
        parts.append(f"{blocked} blocked")
    return shorten("; ".join(parts), limit)[:limit]
