"""Per-kernel focus, input and execution state: the server's sensor hub, without any I/O.

Browsers report, per tab (``client_id``) and notebook (``path``), whether that notebook is
focused; a kernel is focused when any (client, notebook) pair reporting for it is (the pairs and
their time-out are :mod:`.clients`). Each change of that aggregate, and each input report,
becomes an event in a per-kernel ring that the kernel reads with :meth:`FocusHub.events_since`.
Execution state and the last time a cell finished are fed in from outside (the server's IOPub
watcher).

Nothing here waits, sleeps, starts threads or knows about HTTP: the clock is injected, and the
adapter learns about new events through the ``notify`` callback (it wakes its long polls there).
The hub is not thread-safe; the server touches it only from its event loop.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..wire import CHAT_ROW_PREFIX, FeedAnswer, FeedEvent, KernelState, OutsideEntry
from .clients import Clients

HEARTBEAT_SECONDS = 15.0
"""How often a page someone looks at re-reports its notebooks (the server tells the
labextension in its capabilities): often enough that a tab gone without a word (a crash, a
machine put to sleep) counts as away within a minute, rarely enough to be a few requests a
minute against JupyterLab's own."""

HEARTBEAT_MISSES = 3
"""A tab is forgotten after this many heartbeat periods without a word."""

HEARTBEAT_TIMEOUT = HEARTBEAT_MISSES * HEARTBEAT_SECONDS
"""Silence after which a tab is forgotten (the server's tab time-out; the page beats a third
as often)."""

MAX_EVENTS = 100
"""Events kept per kernel (the protocol promises the last 100)."""

