"""Agent runs as transcript turns: what every capture source reports into.

A source (an SDK's tracing processor, a callback handler…) sees a run start, its steps and its
end, and tells an :class:`AgentRun`. The run turns that into the entries a hand-made
``Transcript.turn`` would have written: the prompt (with the model, which becomes the active
one), tool calls and results, the reply, and the outcome.

Three rules keep the transcript coherent whatever the frameworks do:

* **One turn per top-level run.** A run started while another is active in the same context
  (an agent calling an agent, a handoff, a model client traced by a second source) is *nested*:
  its steps become tool lines of the outer turn, named by agent.
* **The cell decides how a failed run ended.** A run that ends without an answer while the cell
  that started it is still executing waits for the cell: an interrupt there makes it *aborted*,
  an exception *errored* with that exception's text. A run that ends after its cell (left
  running in the background) is finished with what the source knows.
* **Nothing raises.** Every method swallows and logs its own failures; the framework's run and
  the person's cell never see them.

Nothing here imports IPython or a framework.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import reprlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..debuglog import get_logger
from ..record.transcript import MAX_ENTRY_CHARS, Outcome, Transcript, describe_error

#: Text of a value longer than this is cut before it is even formatted: a tool that returns a
#: 50 MB frame must not cost a 50 MB repr. The transcript clips further (head and tail).
RAW_LIMIT = 2 * MAX_ENTRY_CHARS

_repr = reprlib.Repr()
_repr.maxstring = RAW_LIMIT
_repr.maxother = RAW_LIMIT
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 50
_repr.maxlevel = 4

#: The run active in this thread / task; a run started while one is set is nested in it.
_active: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "jupyter_recap_active_run", default=None
)
#: The cell executing when this context was created, so a task left running after its cell
#: still knows where it came from.
_cell: contextvars.ContextVar[CellMark | None] = contextvars.ContextVar(
    "jupyter_recap_cell", default=None
)


def bounded_text(value: Any) -> str:
    """``value`` as text, cut to :data:`RAW_LIMIT` before any large formatting happens."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value if len(value) <= RAW_LIMIT else value[:RAW_LIMIT]
    try:
        return _repr.repr(value)
    except Exception:  # noqa: BLE001 - a failing repr must not lose the step
        return f"<{type(value).__name__}>"


def bounded_args(args: Any) -> str:
    """Tool arguments on one line: ``city='Paris', days=3`` (JSON text is read as a dict)."""
    if isinstance(args, str) and args.startswith("{") and len(args) <= RAW_LIMIT:
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    if isinstance(args, dict):
        items = list(args.items())[: _repr.maxdict]
        return ", ".join(f"{str(key)[:100]}={_repr.repr(value)}" for key, value in items)
    return bounded_text(args)


@dataclass(eq=False, slots=True)
class CellMark:
    """One cell's execution, as the recorder saw it start."""

    cell_id: str | None
    running: bool = True
    error: BaseException | None = None
    waiting: list[AgentRun] = field(default_factory=list)
    """Runs that ended without an answer during the cell: finished when the cell ends."""
    runs: int = 0
    """Top-level runs started in this cell."""
    owned: bool = False
    """The cell is an agent turn of its own (``%%ai``): runs inside it are that turn's
    machinery (jupyter-ai calls LangChain), so they are not recorded a second time."""
    token: contextvars.Token[CellMark | None] | None = field(default=None, repr=False)
    """Undoes this mark in the context that ran the cell, once it ends."""


