"""The IPython extension: one :class:`RecapExtension` per shell, wiring the core to the kernel."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..capture.manager import Capture
from ..capture.runs import RunHub
from ..debuglog import get_logger
from ..errors import RecapError, UnsafeStoreError
from ..focus.report import agent_report, recap_links
from ..pipeline.service import RecapResult, RecapStats, WrittenRecap
from ..record.transcript import Entry, Transcript, current
from ..schedule import ShowRecap, StartDraft
from ..settings import Recap
from ..stores.sessionfiles import AppendFile
from ..stores.sessions import SessionInUse, SessionRecord, SessionStore, SessionWriter
from ..stores.tasks import Task, TaskList, progress_counts, progress_line
from ..stores.usage import UsageLedger
from ..stores.workstate import current_state
from ..textutil import printable
from ..wire import AgentReport
from .feed import FocusFeed, StateReporter, find_server, kernel_id_from_connection_file
from .recorder import Recorder
from .triggers import Surface, TriggerRunner

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..pipeline.preview import RequestPreview

_instances: dict[int, RecapExtension] = {}
_instances_lock = threading.Lock()
# The stored session the live transcript (``current()``) belongs to, across unload/reload.
_live_session: str | None = None


class RecapExtension:
    """Everything the extension adds to one shell, and how to take it all away again."""

    def __init__(self, shell: InteractiveShell, transcript: Transcript | None = None) -> None:
        from .magics import RecapMagics
        from .statemagics import WorkStateMagics

        self.shell = shell
        self.settings = Recap(parent=shell)
        self.transcript = transcript if transcript is not None else current()
        self.state = current_state()
        """The task list and project memory (shared with ``jupyter_recap.todo_write`` & co)."""
        self.stats = RecapStats()
        self.last_recap: WrittenRecap | None = None
        self.last_result: RecapResult | None = None
        self.focus_source = "none"
        """Where focus reports come from; "none" means the idle fallback is in charge."""
        self.hub = RunHub(lambda: self.transcript, on_start=self._run_started)
        """Agent runs captured from plain cells become turns through this."""
        self.capture = Capture(self.hub)
        self.recorder = Recorder(shell, self.transcript, self.settings, self.hub)
        self.recorder.ai_lines = lambda: self.capture.source("jupyter-ai") is not None
        self.magics = [RecapMagics(shell, extension=self), WorkStateMagics(shell, extension=self)]
        self.runner = TriggerRunner(
            self.transcript,
            self.settings,
            self.stats,
            Surface(
                show=self._show,
                clear=self._clear,
                drafting=self._drafting,
                changed=self._state_changed,
            ),
            framing=self.state.framing,
        )
        self.usage = UsageLedger()
        """The person's usage ledger in the session store, shared by every kernel."""
        self.runner.usage = self.usage
        self._unsubscribe_tasks: Callable[[], None] | None = None
        self._banner: Any = None
        self._banner_displayed = False
        """Whether the banner has an output in the notebook, which updates can then reach."""
        self._outputs_lock = threading.Lock()
        """Orders a new banner output against the updates sent from a draft's thread."""
        self._manual_output: tuple[int, str] | None = None
        """The ``%recap`` draft in flight and the display id of its own cell's output, which
        takes that draft's recap and no later one."""
        self.feed: FocusFeed | None = None
        self.reporter: StateReporter | None = None
        """Tells the server's agents panel about this kernel (with the feed, in a kernel)."""
        self._unsubscribe_report: Callable[[], None] | None = None
        self._shown: dict[str, Any] | None = None
        """The latest recap shown (``text``, ``model``, ``at``), for the agents panel."""
        self._kernel_events: set[float] = set()
        """When the server's restart/death events happened that the transcript already has."""
        self.writer: SessionWriter | None = None
        self.feed_problem: str | None = None
        """Why a server that started this kernel gets no focus feed from it, if that is so."""
        self.store_problem: str | None = None
        """Why the session store was refused at load (someone else could write it), if it was."""

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def _configurables(self) -> list[Any]:
        """What ``%config`` can reach. IPython annotates the list as holding shells only; any
        Configurable belongs there."""
        configurables: list[Any] = self.shell.configurables
        return configurables

    def attach(self) -> None:
        """Register the configurable, the hooks, the magics, the timer and the banner."""
        configurables = self._configurables
        if self.settings not in configurables:
            configurables.append(self.settings)
        self.recorder.events.on_input.append(self.runner.user_input)
        self.recorder.events.on_cell_end.append(self.runner.cell_ended)
        self.recorder.attach()
        self.capture.start(self.settings.capture)
        self.settings.observe(self._on_capture_setting, names=["capture"])
        for magics in self.magics:
            self.shell.register_magics(magics)
        self.state.memory_enabled = bool(self.settings.memory)
        self.settings.observe(self._on_memory_setting, names=["memory"])
        self._unsubscribe_tasks = self.state.subscribe(self._on_tasks)
        self.runner.start()
        atexit.register(self.runner.stop)
        resumed = self._attach_session()
        entries = self.transcript.entries
        self.recorder.cells.seed(entries)
        self._kernel_events = {e.time for e in entries if e.kind == "event" and e.name == "kernel"}
        if self.has_widgets:
            # Displayed now, empty and collapsed, so that an automatic recap can appear later
            # without any cell being run (the labextension shows it above the active cell).
            self._display_banner()
            self._start_feed()
        if resumed and self.settings.auto:
            self.resume()

    def detach(self) -> None:
        """Undo :meth:`attach`: stop the timer, clear and close the banner.

        Also undoes an attach that failed half-way: each step is harmless when its part was
        never set up.
        """
        atexit.unregister(self.runner.stop)
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self._unsubscribe_report is not None:
            self._unsubscribe_report()
            self._unsubscribe_report = None
        if self.reporter is not None:
            self.reporter.stop()
            self.reporter = None
        if self.feed is not None:
            self.feed.stop()
            self.feed = None
        self.runner.stop()
        self.capture.stop()
        with contextlib.suppress(ValueError):  # never observed: attach failed before it
            self.settings.unobserve(self._on_capture_setting, names=["capture"])
        self.recorder.detach()
        if self._unsubscribe_tasks is not None:
            self._unsubscribe_tasks()
            self._unsubscribe_tasks = None
        with contextlib.suppress(ValueError):  # never observed: attach failed before it
            self.settings.unobserve(self._on_memory_setting, names=["memory"])
        manager = self.shell.magics_manager
        for magics in self.magics:
            for name in magics.magics.get("line", {}):
                manager.magics["line"].pop(name, None)
            manager.registry.pop(type(magics).__name__, None)
        configurables = self._configurables
        for configurable in (self.settings, *self.magics):
            while configurable in configurables:
                configurables.remove(configurable)
        if self._banner is not None:
            self._banner.close()
            self._banner = None
            self._banner_displayed = False

    # -- inputs from outside the kernel's cells ----------------------------------------------

    @property
    def schedule(self) -> Any:
        """The trigger schedule (its state is what ``%recap status`` shows)."""
        return self.runner.schedule

    def report_focus(self, focused: bool, *, at: float | None = None, source: str = "api") -> None:
        """Whether the person is looking at this notebook (``at``: UNIX time of the change)."""
        self.focus_source = source
        when = None if at is None else time.monotonic() - max(0.0, time.time() - at)
        self.runner.feed(self.schedule.focus, bool(focused), when)

    # -- session records -------------------------------------------------------------------

    @property
    def notebook(self) -> str | None:
        """The notebook this kernel serves (its absolute path, as the server hands it over)."""
        return os.environ.get("JPY_SESSION_NAME") or None

    def _attach_session(self) -> bool:
        """Continue this notebook's stored session, or start a new one; True if resumed.

        A live transcript (the extension was reloaded) keeps its session. An empty one takes
        the notebook's latest stored session with turns, so a kernel restart keeps the story —
        unless another live kernel holds that session (two kernels on one notebook): each
        kernel then writes a session of its own, and ``%recap resume`` can still bring the
        other's story in.
        """
        store = SessionStore()
        try:
            store.exists()
        except UnsafeStoreError as error:
            # Nothing in it is read: planted sessions, tasks or notes must not reach a recap
            # or an agent's prompt. Recaps go on from the live transcript.
            self.store_problem = str(error)
            print(f"jupyter_recap: not using stored sessions: {error}", file=sys.stderr)
            self._start_writer(store, None, None)
            return False
        record: SessionRecord | None = None
        file: AppendFile | None = None
        resumed = False
        try:
            if len(self.transcript) and _live_session is not None:
                record = store.header(_live_session)
                file = store.claim_if_writable(record.id) if record is not None else None
            elif not len(self.transcript) and self.notebook:
                latest = store.latest_for(self.notebook)
                if latest is not None:
                    file = store.claim_if_writable(latest.id)
                    record, stored = store.load(latest.id)
                    self.transcript.restore(stored.entries)
                    self.state.restore_tasks(record.tasks)
                    resumed = True
        except SessionInUse as error:
            get_logger().info("sessions: %s; this kernel starts its own session", error)
            record = None
        except RecapError as error:
            get_logger().warning("sessions: could not resume: %s", error)
            if file is not None:
                file.close()
            record, file, resumed = None, None, False
        self._start_writer(store, record, file)
        return resumed

    def _start_writer(
        self,
        store: SessionStore,
        record: SessionRecord | None,
        file: AppendFile | None,
        *,
        parent: str | None = None,
    ) -> None:
        global _live_session
        self.writer = SessionWriter(
            self.transcript,
            store=store,
            record=record,
            file=file,
            notebook=self.notebook,
            parent=parent,
        )
        tasks = TaskList(self.state.tasks).to_list()
        if self.writer.record.tasks != tasks:  # e.g. a list written before the extension loaded
            self.writer.set_tasks(tasks)
        _live_session = self.writer.id
        self.stats.on_tokens = self.writer.add_tokens

    def resume_session(self, id_or_prefix: str) -> SessionRecord:
        """``%recap resume ID``: make that stored session this notebook's live one.

        When another live kernel holds it, its story continues here as a new session of this
        kernel's (its ``parent`` names the original), so the two never write into one file.
        """
        store = SessionStore()
        record, stored = store.load(id_or_prefix)  # StoreError for a bad or unknown id
        if self.writer is not None:
            self.writer.close()  # releases our own session, which may be the one asked for
            self.writer = None  # the restored task list belongs to the new record only
        self.runner.feed(self.schedule.user_input)  # a new story: drop what was in flight
        self.transcript.restore(stored.entries)
        self.state.restore_tasks(record.tasks)
        try:
            file = store.claim_if_writable(record.id)
        except SessionInUse:
            self._start_writer(store, None, None, parent=record.id)
        else:
            self._start_writer(store, record, file)
        return record

    def _start_feed(self) -> None:
        """Listen to the server's focus feed, when a server with the extension started us."""
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
            on_focus=lambda focused, at: self.report_focus(focused, at=at, source="browser"),
            on_input=self._typed_elsewhere,
            on_kernel=self._kernel_event,
            banner_model_id=self.banner.model_id,
            key=key,
        )
        self.feed.start()
        self.reporter = StateReporter(self.feed.routes, self._agent_report)
        reporter = self.reporter

        def on_entry(transcript: Transcript, entry: Entry) -> None:
            # A turn's start and end are what the panel is for: they go out at once.
            reporter.poke(urgent=entry.kind in ("user", "outcome"))

        self._unsubscribe_report = self.transcript.subscribe(
            on_entry, kinds=("user", "assistant", "tool_call", "tool_result", "outcome", "code")
        )
        self.reporter.start()

    def _typed_elsewhere(self) -> None:
        """The person typed in this notebook (reported by the browser): they are here."""
        self.runner.feed(self.schedule.user_input)

    def _agent_report(self) -> AgentReport:
        """This kernel's state for the server's agents panel (built on the reporter's thread)."""
        return agent_report(
            self.transcript,
            cells=self.recorder.cells,
            recap=self._shown,
            drafting=self.schedule.in_flight is not None,
            tasks=self.state.tasks,
        )

    def _state_changed(self) -> None:
        if self.reporter is not None:
            self.reporter.poke()

    def _kernel_event(self, what: str, at: float) -> None:
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

    def resume(self) -> None:
        """This notebook's previous session was loaded: draft a recap of where it stopped."""
        self.runner.feed(self.schedule.resume)

    # -- the banner ------------------------------------------------------------------------

    @property
    def has_widgets(self) -> bool:
        """True in a kernel (a frontend can render widgets), False in terminal IPython."""
        return getattr(self.shell, "kernel", None) is not None

    @property
    def banner(self) -> Any:
        """The kernel's one banner widget, created on first use."""
        if self._banner is None:
            from ..widget.banner import RecapBanner

            self._banner = RecapBanner()
            self._banner.observe(self._on_dismissed, names=["dismissed"])
        return self._banner

    def _display_banner(self) -> None:
        """Give the banner its live output in the running cell, under its one display id."""
        from IPython.display import display

        banner = self.banner
        # Under the lock a draft's thread sends its update either before this output's text is
        # taken (which then has the recap) or after the output exists (which it then replaces).
        with self._outputs_lock:
            display(banner, display_id=banner.display_id)
            self._banner_displayed = True

    def _display_manual_output(self, draft: StartDraft) -> None:
        """Give a ``%recap`` cell an output of its own, empty until its draft lands.

        It carries the banner's view (the page shows the live banner) but a display id of its
        own, so a saved notebook keeps in that cell the recap that cell asked for: a later
        recap never lands above an older cell's own error line.
        """
        from IPython.display import display

        banner = self.banner
        display_id = f"{banner.display_id}-recap-{draft.id}"
        with self._outputs_lock:
            self._manual_output = (draft.id, display_id)
            display(self._bundle(banner, ""), raw=True, display_id=display_id)

    @staticmethod
    def _bundle(banner: Any, text: str | None = None) -> dict[str, Any]:
        """The banner's output data, its ``text/plain`` replaced by ``text`` when given."""
        bundle = banner._repr_mimebundle_()
        data: dict[str, Any] = dict(bundle[0]) if bundle is not None else {}
        if text is not None:
            data["text/plain"] = text
        return data

    def _update_saved_text(self, draft_id: int | None = None) -> None:
        """Send the banner's new ``text/plain`` to its live output, and to the output of the
        ``%recap`` cell whose draft ``draft_id`` this recap is.

        A saved or exported notebook shows that text, computed when the output was made: without
        this, a ``%recap`` cell would stay at its first state for good. ``update_display_data``
        only replaces outputs that carry the display id (JupyterLab, nbclient), so it never adds
        an output to the cell running now; it may be sent from the draft's thread.
        """
        banner = self._banner
        if banner is None:
            return
        try:
            from IPython.display import display, update_display

            with self._outputs_lock:
                if self._banner_displayed:
                    update_display(banner, display_id=banner.display_id)
                manual = self._manual_output
                if manual is not None and manual[0] == draft_id:
                    self._manual_output = None
                    display(self._bundle(banner), raw=True, display_id=manual[1], update=True)
        except Exception:  # noqa: BLE001 - e.g. the kernel or the comm is gone at shutdown
            get_logger().debug("banner: could not update its saved text", exc_info=True)

    def _on_dismissed(self, change: Any) -> None:
        if change["new"]:
            self.runner.feed(self.schedule.banner_dismissed)

    def _show(self, action: ShowRecap) -> None:
        recap = WrittenRecap(action.text, action.model, action.reason, note=action.note)
        self.last_recap = recap
        self.transcript.recap(recap.text, model=recap.model)
        # As shown: the links' offsets must count the characters the page will see.
        text = printable(recap.text)
        self._shown = {"text": text, "model": recap.model, "at": time.time()}
        if self.has_widgets:
            note = progress_line(self.state.tasks)
            # "offline · daily budget of 100 calls reached": why no model wrote this one.
            engine = f"{recap.model} · {recap.note}" if recap.note else recap.model
            self.banner.show(
                text,
                engine,
                reason=recap.reason,
                note=note,
                links=recap_links(text, self.recorder.cells),
                stop_cell=self._agent_report()["stop_cell"],
                progress=progress_counts(self.state.tasks),
                notice=self._first_time(action),
            )
            self._update_saved_text(action.id)
        self._state_changed()

    def _first_time(self, action: ShowRecap) -> str:
        """The recap's announcement, if this person has never been shown it for this model
        (automatic recaps now go to a hosted model); marked as shown across kernels."""
        if not action.notice:
            return ""
        try:
            first = self.usage.announce_once(action.model)
        except RecapError as error:  # a refused store: announce every time rather than never
            get_logger().warning("usage: cannot keep the announcement mark (%s)", error)
            first = True
        return action.notice if first else ""

    def _on_tasks(self, tasks: tuple[Task, ...]) -> None:
        """The task list changed: save it with the session, refresh a shown banner's line."""
        if self.writer is not None:
            self.writer.set_tasks(TaskList(tasks).to_list())
        self._state_changed()
        banner = self._banner
        if banner is None:
            return
        # The comm may already be gone at shutdown.
        with contextlib.suppress(Exception):
            # The progress line is part of the saved text only while the recap shows.
            if banner.set_progress(progress_line(tasks), progress_counts(tasks)):
                self._update_saved_text()

    def _on_capture_setting(self, change: Any) -> None:
        self.capture.restart(change["new"])

    def _run_started(self) -> None:
        # A captured run writes its prompt once it knows it (often with the first model call);
        # the schedule must treat the turn as running from its very start.
        self.runner.feed(self.runner.schedule.turn_started)

    def _on_memory_setting(self, change: Any) -> None:
        self.state.memory_enabled = bool(change["new"])

    def _clear(self) -> None:
        if self._banner is not None:
            with contextlib.suppress(Exception):  # the comm may already be gone at shutdown
                self._banner.clear()

    def _drafting(self, draft: StartDraft) -> None:
        """A ``%recap`` draft is about to start: its cell gets the banner's output first, so the
        recap, however fast, updates an output that exists."""
        if self.has_widgets:
            self._display_manual_output(draft)
            self.banner.drafting(model=draft.model or "", reason=draft.reason)

    # -- manual recaps ---------------------------------------------------------------------

    def preview(self, model: str | None = None) -> RequestPreview | None:
        """``%recap --dry-run``: the request ``%recap`` would send now (the context the
        triggers built for this state of the transcript), sending nothing; ConfigError for a
        model that cannot be used."""
        from ..pipeline.preview import preview_request

        context, _ = self.runner.context()
        return preview_request(
            self.transcript,
            settings=self.settings,
            env=os.environ,
            model=model,
            framing=self.runner.framing(),
            context=context,
        )

    def manual(self, model: str | None = None) -> RecapResult:
        """``%recap``: draft now off the main thread and wait; an interrupt cancels it."""
        job, refusal = self.runner.manual(model)
        if job is None:
            result = RecapResult(None, refusal or "no draft was started")
        else:
            result = self.runner.wait(job)
        with self._outputs_lock:
            self._manual_output = None  # a failed or cancelled draft leaves its output empty
        self.last_result = result
        if result.recap is None and self.has_widgets and job is not None:
            self.banner.fail(result.reason, model=result.model or "")
        return result