MAX_CLIENTS = 64
"""(client, notebook) pairs kept per kernel; the least recently heard from goes first."""


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a kernel's feed: ``focus`` (with ``focused``), ``input``, ``kernel``
    (with ``what``: ``restarted``, ``crashed`` or ``died``, as the server saw it), or
    ``outside`` (with ``entries`` for the kernel's record, written outside it; ``cell``
    ``latest`` puts them in the turn of the kernel's latest prompt)."""

    seq: int
    type: str
    at: float
    focused: bool | None = None
    what: str | None = None
    entries: tuple[OutsideEntry, ...] = ()
    cell: str = ""

    def to_json(self) -> FeedEvent:
        data: FeedEvent = {"seq": self.seq, "type": self.type, "at": round(self.at, 3)}
        if self.type == "focus":
            data["focused"] = self.focused
        elif self.type == "kernel":
            data["what"] = self.what
        elif self.type == "outside":
            data["entries"] = list(self.entries)
            data["cell"] = self.cell
        return data


@dataclass(frozen=True, slots=True)
class CellRun:
    """A cell the server saw finish: how long it ran and whether it raised."""

    seconds: float
    failed: bool


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What is known about one kernel right now."""

    kernel_id: str
    focused: bool | None
    """The aggregate; ``None`` until some browser has reported for this kernel."""
    banner_model_id: str | None
    execution_state: str
    idle_seconds: float | None
    """Seconds since the last cell finished (or since the kernel was first seen, when it has
    not run one); ``None`` while a cell executes."""

    def to_json(self) -> KernelState:
        return {
            "kernel_id": self.kernel_id,
            "focused": self.focused,
            "banner_model_id": self.banner_model_id,
            "execution_state": self.execution_state,
            "idle_seconds": _round(self.idle_seconds),
        }


@dataclass(frozen=True, slots=True)
class Feed:
    """The answer to :meth:`FocusHub.events_since`."""

    seq: int
    events: tuple[Event, ...]
    snapshot: Snapshot
    restarted: bool
    """``since`` was ahead of this server's ``seq``: the server restarted, start over at ``seq``."""

    def to_json(self) -> FeedAnswer:
        return {
            "seq": self.seq,
            "events": [event.to_json() for event in self.events],
            "focused": self.snapshot.focused,
            "focus_supported": self.snapshot.focused is not None,
            "execution_state": self.snapshot.execution_state,
            "idle_seconds": _round(self.snapshot.idle_seconds),
        }


@dataclass(slots=True)
class _Kernel:
    first_seen: float
    events: deque[Event]
    clients: Clients
    """The tabs reporting the kernel's focus, and the aggregate focus they make."""
    seq: int = 0
    banner_model_id: str | None = None
    execution_state: str = "unknown"
    last_finished: float | None = None
    busy_since: float | None = None
    failed: bool = False
    """The cell running now raised (an IOPub ``error`` answering it)."""


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class FocusHub:
    """Focus, input, banner and execution state for every kernel the server reported on.

    State exists only for kernels the adapter has fed (it checks that they run first) and is
    dropped with :meth:`forget`; reading an unknown kernel never creates state.
    """

    def __init__(
        self,
        *,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
        max_clients: int = MAX_CLIENTS,
        max_events: int = MAX_EVENTS,
        clock: Callable[[], float] = time.time,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.heartbeat_timeout = heartbeat_timeout
        self.max_clients = max(1, max_clients)
        self.max_events = max(1, max_events)
        self._clock = clock
        self._notify = notify
        self._kernels: dict[str, _Kernel] = {}
        self._recapped: set[str] = set()
        """Kernels whose jupyter_recap polled their feed: pages keep reporting their focus."""

    # -- inputs ------------------------------------------------------------------------------

    def report(self, kernel_id: str, client_id: str, path: str, focused: bool) -> bool:
        """One notebook's focus in one tab (also its heartbeat); True if the aggregate changed."""
        now = self._clock()
        kernel = self._kernel(kernel_id, now)
        kernel.clients.heard(client_id, path, focused, now)
        kernel.clients.expire(now - self.heartbeat_timeout)
        return self._refocus(kernel_id, kernel, now)

    def input(self, kernel_id: str, client_id: str | None = None) -> Event:
        """The person typed in this kernel's notebook; it also proves the tab is alive."""
        now = self._clock()
        kernel = self._kernel(kernel_id, now)
        if client_id is not None:
            kernel.clients.alive(client_id, now)
        return self._append(kernel_id, kernel, "input", now)

    def set_banner(self, kernel_id: str, model_id: str | None) -> None:
        """The kernel's banner widget model (``None`` clears it)."""
        self._kernel(kernel_id, self._clock()).banner_model_id = model_id

    def set_execution(self, kernel_id: str, state: str) -> CellRun | None:
        """The kernel's execution state; leaving ``busy`` records when the cell finished.

        Returns the cell that finished with this change (how long it ran, whether it failed).
        """
        now = self._clock()
        kernel = self._kernel(kernel_id, now)
        finished = None
        if kernel.execution_state == "busy" and state != "busy":
            kernel.last_finished = now
            started = kernel.busy_since if kernel.busy_since is not None else now
            finished = CellRun(max(0.0, now - started), kernel.failed)
        if state == "busy" and kernel.execution_state != "busy":
            kernel.busy_since, kernel.failed = now, False
        kernel.execution_state = state
        return finished

    def cell_failed(self, kernel_id: str) -> None:
        """The cell running now raised an error."""
        kernel = self._kernels.get(kernel_id)
        if kernel is not None and kernel.execution_state == "busy":
            kernel.failed = True

    def kernel_event(self, kernel_id: str, what: str) -> Event:
        """The server saw the kernel restart or die; its next process reads this in the feed."""
        now = self._clock()
        return self._append(kernel_id, self._kernel(kernel_id, now), "kernel", now, what=what)

    def outside(
        self, kernel_id: str, entries: list[OutsideEntry], *, latest_cell: bool = False
    ) -> Event | None:
        """Entries for the kernel's record, written outside it (no feed is started for a
        kernel the hub does not know). ``latest_cell``: they belong to the turn of the kernel's
        latest prompt (a persona's tool calls answering its ``%%ai`` cell)."""
        kernel = self._kernels.get(kernel_id)
        if kernel is None or not entries:
            return None
        cell = "latest" if latest_cell else ""
        return self._append(
            kernel_id, kernel, "outside", self._clock(), entries=tuple(entries), cell=cell
        )

    def expire(self, now: float | None = None) -> list[str]:
        """Forget clients silent for longer than ``heartbeat_timeout``; kernels that flipped."""
        now = self._clock() if now is None else now
        limit = now - self.heartbeat_timeout
        return [
            kernel_id
            for kernel_id, kernel in list(self._kernels.items())
            if kernel.clients.expire(limit) and self._refocus(kernel_id, kernel, now)
        ]

    def feed_polled(self, kernel_id: str) -> bool:
        """The kernel's extension asked for its feed; True the first time (it is news to the
        pages, which report focus only for such kernels once they know of them)."""
        if kernel_id in self._recapped:
            return False
        self._recapped.add(kernel_id)
        return True

    def forget(self, kernel_id: str) -> None:
        """Drop everything about a kernel that was shut down or culled."""
        self._recapped.discard(kernel_id)
        if self._kernels.pop(kernel_id, None) is not None and self._notify is not None:
            self._notify(kernel_id)  # wakes its long polls, which then find it gone

    # -- reads -------------------------------------------------------------------------------

    def kernel_ids(self) -> set[str]:
        """Kernels with state (or known to run jupyter_recap)."""
        return set(self._kernels) | self._recapped

    def chat_paths(self) -> list[str]:
        """The chats pages report focus for (their paths)."""
        prefix = CHAT_ROW_PREFIX
        return [key[len(prefix) :] for key in self._kernels if key.startswith(prefix)]

    def forget_silent_chats(self) -> None:
        """Drop chats no tab reports any more (a chat has no kernel whose end would do it)."""
        for key in [k for k, kernel in self._kernels.items() if k.startswith(CHAT_ROW_PREFIX)]:
            if not self._kernels[key].clients:
                del self._kernels[key]

    def has_kernel(self, kernel_id: str) -> bool:
        return kernel_id in self._kernels

    def recapped(self, kernel_id: str) -> bool:
        """Whether jupyter_recap runs in the kernel (it polled its feed since it was seen)."""
        return kernel_id in self._recapped

    def focused(self, kernel_id: str) -> bool | None:
        kernel = self._kernels.get(kernel_id)
        return None if kernel is None else kernel.clients.focused

    def execution_state(self, kernel_id: str) -> str:
        kernel = self._kernels.get(kernel_id)
        return "unknown" if kernel is None else kernel.execution_state

    def seq(self, kernel_id: str) -> int:
        kernel = self._kernels.get(kernel_id)
        return 0 if kernel is None else kernel.seq

    def snapshot(self, kernel_id: str) -> Snapshot:
        """The kernel's current state (defaults for a kernel without state)."""
        kernel = self._kernels.get(kernel_id)
        if kernel is None:
            return Snapshot(kernel_id, None, None, "unknown", None)
        now = self._clock()
        if kernel.clients.expire(now - self.heartbeat_timeout):
            self._refocus(kernel_id, kernel, now)
        idle: float | None = None
        if kernel.execution_state != "busy":
            since = kernel.first_seen if kernel.last_finished is None else kernel.last_finished
            idle = max(0.0, now - since)
        return Snapshot(
            kernel_id, kernel.clients.focused, kernel.banner_model_id, kernel.execution_state, idle
        )

    def events_since(self, kernel_id: str, since: int) -> Feed:
        """Events newer than ``since``, with the kernel's current state.

        A ``since`` ahead of the kernel's ``seq`` means the caller knew an earlier server
        process: it gets no events, ``restarted=True`` and the ``seq`` to continue from.
        """
        snapshot = self.snapshot(kernel_id)  # first: it may expire clients and add an event
        kernel = self._kernels.get(kernel_id)
        seq = 0 if kernel is None else kernel.seq
        if since > seq:
            return Feed(seq, (), snapshot, restarted=True)
        events: Iterable[Event] = () if kernel is None else kernel.events
        return Feed(seq, tuple(e for e in events if e.seq > since), snapshot, restarted=False)

    # -- internals ---------------------------------------------------------------------------

    def _kernel(self, kernel_id: str, now: float) -> _Kernel:
        kernel = self._kernels.get(kernel_id)
        if kernel is None:
            events: deque[Event] = deque(maxlen=self.max_events)
            kernel = self._kernels[kernel_id] = _Kernel(now, events, Clients(self.max_clients))
        return kernel

    def _refocus(self, kernel_id: str, kernel: _Kernel, now: float) -> bool:
        """Each change of the kernel's aggregate focus is an event; True when it changed."""
        if not kernel.clients.refocus():
            return False
        self._append(kernel_id, kernel, "focus", now, focused=kernel.clients.focused)
        return True

    def _append(
        self,
        kernel_id: str,
        kernel: _Kernel,
        kind: str,
        now: float,
        *,
        focused: bool | None = None,
        what: str | None = None,
        entries: tuple[OutsideEntry, ...] = (),
        cell: str = "",
    ) -> Event:
        kernel.seq += 1
        event = Event(kernel.seq, kind, now, focused, what, entries, cell)
        kernel.events.append(event)  # the deque's maxlen keeps only the last max_events
        if self._notify is not None:
            self._notify(kernel_id)
        return event
