"""What a recap knows besides the transcript: the task list and the project's memory notes.

Every way of asking for a recap (the kernel's triggers, ``%recap``, ``jupyter recap``, the server
route) turns the same two sources into the same :class:`Framing`, so a recap reads alike
wherever it was drafted. The lines are short: the context gives them a small fixed budget of
their own, so the recent detail of the session is never crowded out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..debuglog import get_logger
from ..errors import RecapError
from .memory import MemoryStore, project_dir_for
from .sessionfiles import SessionRecord
from .tasks import Task, TaskList, context_line, next_step

TASKS_CHARS = 200
NOTES_CHARS = 280
NOTES_LABEL = "Project notes: "


@dataclass(frozen=True)
class Framing:
    """``extras``: framing lines for the model; ``open_task``: the offline engine's next step,
    ``progress``: how many of how many tasks are done (the engine words it), and
    ``waiting``: a tool call waiting for approval."""

    extras: tuple[str, ...] = ()
    open_task: str | None = None
    progress: tuple[int, int] | None = None
    waiting: str | None = None
    """What an agent waits for the person to approve (a chat's tool call): the offline
    engine's last sentence."""


NO_FRAMING = Framing()


def framing_for(tasks: Sequence[Task], memory: MemoryStore | None) -> Framing:
    """The framing of a task list and (when given and enabled) a project's memory."""
    extras: list[str] = []
    line = context_line(tasks, TASKS_CHARS)
    if line:
        extras.append(line)
    if memory is not None:
        try:
            notes = memory.context_lines(NOTES_CHARS - len(NOTES_LABEL))
        except Exception:  # noqa: BLE001 - an unreadable memory file must not stop a recap
            get_logger().exception("memory: could not read the notes for a recap")
            notes = []
        if notes:
            extras.append(NOTES_LABEL + "; ".join(notes))
    step = next_step(tasks)
    done = sum(task.status == "completed" for task in tasks)
    return Framing(tuple(extras), step, (done, len(tasks)) if step is not None else None)


def memory_enabled() -> bool:
    """The default of ``Recap.memory``: on unless ``JUPYTER_RECAP_MEMORY`` says no."""
    from ..settings import MEMORY_ENV, env_flag

    return env_flag(MEMORY_ENV, True)


def project_memory(place: str | Path | None) -> MemoryStore:
    """The memory of the project around ``place`` (a notebook or a directory; None: the cwd)."""
    return MemoryStore(project_dir_for(place or os.getcwd()))


def record_framing(record: SessionRecord, *, enabled: bool) -> Framing:
    """A stored session's framing: its saved task list and its project's memory."""
    memory = project_memory(record.notebook or record.cwd or None) if enabled else None
    return framing_for(TaskList.from_list(record.tasks).tasks, memory)


def notebook_framing(path: str | Path, *, enabled: bool) -> Framing:
    """A saved notebook's framing: the task list of its latest stored session, if any, and
    the memory of its project."""
    from .sessions import SessionStore

    try:
        record = SessionStore().latest_for(os.path.abspath(path))
    except RecapError as error:
        get_logger().warning("sessions: no task list for %s: %s", path, error)
        record = None
    tasks = TaskList.from_list(record.tasks if record is not None else []).tasks
    return framing_for(tasks, project_memory(path) if enabled else None)