def load(shell: InteractiveShell) -> RecapExtension | None:
    """Load into ``shell``; a second load returns the existing extension unchanged.

    A load that fails half-way takes back everything it registered (hooks, magics, threads,
    the banner) and says so in one line: the notebook goes on as if it had never been loaded.
    """
    with _instances_lock:
        existing = _instances.get(id(shell))
        if existing is not None:
            return existing
        extension = RecapExtension(shell)
        try:
            extension.attach()
        except Exception as error:  # noqa: BLE001 - never a traceback in the person's cell
            get_logger().exception("extension: loading failed; undoing it")
            with contextlib.suppress(Exception):
                extension.detach()
            print(
                f"jupyter_recap: could not load ({type(error).__name__}: {error}); nothing of "
                "it is active. The debug log has the details; %reload_ext jupyter_recap "
                "tries again.",
                file=sys.stderr,
            )
            return None
        _instances[id(shell)] = extension
    get_logger().info("extension loaded (%d entries in the transcript)", len(extension.transcript))
    return extension


def unload(shell: InteractiveShell) -> None:
    """Remove everything :func:`load` added to ``shell``."""
    with _instances_lock:
        extension = _instances.pop(id(shell), None)
    if extension is not None:
        extension.detach()
        get_logger().info("extension unloaded")


def extension_for(shell: InteractiveShell) -> RecapExtension | None:
    """The loaded extension of ``shell``, if any."""
    return _instances.get(id(shell))
