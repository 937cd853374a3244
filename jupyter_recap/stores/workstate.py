"""The state an agent keeps beside its transcript: the task list and the project's memory.

One :class:`WorkState` per process (a kernel serves one notebook), reached with
:func:`current_state`. The module-level functions are the package's agent API, meant to be
handed to a model as tools::

    import jupyter_recap as jr
    jr.todo_write([{"text": "read the loader", "status": "completed"},
                   {"text": "fix the date parsing", "status": "in_progress"}])
    system_prompt = base_prompt + "\\n\\n" + jr.memory_prompt() + "\\n\\n" + jr.tasks_prompt()

Bad input raises :class:`~jupyter_recap.errors.InputError` (a ``ValueError``) and changes
nothing. With memory turned off (``Recap.memory = False`` or ``JUPYTER_RECAP_MEMORY=0``) nothing
is loaded or written: ``remember`` returns None and ``recall`` finds nothing.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..debuglog import get_logger
from ..textutil import printable
from .tasks import Task, TaskLike, TaskList, prompt_block

if TYPE_CHECKING:
    # The memory store and the framing load when first used (a note, a recap), not with a
    # kernel's task list at ``%load_ext``.
    from .framing import Framing
    from .memory import Entry, MemoryStore

TaskListener = Callable[[tuple[Task, ...]], None]


class MemoryWarning(UserWarning):
    """Something happened to the project memory that its owner should know (a corrupt file)."""


class WorkState:
    """The task list and project memory of one notebook (or one process)."""

    def __init__(self, place: str | None = None) -> None:
        self._place = place
        """The notebook or directory whose project the memory belongs to; None: decided later."""
        self.memory_enabled = _memory_enabled()
        self._tasks = TaskList()
        self._lock = threading.Lock()
        self._listeners: list[TaskListener] = []
        self._memory: MemoryStore | None = None

    # -- tasks -----------------------------------------------------------------------------

    @property
    def tasks(self) -> tuple[Task, ...]:
        return self._tasks.tasks

    def todo_write(self, tasks: Iterable[TaskLike]) -> list[str]:
        """Replace the task list; return its warnings (InputError leaves the list unchanged)."""
        with self._lock:
            problems = self._tasks.write(tasks)
            snapshot = self._tasks.tasks
        for problem in problems:
            get_logger().info("tasks: %s", problem)
        self._notify(snapshot)
        return problems

    def restore_tasks(self, items: object) -> None:
        """Take a stored list (a session record's ``tasks``); malformed items are dropped."""
        restored = TaskList.from_list(items)
        with self._lock:
            self._tasks = restored
        self._notify(restored.tasks)

    def tasks_prompt(self) -> str:
        """The task list as an agent should see it before each step ("" when there is none)."""
        return prompt_block(self.tasks)

    def subscribe(self, listener: TaskListener) -> Callable[[], None]:
        """Call ``listener(tasks)`` after every change of the list; returns the unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, tasks: tuple[Task, ...]) -> None:
        for listener in list(self._listeners):
            try:
                listener(tasks)
            except Exception:  # noqa: BLE001 - a listener (banner, session) must not break a write
                get_logger().exception("tasks: a listener failed")

    # -- memory ----------------------------------------------------------------------------

    @property
    def place(self) -> str:
        """Where the project is looked for: the notebook this kernel serves, else the cwd."""
        return self._place or os.environ.get("JPY_SESSION_NAME") or os.getcwd()

    @property
    def memory(self) -> MemoryStore:
        """The project's memory store (disabled while memory is turned off)."""
        if self._memory is None:
            from .framing import project_memory

            self._memory = project_memory(self.place)
        self._memory.disabled = not self.memory_enabled
        return self._memory

    def remember(self, kind: str, text: str) -> Entry | None:
        """Keep a one-line note of ``kind`` fact, decision, gotcha or command."""
        return self.memory.remember(kind, text)

    def recall(self, terms: str) -> list[Entry]:
        """The newest notes containing every one of ``terms`` (their hit counts go up)."""
        return self.memory.recall(terms)

    def forget(self, text: str, *, all_matches: bool = False) -> list[Entry]:
        """Remove the note containing ``text`` and return what was removed."""
        return self.memory.forget(text, all_matches=all_matches)

    def memory_prompt(self) -> str:
        """The top notes for an agent's system prompt ("" when there are none)."""
        return self.memory.prompt_block()

    # -- recaps ----------------------------------------------------------------------------

    def framing(self) -> Framing:
        """What a recap of this notebook adds to its transcript."""
        from .framing import framing_for

        return framing_for(self.tasks, self.memory if self.memory_enabled else None)


_state: WorkState | None = None
_state_lock = threading.Lock()


def current_state() -> WorkState:
    """This process's work state, created on first use."""
    global _state
    with _state_lock:
        if _state is None:
            _state = WorkState()
        return _state


def set_current_state(state: WorkState | None) -> None:
    """Replace this process's work state (None: a fresh one on next use)."""
    global _state
    with _state_lock:
        _state = state


def _memory_enabled() -> bool:
    """:func:`~.framing.memory_enabled`, without importing the framing."""
    from ..settings import MEMORY_ENV, env_flag

    return env_flag(MEMORY_ENV, True)


def _warn_memory() -> None:
    # Called from the agent API only: code that called it explicitly is told at once. A recap
    # drafted in the background never warns into a cell; the next call here shows it.
    for message in current_state().memory.take_warnings():
        warnings.warn(printable(message), MemoryWarning, stacklevel=3)


def todo_write(tasks: Iterable[TaskLike]) -> list[str]:
    """Replace the whole task list; returns warnings (empty when the list is sound).

    Each task is a string, a ``Task`` or a dict ``{"text", "status", "note"}`` with status
    pending, in_progress, completed or blocked (blocked needs a note saying why).
    """
    return current_state().todo_write(tasks)


def tasks_prompt() -> str:
    """The task list and what to work on now, for the agent's prompt before every step."""
    return current_state().tasks_prompt()


def remember(kind: str, text: str) -> Entry | None:
    """Keep a note for later sessions of this project: kind fact, decision, gotcha or command."""
    try:
        return current_state().remember(kind, text)
    finally:
        _warn_memory()


def recall(terms: str) -> list[Entry]:
    """The 15 newest notes containing every term (case-insensitive)."""
    try:
        return current_state().recall(terms)
    finally:
        _warn_memory()


def forget(text: str, *, all_matches: bool = False) -> list[Entry]:
    """Remove the note containing ``text``; several matches are refused unless ``all_matches``."""
    try:
        return current_state().forget(text, all_matches=all_matches)
    finally:
        _warn_memory()


def memory_prompt() -> str:
    """The project's top 20 notes with a trust-but-verify line, for an agent's system prompt."""
    try:
        return current_state().memory_prompt()
    finally:
        _warn_memory()
