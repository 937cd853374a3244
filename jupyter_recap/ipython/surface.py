"""Where recaps appear in a kernel: the banner widget and its outputs in the notebook.

:class:`BannerSurface` is what the trigger runner's :class:`~.triggers.Surface` calls: it shows a
recap (and records that it was shown), clears it, marks a ``%recap`` draft and its failure. It
owns the banner's outputs: the live one of ``%load_ext`` and each ``%recap`` cell's own, and the
``text/plain`` a saved ``.ipynb`` keeps of them. It learns about the rest of the kernel through
the callbacks it is given.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..debuglog import get_logger
from ..errors import RecapError
from ..record.transcript import Transcript
from ..stores.tasks import Task, progress_counts, progress_line
from ..textutil import printable

if TYPE_CHECKING:
    # Types only: the pipeline and the ledger load with the first recap, not at %load_ext.
    from ..focus.report import CellCounts
    from ..pipeline.service import RecapResult, WrittenRecap
    from ..schedule import ShowDrafting, ShowRecap, StartDraft
    from ..stores.usage import UsageLedger


class BannerSurface:
    """The kernel's one banner and what it showed; created empty, the widget on first use."""

    def __init__(
        self,
        transcript: Transcript,
        cells: CellCounts,
        usage: Callable[[], UsageLedger],
        *,
        has_widgets: Callable[[], bool],
        tasks: Callable[[], Sequence[Task]],
        stop_cell: Callable[[], Any],
        changed: Callable[[], None],
        dismissed: Callable[[], None],
        created: Callable[[str], None] = lambda model_id: None,
        story: Callable[[], str] = lambda: "",
        handoff: Callable[[], str] | None = None,
    ) -> None:
        self.transcript = transcript
        self.cells = cells
        self._usage = usage
        """The person's usage ledger, made on first use (the announcement marks are there)."""
        self._has_widgets = has_widgets
        """Whether a frontend can render widgets (asked each time: a test may say yes)."""
        self._tasks = tasks
        self._stop_cell = stop_cell
        """Where the work stopped, as the agents panel has it (the banner links it)."""
        self._changed = changed
        """Something the agents panel shows changed (a recap was shown)."""
        self._dismissed = dismissed
        """The person closed the banner."""
        self._created = created
        """The banner widget was made (its model id): the server learns it."""
        self._story = story
        """Which stored sessions a resumed story draws from ("" for one): a resume recap says it."""
        self._handoff = handoff
        """Writes a handoff cell's source: the banner's *Continue* asks for it."""
        self.last_recap: WrittenRecap | None = None
        self.shown: dict[str, Any] | None = None
        """The latest recap shown (``text``, ``model``, ``at``, and ``turns``: the agent turns
        that had finished when it was drafted), for the agents panel."""
        self._banner: Any = None
        self._banner_lock = threading.Lock()
        """Makes one banner when two threads ask for it at once."""
        self.display_id = f"jupyter-recap-banner-{uuid.uuid4().hex}"
        """The display id of the banner's live output (the one ``%load_ext`` leaves), also
        the banner's own once it is made."""
        self._banner_displayed = False
        """Whether the banner has an output in the notebook, which updates can then reach."""
        self._outputs_lock = threading.RLock()
        """Orders a new banner output against the updates sent from a draft's thread."""
        self._manual_output: tuple[int, str] | None = None
        """The ``%recap`` draft in flight and the display id of its own cell's output, which
        takes that draft's recap and no later one."""

    @property
    def made(self) -> bool:
        """Whether the banner widget exists (it is made when it first has something to show)."""
        return self._banner is not None

    @property
    def banner(self) -> Any:
        """The kernel's one banner widget, made on first use.

        Not at ``%load_ext``: ipywidgets and anywidget cost a kernel ~8 MB and ~100 ms to
        import, and most kernels never show a recap. Once made, it takes over the live output
        ``%load_ext`` left (:meth:`display`), and the server learns its model id.
        """
        banner = self._banner
        if banner is not None:
            return banner
        with self._banner_lock:
            if self._banner is None:
                from ..widget.banner import RecapBanner

                banner = RecapBanner(display_id=self.display_id)
                banner.observe(self._on_dismissed, names=["dismissed"])
                banner.handoff = self._handoff
                self._banner = banner
                self._take_live_output(banner)
                self._created(banner.model_id)
            return self._banner

    def _take_live_output(self, banner: Any) -> None:
        """Put the new banner's view into the live output that ``%load_ext`` left for it."""
        try:
            from IPython.display import update_display

            with self._outputs_lock:
                if self._banner_displayed:
                    update_display(banner, display_id=self.display_id)
        except Exception:  # noqa: BLE001 - e.g. the kernel or the comm is gone at shutdown
            get_logger().debug("banner: could not fill its live output", exc_info=True)

    def close(self) -> None:
        """Close the banner widget (harmless when it was never made)."""
        if self._banner is not None:
            self._banner.close()
            self._banner = None
            self._banner_displayed = False

    def _on_dismissed(self, change: Any) -> None:
        if change["new"]:
            self._dismissed()

    # -- outputs ---------------------------------------------------------------------------

    def display(self) -> None:
        """Give the banner its live output in the running cell, under its one display id.

        Before the banner exists the output is an empty placeholder (no widget, nothing
        imported); the banner replaces it with its view when it is made, from whichever thread
        that happens on (``update_display_data`` reaches the output while the kernel is idle).
        """
        from IPython.display import display

        # Under the lock a draft's thread sends its update either before this output's text is
        # taken (which then has the recap) or after the output exists (which it then replaces).
        with self._outputs_lock:
            banner = self._banner
            if banner is not None:
                display(banner, display_id=self.display_id)
            else:
                display({"text/plain": ""}, raw=True, display_id=self.display_id)
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

    # -- what the trigger runner asks for ---------------------------------------------------

    def show(self, action: ShowRecap) -> None:
        """Show a recap the schedule released, and record in the transcript that it was."""
        from ..focus.report import recap_links
        from ..pipeline.service import WrittenRecap

        recap = WrittenRecap(action.text, action.model, action.reason, note=action.note)
        self.last_recap = recap
        self.transcript.recap(recap.text, model=recap.model)
        # As shown: the links' offsets must count the characters the page will see.
        text = printable(recap.text)
        self.shown = {"text": text, "model": recap.model, "at": time.time(), "turns": action.turns}
        if self._has_widgets():
            tasks = self._tasks()
            note = progress_line(tasks)
            if recap.reason == "resume":
                # A short side run was framed by the notebook's earlier work: say so.
                story = self._story()
                note = f"{story} · {note}" if story and note else story or note
            # "offline · daily budget of 100 calls reached": why no model wrote this one.
            engine = f"{recap.model} · {recap.note}" if recap.note else recap.model
            self.banner.show(
                text,
                engine,
                reason=recap.reason,
                note=note,
                links=recap_links(text, self.cells),
                stop_cell=self._stop_cell(),
                progress=progress_counts(tasks),
                notice=self._first_time(action),
            )
            self._update_saved_text(action.id)
        self._changed()

    def _first_time(self, action: ShowRecap) -> str:
        """The recap's announcement, if this person has never been shown it for this model
        (automatic recaps now go to a hosted model); marked as shown across kernels."""
        if not action.notice:
            return ""
        try:
            first = self._usage().announce_once(action.model)
        except RecapError as error:  # a refused store: announce every time rather than never
            get_logger().warning("usage: cannot keep the announcement mark (%s)", error)
            first = True
        return action.notice if first else ""

    def clear(self) -> None:
        if self._banner is not None:
            with contextlib.suppress(Exception):  # the comm may already be gone at shutdown
                self._banner.clear()

    def drafting(self, draft: StartDraft | ShowDrafting) -> None:
        """The banner says *drafting…*. For a ``%recap`` draft about to start, its cell gets the
        banner's output first, so the recap, however fast, updates an output that exists; a
        recap of a newer turn replacing one of an older turn just says it is coming."""
        if not self._has_widgets():
            return
        from ..schedule import StartDraft

        if isinstance(draft, StartDraft):
            self._display_manual_output(draft)
            self.banner.drafting(model=draft.model or "", reason=draft.reason)
        else:
            self.banner.drafting(reason=draft.reason)
            self._changed()

    def manual_ended(self, result: RecapResult, started: bool) -> None:
        """A ``%recap`` draft ended (``started``: one was started at all); a failed one says so."""
        with self._outputs_lock:
            self._manual_output = None  # a failed or cancelled draft leaves its output empty
        if result.recap is None and self._has_widgets() and started:
            self.banner.fail(result.reason, model=result.model or "")

    def tasks_changed(self, tasks: Sequence[Task]) -> None:
        """Refresh a shown banner's progress line."""
        banner = self._banner
        if banner is None:
            return
        # The comm may already be gone at shutdown.
        with contextlib.suppress(Exception):
            # The progress line is part of the saved text only while the recap shows.
            if banner.set_progress(progress_line(tasks), progress_counts(tasks)):
                self._update_saved_text()