class RunHub:
    """Hands out :class:`AgentRun` objects and knows the cell being executed.

    ``transcript`` is called for the live transcript at the moment of writing (a resumed session
    replaces it). ``on_start`` is told when a top-level run starts, before its first entry is
    written, so the trigger schedule sees a turn in progress at once.
    """

    def __init__(
        self,
        transcript: Callable[[], Transcript],
        *,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        self._transcript = transcript
        self.on_start = on_start
        self._lock = threading.Lock()
        self._cell: CellMark | None = None
        self.turns: dict[str, int] = {}
        """Turns recorded, by source name."""
        self.running: set[AgentRun] = set()
        self.before_cell: list[Callable[[], None]] = []
        """Called as each recorded cell starts (a source that waits for the person's setup
        checks for it here; keep these cheap, they run before every cell)."""
        self.after_cell: list[Callable[[], None]] = []
        """Called as each recorded cell ends, after its waiting runs are settled."""

    # -- cells (told by the recorder) ---------------------------------------------------------

    def cell_started(self, cell_id: str | None, *, owned: bool = False) -> CellMark:
        """A cell begins executing (``owned``: it is an agent turn by itself)."""
        # Runs before every cell: one small object, one context variable, the hooks.
        mark = CellMark(cell_id, owned=owned)
        self._cell = mark
        mark.token = _cell.set(mark)
        if self.before_cell:
            _call_all(self.before_cell)
        return mark

    def cell_ended(self, mark: CellMark | None, error: BaseException | None) -> int:
        """The cell ended (with ``error``, if it raised); returns how many runs it started."""
        if mark is None:
            return 0
        with self._lock:
            mark.running = False
            mark.error = error
            waiting, mark.waiting = mark.waiting, []
            if self._cell is mark:
                self._cell = None
        # An ended cell is no longer the one a run started here belongs to: an owned cell's mark
        # left behind would keep every later run outside a cell from being recorded. Contexts
        # copied during the cell (its threads and tasks) keep the mark; a token of another
        # context is refused, and then there is nothing of ours to undo here.
        if mark.token is not None:
            with contextlib.suppress(ValueError):
                _cell.reset(mark.token)
            mark.token = None
        for run in waiting:
            run.settle(error)
        if self.after_cell:
            _call_all(self.after_cell)
        return mark.runs

    def current_cell(self) -> CellMark | None:
        """The cell this context belongs to: the one that created it, else the one running."""
        mark = _cell.get()
        return mark if mark is not None else self._cell

    # -- runs -------------------------------------------------------------------------------

    def active(self) -> AgentRun | None:
        """The run active in this thread or task, if any."""
        run = _active.get()
        return run if run is not None and not run.done else None

    def enter(self, run: AgentRun) -> contextvars.Token[AgentRun | None]:
        """Make ``run`` the active run of this context until :meth:`exit` (a model or tool call
        of a framework whose callbacks do not run inside the agent's own context)."""
        return _active.set(run)

    def exit(self, token: contextvars.Token[AgentRun | None]) -> None:
        """Undo :meth:`enter` (a token from another context is ignored: that context is gone)."""
        with contextlib.suppress(ValueError):
            _active.reset(token)

    def close_runs(self, source: str, reason: str) -> None:
        """End every running turn of ``source`` (it stopped capturing mid-run) as errored."""
        with self._lock:
            runs = [run for run in self.running if run.source == source]
        for run in runs:
            run.finish(reason)
            if not run.done or run.cell is None or not run.cell.running:
                continue
            # A run waiting for its cell would wait for the cell's end: settle it now.
            with self._lock:
                if run in run.cell.waiting:
                    run.cell.waiting.remove(run)
                else:
                    continue
            run.settle(None)

    def start(
        self,
        source: str,
        *,
        prompt: str | None = None,
        model: str | None = None,
        agent: str | None = None,
        parent: AgentRun | None = None,
        activate: bool = True,
    ) -> AgentRun:
        """A run begins. Nested in ``parent`` (default: the run active here) when there is one.

        ``activate`` makes it the active run of this context (sources whose callbacks run in the
        agent's own context); sources that track parents themselves pass ``parent`` instead.
        """
        outer = parent if parent is not None else self.active()
        if outer is not None:
            outer = outer.top
        run = AgentRun(self, source, outer, agent=agent)
        if activate:
            run._token_value = _active.get()
            _active.set(run)
        if outer is None:
            mark = self.current_cell()
            run.cell = mark
            if mark is not None and mark.owned:
                run.muted = True
                run.done = True
                return run
            if mark is not None:
                with self._lock:
                    mark.runs += 1
            with self._lock:
                self.running.add(run)
            if self.on_start is not None:
                _safely(self.on_start)
        run.begin(prompt, model)
        return run

    def transcript(self) -> Transcript:
        """The live transcript."""
        return self._transcript()

    def count(self, source: str) -> None:
        """Count one turn recorded by ``source`` (for ``%recap status``)."""
        with self._lock:
            self.turns[source] = self.turns.get(source, 0) + 1

    def _counted(self, run: AgentRun) -> None:
        with self._lock:
            self.running.discard(run)
        self.count(run.source)


class AgentRun:
    """One agent run; top-level runs write a turn, nested ones write tool lines into theirs."""

    def __init__(
        self, hub: RunHub, source: str, outer: AgentRun | None, *, agent: str | None
    ) -> None:
        self.hub = hub
        self.source = source
        self.outer = outer
        self.agent = agent
        self.cell: CellMark | None = None
        self.done = False
        self.muted = False
        """A run inside a cell that is already a turn: it records nothing."""
        self.prompt: str | None = None
        self.model: str | None = None
        self.reply_text: str = ""
        self._opened = False  # the user entry is written
        self._lock = threading.RLock()
        self._token_value: AgentRun | None = None
        self._failure: BaseException | str | None = None
        self._settled = False

    @property
    def top(self) -> AgentRun:
        """The top-level run this one belongs to (itself when it is one)."""
        return self.outer.top if self.outer is not None else self

    @property
    def cell_id(self) -> str | None:
        top = self.top
        return top.cell.cell_id if top.cell is not None else None

    # -- what sources report ----------------------------------------------------------------

    def begin(self, prompt: str | None, model: str | None) -> None:
        """Called by :meth:`RunHub.start`."""
        if model:
            self.set_model(model)
        if self.outer is not None:
            self.outer.tool_call(self.agent or "agent", prompt or "")
            self.prompt = prompt
        elif prompt:
            self.set_prompt(prompt)

    def set_prompt(self, prompt: Any) -> None:
        """The input the agent was given (the first one known is the turn's prompt)."""
        text = bounded_text(prompt).strip()
        if not text or self.prompt:
            return
        self.prompt = text
        if self.outer is None and self.model is not None:
            self._open()

    def set_model(self, model: Any) -> None:
        """The model the agent uses; a top-level run's becomes the notebook's active model.

        The prompt entry waits for the model (usually known with the first model call) so
        that it carries it, as an ``%%ai`` cell's does; any step or the end writes it anyway.
        """
        name = bounded_text(model).strip()[:200]
        if not name or self.muted:
            return
        top = self.top
        if top is not self:
            if top.model is None:
                top.set_model(name)
            return
        with self._lock:
            if self.model is not None:
                return  # the first model named is the run's
            self.model = name
            opened = self._opened
        if opened:
            _safely(lambda: self.hub.transcript().set_model(name))
        elif self.prompt:
            self._open()

    def tool_call(self, name: str, args: Any = None, *, agent: str | None = None) -> None:
        """The agent called a tool (or, seen from outside, an inner agent)."""
        self._write(
            lambda t, cell: t.tool_call(self._named(name, agent), bounded_args(args), cell_id=cell)
        )

    def tool_result(
        self, name: str, result: Any = "", *, error: Any = None, agent: str | None = None
    ) -> None:
        """A tool returned ``result`` or failed with ``error`` (an exception or its text)."""
        text = bounded_text(result)
        err: bool | str = False
        if error is not None and error is not False:
            err = (
                describe_error(error)
                if isinstance(error, BaseException)
                else bounded_text(error) or True
            )
        self._write(
            lambda t, cell: t.tool_result(self._named(name, agent), text, error=err, cell_id=cell)
        )

    def reply(self, text: Any) -> None:
        """The agent's answer so far (the latest call wins; written when the run ends)."""
        value = bounded_text(text).strip()
        if value:
            self.reply_text = value

    def finish(self, error: BaseException | str | None = None, *, reply: Any = None) -> None:
        """The run ended: with an answer (``reply`` or the latest :meth:`reply`), or ``error``."""
        try:
            if reply is not None:
                self.reply(reply)
            with self._lock:
                if self.done:
                    return
                self.done = True
            if _active.get() is self:
                _active.set(self._token_value)
            if self.outer is not None:
                self._finish_nested(error)
                return
            if error is None and self.reply_text:
                self._settle_now(None)
                return
            mark = self.cell
            if mark is not None:
                with self.hub._lock:
                    if mark.running:
                        self._failure = error
                        mark.waiting.append(self)
                        return
            self._settle_now(error)
        except Exception:  # noqa: BLE001 - capture must never break the agent
            get_logger().exception("capture: finishing a %s run failed", self.source)

    # -- internals --------------------------------------------------------------------------

    def settle(self, cell_error: BaseException | None) -> None:
        """Finish a run that waited for its cell.

        An interrupt of the cell makes the run aborted. Otherwise the source's own account of
        the failure wins when it has one (the cell's exception often wraps it and keeps less,
        e.g. an HTTP error under "Error while generating output"), else the cell's exception.
        """
        error: BaseException | str | None = self._failure
        if cell_error is not None and (_is_interrupt(cell_error) or error is None):
            error = cell_error
        try:
            self._settle_now(error)
        except Exception:  # noqa: BLE001
            get_logger().exception("capture: settling a %s run failed", self.source)

    def _settle_now(self, error: BaseException | str | None) -> None:
        with self._lock:
            if self._settled:
                return  # settled by its cell and by a source closing it: one outcome only
            self._settled = True
        outcome: Outcome = "ok"
        detail: str | None = None
        if error is not None:
            if _is_interrupt(error):
                outcome = "aborted"
            else:
                outcome = "errored"
                detail = (
                    describe_error(error)
                    if isinstance(error, BaseException)
                    else bounded_text(error)
                ) or "the agent failed"
        elif not self.reply_text:
            outcome, detail = "errored", "the agent ended without an answer"
        self._open()
        transcript = self.hub.transcript()
        if self.reply_text:
            transcript.assistant(self.reply_text, cell_id=self.cell_id)
        transcript.outcome(outcome, detail, cell_id=self.cell_id)
        self.hub._counted(self)

    def _finish_nested(self, error: BaseException | str | None) -> None:
        name = self.agent or "agent"
        if error is not None:
            self.outer.tool_result(name, self.reply_text, error=error)  # type: ignore[union-attr]
        else:
            self.outer.tool_result(name, self.reply_text)  # type: ignore[union-attr]

    def _named(self, name: str, agent: str | None) -> str:
        """Tool lines of a nested agent carry its name: ``researcher.search``."""
        owner = agent if agent is not None else (self.agent if self.outer is not None else None)
        name = str(name)[:200] or "tool"
        return f"{owner}.{name}" if owner else name

    def _open(self) -> None:
        """Write the turn's prompt entry, once."""
        if self.muted:
            return
        with self._lock:
            if self._opened:
                return
            self._opened = True
        prompt = self.prompt or f"({self.agent or self.source} run)"
        self.hub.transcript().user(prompt, model=self.model, cell_id=self.cell_id)

    def _write(self, action: Callable[[Transcript, str | None], Any]) -> None:
        if self.top.muted:
            return
        if self.outer is not None:
            # The outer run writes; the name already says which agent acted.
            top = self.top
            top._open()
            _safely(lambda: action(top.hub.transcript(), top.cell_id))
            return
        self._open()
        _safely(lambda: action(self.hub.transcript(), self.cell_id))


def _is_interrupt(error: BaseException | str) -> bool:
    """An interrupt, a cancelled task, or a stream the person closed before it finished."""
    return isinstance(error, (KeyboardInterrupt, asyncio.CancelledError, GeneratorExit))


def _call_all(hooks: list[Callable[[], None]]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:  # noqa: BLE001 - a source's cell hook must never break the cell
            get_logger().exception("capture: a cell hook failed")


def _safely(action: Callable[[], Any]) -> None:
    try:
        action()
    except Exception:  # noqa: BLE001 - capture must never break the agent
        get_logger().exception("capture: a transcript write failed")
