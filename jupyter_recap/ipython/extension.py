"""The IPython extension: one :class:`RecapExtension` per shell, wiring the core to the kernel.

The extension itself only wires. Each concern is a collaborator of its own, which learns about
the others through the callbacks it is given here:

- :class:`~.recorder.Recorder` records the shell's cells; ``Capture`` (from ``capture/``)
  records agent SDK runs from plain cells, through the run hub;
- :class:`~.drafting.Drafting` decides when to draft (the trigger runner) and runs ``%recap``;
- :class:`~.surface.BannerSurface` is where recaps appear (the banner and its outputs);
- :class:`~.session.KernelSession` keeps the stored session record;
- :class:`~.reporting.AgentReporting` talks to the server (the focus feed, the agents panel);
- :class:`~.live.LiveChanges` carries what changes while loaded (two settings, the task list);
- the magics (:mod:`.magics`, :mod:`.statemagics`) see the extension through the narrow
  Protocols of :mod:`.host`.

:meth:`RecapExtension.attach` sets them up in order and :meth:`RecapExtension.detach` undoes
them, also after an attach that failed half-way; :func:`load` and :func:`unload` are what
``%load_ext`` and ``%unload_ext`` call.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from typing import TYPE_CHECKING, Any

from ..capture.manager import Capture
from ..capture.runs import RunHub
from ..debuglog import get_logger
from ..pipeline.stats import RecapStats
from ..record.transcript import Transcript, current
from ..settings import Recap
from ..stores.workstate import current_state
from .drafting import Drafting
from .live import LiveChanges
from .magics import RecapMagics, register_free, unregister
from .recorder import Recorder
from .reporting import AgentReporting
from .session import KernelSession
from .statemagics import WorkStateMagics
from .surface import BannerSurface
from .triggers import Surface, TriggerRunner
from .worker import Worker

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..pipeline.preview import RequestPreview
    from ..pipeline.results import RecapResult, WrittenRecap
    from ..stores.sessions import SessionRecord, SessionWriter
    from ..stores.usage import UsageLedger
    from .feed import FocusFeed
    from .reporter import StateReporter

#: Seconds after the capture sources start (early in ``%load_ext``) that the worker looks for
#: capture plugins: past the end of a load, which takes tens of milliseconds.
PLUGIN_SCAN_DELAY = 0.5

_instances: dict[int, RecapExtension] = {}
_instances_lock = threading.Lock()


class RecapExtension:
    """Everything the extension adds to one shell, and how to take it all away again."""

    def __init__(self, shell: InteractiveShell, transcript: Transcript | None = None) -> None:
        self.shell = shell
        self.settings = Recap(parent=shell)
        self.worker = Worker()
        """The one thread of the extension's timers, state reports and session writes (the
        focus feed has its own, for its blocking long poll; a draft one while it runs)."""
        self.transcript = transcript if transcript is not None else current()
        self.state = current_state()
        """The task list and project memory (shared with ``jupyter_recap.todo_write`` & co)."""
        self.stats = RecapStats()
        self._usage: UsageLedger | None = None
        self._usage_lock = threading.Lock()
        self.hub = RunHub(lambda: self.transcript, on_start=lambda: self.drafting.turn_started())
        """Agent runs captured from plain cells become turns through this."""
        # The capture plugins are looked for on the worker, after the load: scanning the
        # installed distributions costs more than the whole %load_ext, and would slow it down
        # even from another thread (the GIL). A cell run before then waits for the scan.
        self.capture = Capture(
            self.hub, defer=lambda scan: self.worker.call_later(PLUGIN_SCAN_DELAY, scan)
        )
        self.recorder = Recorder(shell, self.transcript, self.settings, self.hub)
        self.recorder.ai_lines = lambda: self.capture.source("jupyter-ai") is not None
        self.magics = [RecapMagics(shell, host=self), WorkStateMagics(shell, state=self.state)]
        self.surface = BannerSurface(
            self.transcript,
            self.recorder.cells,
            lambda: self.usage,
            has_widgets=lambda: self.has_widgets,
            tasks=lambda: self.state.tasks,
            stop_cell=lambda: self.reporting.report()["stop_cell"],
            changed=lambda: self.reporting.changed(),
            dismissed=lambda: self.drafting.dismissed(),
            created=lambda model_id: self.reporting.banner_created(model_id),
            story=lambda: self.session.story_note,
            handoff=self.handoff,
        )
        self.drafting = Drafting(
            self.transcript,
            self.settings,
            self.stats,
            lambda: self.usage,
            Surface(
                show=self.surface.show,
                clear=self.surface.clear,
                drafting=self.surface.drafting,
                changed=lambda: self.reporting.changed(),
            ),
            framing=self.state.framing,
            manual_ended=self.surface.manual_ended,
            worker=self.worker,
        )
        self.session = KernelSession(
            self.transcript,
            self.state,
            self.stats,
            new_story=self.drafting.new_story,
            scheduler=self.worker,
        )
        self.reporting = AgentReporting(
            shell,
            self.transcript,
            self.recorder.cells,
            self.state,
            focus=self.drafting.browser_focus,
            typed=self.drafting.typed_elsewhere,
            shown=lambda: self.surface.shown,
            drafting=self.drafting.coming,
            outside=self.drafting.runner.outside,
            worker=self.worker,
        )
        self.live = LiveChanges(
            self.settings,
            self.capture,
            self.state,
            # A new task list is saved with the session, sent to the agents panel and shown on
            # a banner that shows one.
            [
                self.session.save_tasks,
                lambda tasks: self.reporting.changed(),
                self.surface.tasks_changed,
            ],
        )

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
        register_free(self.shell, self.magics)  # never a name IPython or another has
        self.live.attach()
        self.drafting.start()
        atexit.register(self.runner.stop)
        resumed = self.session.attach()
        entries = self.transcript.entries
        self.recorder.cells.seed(entries)
        self.reporting.seed(entries)
        if self.has_widgets:
            # An empty output now, under the banner's display id, so that an automatic recap
            # can appear later without any cell being run: the banner widget itself is made
            # when it first has something to show, and then fills this output (and the
            # labextension, told its model id, shows it above the active cell).
            self.surface.display()
            self.reporting.start()
        if resumed and self.settings.auto:
            if self.has_widgets:
                # After the server's first answer: it writes the restart into the transcript,
                # and a draft begun before that would be discarded as stale when it lands.
                self.reporting.when_ready(self.drafting.resume)
            else:
                self.drafting.resume()

    def detach(self) -> None:
        """Undo :meth:`attach`: stop the timer, clear and close the banner.

        Also undoes an attach that failed half-way: each step is harmless when its part was
        never set up.
        """
        atexit.unregister(self.runner.stop)
        self.session.close()
        self.reporting.stop()
        self.drafting.stop()
        self.capture.stop()
        self.worker.stop()  # after every job's owner stopped: nothing schedules one again
        self.live.detach()
        self.recorder.detach()
        unregister(self.shell, self.magics)
        configurables = self._configurables
        for configurable in (self.settings, *self.magics):
            while configurable in configurables:
                configurables.remove(configurable)
        self.surface.close()

    # -- the collaborators' parts, as the magics, the status and the tests reach them --------

    @property
    def usage(self) -> UsageLedger:
        """The person's usage ledger in the session store, shared by every kernel; made (and
        its module imported) when first needed: a draft, an announcement, ``%recap status``."""
        with self._usage_lock:
            if self._usage is None:
                from ..stores.usage import UsageLedger

                self._usage = UsageLedger()
            return self._usage

    @property
    def has_widgets(self) -> bool:
        """True in a kernel (a frontend can render widgets), False in terminal IPython."""
        return getattr(self.shell, "kernel", None) is not None

    @property
    def banner(self) -> Any:
        """The kernel's one banner widget, made on first use (a recap to show, or this)."""
        return self.surface.banner

    @property
    def last_recap(self) -> WrittenRecap | None:
        return self.surface.last_recap

    @property
    def runner(self) -> TriggerRunner:
        return self.drafting.runner

    @property
    def schedule(self) -> Any:
        """The trigger schedule (its state is what ``%recap status`` shows)."""
        return self.drafting.schedule

    @property
    def last_result(self) -> RecapResult | None:
        return self.drafting.last_result

    @property
    def focus_source(self) -> str:
        """Where focus reports come from; "none" means the idle fallback is in charge."""
        return self.drafting.focus_source

    def report_focus(self, focused: bool, *, at: float | None = None, source: str = "api") -> None:
        """Whether the person is looking at this notebook (``at``: UNIX time of the change)."""
        self.drafting.report_focus(focused, at=at, source=source)

    def resume(self) -> None:
        """This notebook's previous session was loaded: draft a recap of where it stopped."""
        self.drafting.resume()

    def preview(self, model: str | None = None) -> RequestPreview | None:
        """``%recap --dry-run``: the request ``%recap`` would send now, sending nothing."""
        return self.drafting.preview(model)

    def manual(self, model: str | None = None) -> RecapResult:
        """``%recap``: draft now off the main thread and wait; an interrupt cancels it."""
        return self.drafting.manual(model)

    def handoff(self) -> str:
        """The source of a handoff cell for this session: its state's prompt under the agent
        magic this notebook uses (see :mod:`jupyter_recap.pipeline.handoff`). Raises
        :class:`~jupyter_recap.pipeline.handoff.NothingToHandOff` when there is no task."""
        from ..pipeline.handoff import agent_magic, handoff_cell

        agent = self.recorder.agent_cell
        manager = self.shell.magics_manager
        magic = agent_magic(
            f"%%{agent.magic} {agent.args}" if agent is not None else None,
            model=self.transcript.active_model,
            cell_magics=manager.magics["cell"] if manager is not None else (),
            agent_magics=self.settings.agent_magics,
        )
        return handoff_cell(self.transcript.state, magic)

    @property
    def notebook(self) -> str | None:
        """The notebook this kernel serves (its absolute path, as the server hands it over)."""
        return self.session.notebook

    @property
    def writer(self) -> SessionWriter | None:
        return self.session.writer

    @property
    def store_problem(self) -> str | None:
        """Why the session store was refused at load (someone else could write it), if it was."""
        return self.session.store_problem

    def resume_session(self, id_or_prefix: str) -> SessionRecord:
        """``%recap resume ID``: make that stored session this notebook's live one."""
        return self.session.resume(id_or_prefix)

    @property
    def feed(self) -> FocusFeed | None:
        return self.reporting.feed

    @property
    def reporter(self) -> StateReporter | None:
        """Tells the server's agents panel about this kernel (with the feed, in a kernel)."""
        return self.reporting.reporter

    @property
    def feed_problem(self) -> str | None:
        """Why a server that started this kernel gets no focus feed from it, if that is so."""
        return self.reporting.feed_problem


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
