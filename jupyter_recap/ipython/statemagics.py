"""``%todos``, ``%remember``, ``%notes``, ``%forget`` and ``%recap compact-memory``.

The people's side of the agent API in :mod:`jupyter_recap.stores.workstate`: the same task list and
the same project memory, shown as plain text. Bad input prints one line and changes nothing.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_magic, magics_class

from ..debuglog import get_logger
from ..errors import RecapError
from ..stores.tasks import check, render
from ..stores.workstate import WorkState
from ..textutil import printable

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..pipeline.compaction import CompactResult
    from .host import KernelView

MEMORY_OFF = "project memory is turned off (Recap.memory = False or JUPYTER_RECAP_MEMORY=0)"


def _say(text: str) -> None:
    """Print one message. Notes and tasks are agents' text (model output), and a memory file can
    hold anything: whatever is printed here is made inert, since a terminal or JupyterLab's
    stream output would act on its escapes."""
    print(printable(text))


def _print_warnings(state: WorkState) -> None:
    for message in state.memory.take_warnings():
        _say(f"warning: {message}")


@magics_class
class WorkStateMagics(Magics):
    """The task list and project memory, for the person at the notebook."""

    def __init__(self, shell: InteractiveShell, *, state: WorkState) -> None:
        super().__init__(shell)
        self.state = state

    @line_magic
    def todos(self, line: str = "") -> None:
        """Show the task list the agent keeps (jupyter_recap.todo_write).

        %todos          the progress line, then [x] done, [~] in progress, [ ] pending, [!] blocked
        %todos clear    empty the list
        """
        words = line.split()
        if words == ["clear"]:
            self.state.todo_write([])
            _say("todos: the task list is now empty")
            return
        if words:
            _say(f"todos: unknown arguments {line.strip()!r}; usage: %todos [clear]")
            return
        tasks = self.state.tasks
        if not tasks:
            _say("todos: no task list yet (an agent writes one with jupyter_recap.todo_write)")
            return
        _say(render(tasks))
        for problem in check(tasks):
            _say(f"warning: {problem}")

    @line_magic
    def remember(self, line: str = "") -> None:
        """Keep a note for later sessions of this project: %remember KIND TEXT.

        KIND is fact, decision, gotcha or command; TEXT is one self-contained line of at most
        400 characters, e.g. %remember command the tests run with pytest -x tests/
        """
        kind, _, text = line.strip().partition(" ")
        if not kind or not text.strip():
            from ..stores.memory import KINDS

            _say(f"remember: usage: %remember KIND TEXT (KIND is one of {', '.join(KINDS)})")
            return
        self._memory_call("remember", lambda: self._remembered(kind, text))

    def _remembered(self, kind: str, text: str) -> None:
        entry = self.state.remember(kind, text)
        if entry is not None:
            _say(f"remembered {entry.line}")

    @line_magic
    def forget(self, line: str = "") -> None:
        """Remove the note containing TEXT: %forget TEXT (--all: every note containing it)."""
        text = line.strip()
        everything = text.startswith("--all ") or text == "--all"
        if everything:
            text = text[len("--all") :].strip()
        if not text:
            _say("forget: usage: %forget [--all] TEXT")
            return
        self._memory_call("forget", lambda: self._forgotten(text, everything))

    def _forgotten(self, text: str, everything: bool) -> None:
        gone = self.state.forget(text, all_matches=everything)
        if not gone:
            _say(f"forget: no note contains {text!r}")
        for entry in gone:
            _say(f"forgot {entry.line}")

    @line_magic
    def notes(self, line: str = "") -> None:
        """The project memory: %notes lists every note, %notes TERMS searches it.

        %notes          every note, with its kind and how often it was found
        %notes TERMS    the newest notes (at most 15) containing every one of the terms
                        (case-insensitive); each note found counts a hit
        """
        if line.strip():
            self._memory_call("notes", lambda: self._found(line))
        else:
            self._memory_call("notes", self._listed)

    def _found(self, terms: str) -> None:
        found = self.state.recall(terms)
        if not found:
            _say(f"notes: no note contains all of {terms.strip()!r}")
        for entry in found:
            _say(entry.line)

    def _listed(self) -> None:
        from ..stores.listings import format_notes  # here: only %notes needs it

        store = self.state.memory
        empty = f"notes: none yet for {store.project_dir}; %remember KIND TEXT keeps one"
        _say(format_notes(store.entries(), store.project_dir, empty=empty))

    def _memory_call(self, name: str, call: Any) -> None:
        """Run a memory command: memory off, bad input or a file problem is one line."""
        if not self.state.memory_enabled:
            _say(f"{name}: {MEMORY_OFF}")
            return
        try:
            call()
        except (RecapError, OSError) as error:
            _say(f"{name}: {error}")
        _print_warnings(self.state)


def compact_memory_now(ext: KernelView, model: str | None) -> None:
    """``%recap compact-memory``: merge in a worker thread; an interrupt cancels it."""
    from ..pipeline.compaction import compact_memory
    from ..pipeline.providers.base import CancelToken

    state = ext.state
    if not state.memory_enabled:
        _say(f"recap: {MEMORY_OFF}")
        return
    cancel = CancelToken()
    outcome: list[CompactResult | RecapError] = []

    def work() -> None:
        try:
            outcome.append(
                compact_memory(
                    state.memory,
                    settings=ext.settings,
                    model=model,
                    active_model=ext.transcript.active_model,
                    stats=ext.stats,
                    cancel=cancel,
                    usage=ext.usage,
                )
            )
        except RecapError as error:  # a --model that cannot be used at all
            outcome.append(error)
        except Exception as error:  # noqa: BLE001 - reported below, never a thread traceback
            get_logger().exception("memory: compaction failed")
            outcome.append(RecapError(f"compaction failed ({error}); the memory is unchanged"))

    worker = threading.Thread(target=work, name="jupyter-recap-compact", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        cancel.cancel()
        worker.join(5)  # the model call aborts at once; a merge already done is reported
        if not outcome:
            _say("recap: compaction cancelled; the memory is unchanged")
            return
    _print_warnings(state)
    if isinstance(outcome[0], RecapError):
        _say(f"recap: {outcome[0]}")
    else:
        _say(f"recap: {outcome[0].message}")
