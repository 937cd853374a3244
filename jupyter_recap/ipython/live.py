"""What changes while the extension is loaded, carried to the parts it concerns.

Two settings take effect in the running kernel, with no reload: ``%config Recap.capture``
restarts the capture sources, and ``%config Recap.memory`` turns the project memory on or off.
And the task list (an agent's ``todo_write``, ``%todos``) changes under the extension at any
time. :class:`LiveChanges` holds those observers, from :meth:`~LiveChanges.attach` to
:meth:`~LiveChanges.detach`, so that :class:`~.extension.RecapExtension` only wires: it says
who hears a new task list, this object keeps them hearing it until unload.

The other settings are read where they are used (the trigger runner and the recorder observe
their own); these two belong to no collaborator of the kernel side, since the capture manager
and the work state are core objects that know nothing of traitlets' observers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..capture.manager import Capture
    from ..settings import Recap
    from ..stores.tasks import Task
    from ..stores.workstate import TaskListener, WorkState


class LiveChanges:
    """Applies the ``capture`` and ``memory`` settings as they change, and hands each new task
    list to ``task_listeners`` (in their order), between :meth:`attach` and :meth:`detach`."""

    def __init__(
        self,
        settings: Recap,
        capture: Capture,
        state: WorkState,
        task_listeners: Sequence[TaskListener],
    ) -> None:
        self.settings = settings
        self.capture = capture
        self.state = state
        self._task_listeners = tuple(task_listeners)
        self._unsubscribe_tasks: Callable[[], None] | None = None

    def attach(self) -> None:
        """Follow the two settings (the memory's current value applies at once) and the task
        list. The capture sources were started with the setting's current value already."""
        self.settings.observe(self._capture_changed, names=["capture"])
        self.state.memory_enabled = bool(self.settings.memory)
        self.settings.observe(self._memory_changed, names=["memory"])
        self._unsubscribe_tasks = self.state.subscribe(self._tasks_changed)

    def detach(self) -> None:
        """Stop following; harmless when :meth:`attach` never ran, or failed half-way."""
        with contextlib.suppress(ValueError):  # never observed: attach failed before it
            self.settings.unobserve(self._capture_changed, names=["capture"])
        if self._unsubscribe_tasks is not None:
            self._unsubscribe_tasks()
            self._unsubscribe_tasks = None
        with contextlib.suppress(ValueError):  # never observed: attach failed before it
            self.settings.unobserve(self._memory_changed, names=["memory"])

    def _capture_changed(self, change: Any) -> None:
        self.capture.restart(change["new"])

    def _memory_changed(self, change: Any) -> None:
        self.state.memory_enabled = bool(change["new"])

    def _tasks_changed(self, tasks: tuple[Task, ...]) -> None:
        for listener in self._task_listeners:
            listener(tasks)
