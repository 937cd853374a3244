"""What a notebook's record gets from a CLI agent's session: its asks, its edits, its answer.

A session of an agent (one Claude Code conversation) is a stream of hook events: a prompt,
tool calls, a stop, again and again. A prompt does not say which notebook it is about, so a
session's prompts are held until one of its tool calls edits (or runs) a notebook. That
notebook then gets, as entries of its record (:class:`~jupyter_recap.wire.OutsideEntry`):

1. the held asks (``user``), one ``event`` saying who took them and worked on the notebook
   from outside its kernel, then the call itself (``tool_call`` and ``tool_result``);
2. every later tool call of the same turn;
3. at the stop, the answer (``assistant``) and the outcome (``ok``, or ``errored`` with what
   the agent said went wrong).

So the kernel's record holds the agent's turn like one of its own cells' turns, and a recap
written while the person is away tells it. A turn that touched no notebook keeps its ask held
for the next one ("now put that in the notebook" needs the ask before it).

Claude Code sends no ``Stop`` when the person interrupts it. A turn silent for ``silence``
seconds (:meth:`HookSessions.quiet`, which the server calls every second) is therefore ended
in its notebooks as ``aborted`` with :data:`NO_STOP`: a turn only hooks know of must not hold
the kernel's recaps and count on in the agents panel until the next prompt. The session keeps
the turn: a tool call that ran longer than the silence and answers after it, and the stop that
follows, still reach the notebooks (with an ``event`` saying the agent went on). A new prompt
after a turn whose stop never came ends it as ``aborted`` too (unless the silence already
did); so does the session's end.

A tool that names no notebook but says it works on cells (an MCP server's ``insert_cell``)
works on the notebook the session last named (its ``use_notebook``).

A session may wait for the person's approval of a tool call (:meth:`HookSessions.waits`): from
its ``approval`` event (``PermissionRequest``), or its ``permission`` notification when no
``approval`` came (Claude Code's hooks may be set for one and not the other). The wait is on
the notebook the pending call names, else the one the session named last. It ends at the
session's next event that says the agent went on or stopped: a tool's result, a denial, a
prompt, a stop, the session's end, or Claude Code's idle-input notification (the agent is back
at its prompt: the person answered "no" in its terminal, which no hook tells). A session that
waits is not silent: the person, not the agent, holds it up, so its turn is not ended by
:meth:`HookSessions.quiet` while it waits (it would read as interrupted, and end the wait's
notice while the agent still waits). A session forgotten for its idleness takes its wait
along.

Bounded: :data:`MAX_SESSIONS` sessions (the least recently heard from goes), each forgotten
after :data:`IDLE_SECONDS` of silence (a turn of a session forgotten mid-turn ends in its
notebooks as a silent one does); :data:`MAX_ASKS` held asks, :data:`MAX_NOTEBOOKS` notebooks
and :data:`MAX_CALLS` tool calls per turn.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..wire import OutsideEntry
from .events import WAITS, HookEvent

MAX_SESSIONS = 64
IDLE_SECONDS = 6 * 3600.0
SILENCE_SECONDS = 120.0
"""A turn silent this long is told as ended without a stop (``c.RecapServer.hook_silence_seconds``
sets it for a server)."""
NO_STOP = "no stop received (interrupted?)"
"""The error of a turn ended by its silence: what the agents panel shows of it."""
MAX_ASKS = 4
"""Asks held per session (the latest); a turn that never touches a notebook keeps its own."""
MAX_NOTEBOOKS = 8
"""Notebooks one turn writes into."""
MAX_CALLS = 32
"""Tool calls of one turn sent to its notebooks (after them, only the answer)."""


class Wait(NamedTuple):
    """A session's tool call waiting for the person's approval."""

    agent: str
    session: str
    text: str
    """The call in one line (``Bash rm -rf build/``), or its tool's name alone (from a
    notification), or "" when not even that is known."""
    at: float
    """When the agent asked."""
    notebook: str | None
    """The absolute path of the notebook the call names, else of the one the session named
    last; None when it named none."""
    cwd: str | None
    """The agent's working folder."""
    precise: bool
    """From the agent's ``PermissionRequest`` (the call itself), not its notification."""


