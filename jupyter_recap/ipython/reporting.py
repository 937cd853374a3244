"""The kernel and the server's agents panel: the focus feed in, the agent report out.

:class:`AgentReporting` starts the kernel's clients of the server (:class:`~.feed.FocusFeed` and
:class:`~.reporter.StateReporter`, used as they are) when a server with the extension started
this kernel. What the feed hears (focus, typing elsewhere) goes to the callbacks it is given;
kernel restarts and deaths go into the transcript, once each. What this kernel tells the panel
is :meth:`report`, sent again whenever :meth:`changed` is called.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..debuglog import get_logger
from ..record.transcript import Entry, Transcript, add_outside_entry
from .worker import Worker

if TYPE_CHECKING:
    # The feed (and http.client under it) loads on the worker thread that starts it.
    from ..focus.report import CellCounts
    from ..stores.workstate import WorkState
    from ..wire import AgentReport
    from .feed import FocusFeed
    from .reporter import StateReporter

MAX_OUTSIDE_ENTRIES = 32
"""Entries of one ``outside`` event written (a tool call is two)."""

READY_WAIT = 3.0
"""Seconds :meth:`AgentReporting.when_ready` waits at most for the server's first answer (a
server that is slow or unreachable must not hold a resume recap up for long)."""


class AgentReporting:
    """The focus feed and the state reporter of one kernel; :meth:`stop` ends both."""

    def __init__(
        self,
        shell: Any,
        transcript: Transcript,
        cells: CellCounts,
        state: WorkState,
        *,
        focus: Callable[[bool, float], None],
        typed: Callable[[], None],
        shown: Callable[[], dict[str, Any] | None],
        drafting: Callable[[], bool],
        outside: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
        worker: Worker | None = None,
    ) -> None:
        self.shell = shell
        self.transcript = transcript
        self.cells = cells
        self.state = state
        self._focus = focus
        """The browser reports whether the person looks at this notebook (and since when)."""
        self._typed = typed
        """The person typed in this notebook (reported by the browser): they are here."""
        self._shown = shown
        """The latest recap shown (``text``, ``model``, ``at``, ``turns``), or None."""
        self._drafting = drafting
        """Whether a recap is on its way (a draft runs, or the post-turn one is due)."""
        self._offline: tuple[tuple[int, int], dict[str, Any] | None] | None = None
        """(transcript revision and finished turns, the offline recap of that transcript)."""
        self._outside = outside if outside is not None else contextlib.nullcontext
        """Marks the entries written while it is open as written outside the kernel (a turn
        they start is an outside agent's: it never holds up ``%recap``)."""
        self._worker = worker
        """Where the reports are sent from (the extension's shared worker thread)."""
        self._banner: str | None = None
        """The banner widget's model id, once the kernel made one (the server is told)."""
        self.feed: FocusFeed | None = None
        self.reporter: StateReporter | None = None
        """Tells the server's agents panel about this kernel (with the feed, in a kernel)."""
        self._unsubscribe_report: Callable[[], None] | None = None
        self._kernel_events: set[float] = set()
        """When the server's restart/death events happened that the transcript already has."""
        self.feed_problem: str | None = None
        """Why a server that started this kernel gets no focus feed from it, if that is so."""
        self._lock = threading.Lock()
        """Held while the feed starts and while it stops: a stop that races a start still
        stops all it started."""
        self._stopped = False
        self._ready = False
        """The server's first answer was taken in, or none will come (see :meth:`when_ready`)."""
        self._waiting: list[Callable[[], None]] = []
        self._ready_lock = threading.Lock()

    def seed(self, entries: Iterable[Entry]) -> None:
        """Note the kernel events a restored transcript already has (they are not added again)."""
        self._kernel_events = {e.time for e in entries if e.kind == "event" and e.name == "kernel"}

    def start(self) -> None:
        """Listen to the server's focus feed, when a server with the extension started us.

        With a worker, the feed starts on its thread (``%load_ext`` does not wait for the
        feed's module, the server lookup and the threads); :meth:`stop` stops it all the same.
        """
        if self._worker is None:
            self._start()
        else:
            self._worker.call_soon(self._start)

    def _start(self) -> None:
        with self._lock:
            if self._stopped or self.feed is not None:
                return
            self._start_feed()
            if self.feed is None:  # no server of ours started this kernel: nothing to wait for
                self._set_ready()

    def when_ready(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the server's first answer was taken in: at once when that happened
        already or no feed will start, and at the latest after :data:`READY_WAIT` seconds.

        A resume recap waits for this: in a restarted kernel the first answer brings the
        restart itself (written into the transcript) and whether the person looks at the
        notebook, and a draft started before it would be stale the moment it lands.
        """
        with self._ready_lock:
            if not self._ready:
                self._waiting.append(fn)
                if self._worker is not None:
                    self._worker.call_later(READY_WAIT, self._set_ready)
                return
        if not self._stopped:
            fn()

    def _set_ready(self) -> None:
        with self._ready_lock:
            self._ready = True
            waiting, self._waiting = self._waiting, []
        if not self._stopped:
            for fn in waiting:
                fn()

    def _start_feed(self) -> None:
        from .feed import FocusFeed
        from .link import find_server, kernel_id_from_connection_file
        from .reporter import StateReporter

        server = find_server(os.environ)
        if server is None:
            return
        try:
            from ipykernel.connect import get_connection_file

            kernel_id = kernel_id_from_connection_file(get_connection_file())
        except Exception:  # noqa: BLE001 - not an ipykernel we can identify: no feed
            kernel_id = None
        if kernel_id is None:
            return
        # The kernel proves to the server which kernel it is with its connection key.
        session = getattr(getattr(self.shell, "kernel", None), "session", None)
        key = getattr(session, "key", b"")
        key = key.encode() if isinstance(key, str) else key
        if not isinstance(key, bytes) or not key:
            self.feed_problem = (
                "this kernel's connection key is empty, so it cannot prove to the server which "
                "kernel it is (the idle fallback stays in charge)"
            )
            get_logger().info("no focus feed: %s", self.feed_problem)
            return
        self.feed = FocusFeed(
            server,
            kernel_id,
            on_focus=self._focus,
            on_input=self._typed,
            on_kernel=self.kernel_event,
            on_outside=self.outside_entries,
            on_ready=self._set_ready,
            key=key,
        )
        self.feed.start()
        reporter = StateReporter(self.feed.routes, self.report, worker=self._worker)
        self.reporter = reporter
        if self._banner is not None:
            reporter.banner(self._banner)

        def on_entry(transcript: Transcript, entry: Entry) -> None:
            # A turn's start and end are what the panel is for: they go out at once.
            reporter.poke(urgent=entry.kind in ("user", "outcome"))

        self._unsubscribe_report = self.transcript.subscribe(
            on_entry, kinds=("user", "assistant", "tool_call", "tool_result", "outcome", "code")
        )
        reporter.start()

    def banner_created(self, model_id: str) -> None:
        """The kernel made its banner widget (with its first recap, not at load): the server
        learns its model id, so that the labextension can mount it above the active cell."""
        self._banner = model_id
        if self.reporter is not None:
            self.reporter.banner(model_id)

    def stop(self) -> None:
        """Stop the reporter and the feed (harmless when they never started); a start not yet
        run on the worker never starts them."""
        with self._lock:
            self._stopped = True
            self._stop()
        with self._ready_lock:
            self._waiting = []

    def _stop(self) -> None:
        if self._unsubscribe_report is not None:
            self._unsubscribe_report()
            self._unsubscribe_report = None
        if self.reporter is not None:
            self.reporter.stop()
            self.reporter = None
        if self.feed is not None:
            self.feed.stop()
            self.feed = None

    def report(self) -> AgentReport:
        """This kernel's state for the server's agents panel (built on the reporter's thread)."""
        from ..focus.report import agent_report

        recap, drafting = self.current_recap()
        return agent_report(
            self.transcript,
            cells=self.cells,
            recap=recap,
            drafting=drafting,
            tasks=self.state.tasks,
        )

    def current_recap(self) -> tuple[dict[str, Any] | None, bool]:
        """The recap the panel shows for this kernel, and whether one is being drafted.

        The recap shown last, while it covers the latest finished turn. Once a newer turn has
        finished, its text would be read as the news of that turn: the panel says *drafting…*
        instead while a recap of it is on its way, else shows the offline recap of it.
        """
        shown, drafting = self._shown(), self._drafting()
        if shown is None or shown.get("turns") == self.transcript.completed_turns:
            return shown, drafting
        if drafting:
            return None, True
        return self._offline_recap(), False

    def _offline_recap(self) -> dict[str, Any] | None:
        """The offline recap of the transcript as it is now (written once per change of it)."""
        transcript = self.transcript
        key = (transcript.revision, transcript.completed_turns)
        cached = self._offline
        if cached is not None and cached[0] == key:
            return cached[1]
        # The pipeline is loaded already: a recap was shown before one can be out of date.
        from ..pipeline.offline import offline_recap

        framing = self.state.framing()
        text = offline_recap(
            transcript,
            open_task=framing.open_task,
            progress=framing.progress,
            waiting=framing.waiting,
        )
        recap = None
        if text:
            recap = {"text": text, "model": "offline", "at": time.time(), "turns": key[1]}
        self._offline = (key, recap)
        return recap

    def changed(self) -> None:
        """Something the panel shows changed: the reporter sends a new report soon."""
        if self.reporter is not None:
            self.reporter.poke()

    def outside_entries(self, entries: list[Any], latest_cell: bool) -> None:
        """Entries written outside the kernel (see :class:`~jupyter_recap.wire.OutsideEntry`),
        checked one by one; ``latest_cell`` puts them in the turn of the latest prompt."""
        cell_id = None
        if latest_cell:
            cell_id = next(
                (e.cell_id for e in reversed(self.transcript.entries) if e.kind == "user"), None
            )
        # Entries of the kernel's own turn (a persona's calls for its %%ai cell) are not an
        # outside agent's turn.
        with contextlib.nullcontext() if latest_cell else self._outside():
            for entry in entries[:MAX_OUTSIDE_ENTRIES]:
                if not add_outside_entry(self.transcript, entry, cell_id=cell_id):
                    get_logger().info("an entry written outside the kernel was left out")

    def kernel_event(self, what: str, at: float) -> None:
        """The server saw this kernel restart or die: a recap should know (recorded once)."""
        if at in self._kernel_events:
            return
        self._kernel_events.add(at)
        when = time.strftime("%H:%M", time.localtime(at))
        text = {
            "restarted": f"The kernel was restarted at {when}; its variables were lost.",
            "crashed": f"The kernel died and was restarted at {when}; its variables were lost.",
            "died": f"The kernel died at {when}.",
        }.get(what)
        if text is not None:
            self.transcript.append(Entry("event", text, at, name="kernel"))