class Delivery(NamedTuple):
    """What one notebook gets of one event: entries for its record, and whether the event
    edited or ran it (for the attribution of its change line)."""

    notebook: str
    """The notebook's absolute path."""
    agent: str
    at: float
    entries: list[OutsideEntry]
    edited: int = 0
    ran: int = 0


@dataclass(slots=True)
class _Session:
    agent: str
    heard: float
    asks: list[str] = field(default_factory=list)
    touched: dict[str, None] = field(default_factory=dict)
    """The notebooks of the turn going on, in the order it touched them."""
    current: str | None = None
    """The notebook the session named last (for tools that name none)."""
    calls: int = 0
    quiet: bool = False
    """The turn's notebooks were told it ended for its silence, and nothing of it came since."""
    wait: Wait | None = None
    """A tool call waiting for the person's approval."""


class HookSessions:
    """The sessions heard of, and what each event of theirs means for their notebooks."""

    def __init__(
        self,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle: float = IDLE_SECONDS,
        silence: float = SILENCE_SECONDS,
    ) -> None:
        self.max_sessions = max(1, max_sessions)
        self.idle = idle
        self.silence = silence
        self._sessions: dict[tuple[str, str], _Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def feed(self, event: HookEvent) -> list[Delivery]:
        """The entries ``event`` gives to notebooks (none while the session has not touched
        one), after updating its session."""
        forgotten = self._forget_idle(event.at)
        key = (event.agent, event.session)
        session = self._sessions.pop(key, None) or _Session(event.agent, event.at)
        session.heard = max(session.heard, event.at)
        self._sessions[key] = session  # the most recently heard from last
        while len(self._sessions) > self.max_sessions:
            forgotten += self._forget(next(iter(self._sessions)), event.at)
        if event.kind in WAITS:
            self._wait(session, event)
            return forgotten
        session.wait = None  # any other event: the agent went on, stopped, or is at its prompt
        if event.kind in ("denied", "idle"):
            return forgotten
        if event.kind == "prompt":
            delivered = self._end_turn(session, event, aborted=True)
            session.asks = [*session.asks, event.text][-MAX_ASKS:]
        elif event.kind == "tool":
            delivered = self._tool(session, event)
        elif event.kind == "stop":
            delivered = self._end_turn(session, event, aborted=False)
        else:
            delivered = self._end_turn(session, event, aborted=True)  # "end": the session is over
            del self._sessions[key]
        return forgotten + delivered

    def quiet(self, now: float) -> list[Delivery]:
        """End, in their notebooks, the turns that heard nothing for :attr:`silence` seconds
        by ``now``: an ``aborted`` outcome with :data:`NO_STOP`, once per silence."""
        delivered: list[Delivery] = []
        for session in self._sessions.values():
            if now - session.heard >= self.silence and session.wait is None:
                delivered += _silenced(session, now)
        return delivered

    def waits(self) -> list[Wait]:
        """The tool calls waiting for the person's approval, one per session at most."""
        return [session.wait for session in self._sessions.values() if session.wait is not None]

    def _wait(self, session: _Session, event: HookEvent) -> None:
        """An ``approval`` (the call itself) or a ``permission`` notification: the latter only
        when the session has no call waiting already (it tells less, and comes later)."""
        precise = event.kind == "approval"
        if not precise and session.wait is not None:
            return
        if event.notebook is not None:
            session.current = event.notebook
        notebook = event.notebook or session.current
        session.wait = Wait(
            event.agent, event.session, event.text, event.at, notebook, event.cwd, precise
        )

    def _tool(self, session: _Session, event: HookEvent) -> list[Delivery]:
        if event.notebook is not None:
            session.current = event.notebook
        target = event.notebook or (session.current if event.touch else None)
        edited, ran = int(event.touch == "edit"), int(event.touch == "run")
        call = _call_entries(event)
        went_on = _went_on(session, event)
        delivered: list[Delivery] = []
        first = event.touch is not None and target is not None and target not in session.touched
        if first and target is not None:
            entries: list[OutsideEntry] = []  # past the bounds, only the touch is noted
            if len(session.touched) < MAX_NOTEBOOKS and session.calls < MAX_CALLS:
                session.touched[target] = None
                asks = [_entry("user", ask) for ask in session.asks]
                entries = [*asks, _entry("event", _intro(event.agent)), *call]
            delivered.append(Delivery(target, event.agent, event.at, entries, edited, ran))
        sending = session.calls < MAX_CALLS
        for notebook in session.touched:
            if first and notebook == target:
                continue
            mine = notebook == target
            entries = [*went_on, *call] if sending else list(went_on)
            if entries or (mine and event.touch):
                touched = (edited, ran) if mine else (0, 0)
                delivered.append(Delivery(notebook, event.agent, event.at, entries, *touched))
        if sending and session.touched:
            session.calls += 1
        return delivered

    def _end_turn(self, session: _Session, event: HookEvent, *, aborted: bool) -> list[Delivery]:
        """The turn's end in the notebooks it touched (none: its asks stay held)."""
        if not session.touched:
            return []
        if aborted and session.quiet:
            # Its notebooks were told at its silence; a second "aborted" would say nothing new.
            session.asks, session.touched, session.calls, session.quiet = [], {}, 0, False
            return []
        if aborted:
            entries = [_entry("outcome", "aborted")]
        else:
            entries = _went_on(session, event)
            if event.text:
                entries.append(_entry("assistant", event.text))
            if event.error:
                entries.append(_entry("outcome", "errored", error=event.error))
            else:
                entries.append(_entry("outcome", "ok"))
        delivered = [
            Delivery(notebook, event.agent, event.at, list(entries)) for notebook in session.touched
        ]
        session.asks, session.touched, session.calls, session.quiet = [], {}, 0, False
        return delivered

    def _forget_idle(self, now: float) -> list[Delivery]:
        forgotten: list[Delivery] = []
        for key in [k for k, s in self._sessions.items() if now - s.heard > self.idle]:
            forgotten += self._forget(key, now)
        return forgotten

    def _forget(self, key: tuple[str, str], now: float) -> list[Delivery]:
        """Drop a session; a turn of it still going on in its notebooks ends there (nothing
        would ever end it: a later event of the session starts afresh)."""
        return _silenced(self._sessions.pop(key), now)


def _silenced(session: _Session, now: float) -> list[Delivery]:
    """The end, for its silence, of ``session``'s turn in the notebooks it touched: none when
    it touched none or they were told already."""
    if not session.touched or session.quiet:
        return []
    session.quiet = True
    return [
        Delivery(notebook, session.agent, now, [_entry("outcome", "aborted", error=NO_STOP)])
        for notebook in session.touched
    ]


def _call_entries(event: HookEvent) -> list[OutsideEntry]:
    name = event.tool or "tool"
    result = event.output or ("failed" if event.error else "ok")
    return [
        {"kind": "tool_call", "text": event.text, "name": name, "error": None},
        {"kind": "tool_result", "text": result, "name": name, "error": event.error},
    ]


def _intro(agent: str) -> str:
    """Who took the asks before it (a recap's context starts at the first ask: an entry
    before it would not be seen)."""
    return f"Asked of {agent}, which worked on this notebook from outside its kernel."


def _went_on(session: _Session, event: HookEvent) -> list[OutsideEntry]:
    """An ``event`` for the notebooks the silence told the turn ended, when it goes on after all
    (a tool that ran longer than the silence, a late stop); none otherwise."""
    if not session.quiet:
        return []
    session.quiet = False
    text = f"{event.agent} went on after a silence: the turn had not been interrupted."
    return [_entry("event", text)]


def _entry(kind: str, text: str, *, error: str | None = None) -> OutsideEntry:
    return {"kind": kind, "text": text, "name": None, "error": error}


def notebook_under(path: str, roots: Iterable[str]) -> str | None:
    """``path`` (a notebook's absolute path) relative to the first of ``roots`` that holds it
    (the server's root folder: as configured, and with its links resolved), ``/``-separated;
    None when it is not a notebook or no root holds it. Pure: nothing is opened or followed."""
    if not path.lower().endswith(".ipynb") or not os.path.isabs(path):
        return None
    clean = os.path.normpath(path)
    for root in roots:
        if not root or not os.path.isabs(root):
            continue
        try:
            relative = os.path.relpath(clean, os.path.normpath(root))
        except ValueError:  # another drive
            continue
        outside = relative == os.pardir or relative.startswith(os.pardir + os.sep)
        if not outside and relative != os.curdir and not os.path.isabs(relative):
            return relative.replace(os.sep, "/")
    return None
