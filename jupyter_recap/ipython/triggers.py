"""Drive the trigger schedule inside a kernel: one timer thread, one worker per draft.

Why a thread and not the kernel's event loop: while a cell runs, ipykernel's loop is blocked, yet
the away timer must fire mid-turn (to set the pending bit) and focus reports must be heard while a
long agent cell runs; terminal IPython has no loop at all. The timer thread sleeps on a condition
until the schedule's next deadline or a new input, so an idle kernel costs nothing. Model calls run
in a worker thread per draft, so a slow provider never holds up a cell; widget state updates from
those threads reach the browser while the kernel is idle.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..debuglog import get_logger
from ..pipeline.context import build_context, fingerprint
from ..pipeline.providers.base import CancelToken
from ..pipeline.service import RecapResult, RecapStats, draft_recap
from ..record.transcript import Entry, Transcript
from ..stores.framing import NO_FRAMING, Framing

if TYPE_CHECKING:
    from ..stores.usage import UsageLedger

from ..schedule import (
    Action,
    CancelDraft,
    ClearBanner,
    Refuse,
    Schedule,
    ShowRecap,
    StartDraft,
)
from ..settings import Recap


@dataclass
class DraftJob:
    """One draft in a worker thread: cancel it with ``cancel``, wait on ``done``."""

    draft: StartDraft
    cancel: CancelToken = field(default_factory=CancelToken)
    done: threading.Event = field(default_factory=threading.Event)
    result: RecapResult | None = None


@dataclass
class Surface:
    """Where recaps appear: the extension supplies these (banner widget, or nothing)."""

    show: Callable[[ShowRecap], None]
    clear: Callable[[], None]
    drafting: Callable[[StartDraft], None]
    """A manual draft is about to start, on the thread that asked for it; its worker thread
    starts only after this returns."""
    changed: Callable[[], None] = lambda: None
    """A draft started or ended (the agents panel shows "drafting…")."""


class TriggerRunner:
    """Feeds inputs to the schedule under one lock and carries out its actions."""

    def __init__(
        self,
        transcript: Transcript,
        settings: Recap,
        stats: RecapStats,
        surface: Surface,
        clock: Callable[[], float] = time.monotonic,
        framing: Callable[[], Framing] = lambda: NO_FRAMING,
    ) -> None:
        self.transcript = transcript
        self.framing = framing
        """The task list and memory notes a recap adds (read at each draft and fingerprint)."""
        self.settings = settings
        self.stats = stats
        self.usage: UsageLedger | None = None
        """The person's usage ledger: model calls are counted there and automatic ones held to
        the daily budget (None: not counted, as in tests of the schedule alone)."""
        self.surface = surface
        self._clock = clock
        # feed() runs on every cell: it takes the bare C lock (Condition's own __enter__ is
        # Python code); the condition shares that lock for the timer thread's waits.
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._jobs: dict[int, DraftJob] = {}
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.manual_job: DraftJob | None = None
        self.schedule = Schedule(
            settings,
            clock=clock,
            fingerprint=self.fingerprint,
            completed_turns=lambda: transcript.completed_turns,
        )
        self._unsubscribe: Callable[[], None] | None = None
        self._context: tuple[Any, str, str] | None = None
        """(what it was built from, context, fingerprint) of the latest build."""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the timer thread and listen to the transcript for turn starts and ends."""
        self._unsubscribe = self.transcript.subscribe(self._on_entry, kinds=("user", "outcome"))
        self.settings.observe(self._on_auto, names=["auto"])
        self._thread = threading.Thread(target=self._run, name="jupyter-recap-timer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Cancel everything, clear the banner and end the timer thread."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self.settings.unobserve(self._on_auto, names=["auto"])
        self.feed(self.schedule.shutdown)
        with self._wake:
            self._stopped = True
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._thread = None

    # -- inputs ----------------------------------------------------------------------------

    def feed(self, method: Callable[..., list[Action]], *args: Any) -> list[Action]:
        """Call an schedule input under the lock, wake the timer if its deadline moved, act."""
        with self._lock:
            before = self.schedule.timers()
            actions = method(*args)
            if self.schedule.timers() != before:
                self._wake.notify()
        if actions:
            self._dispatch(actions)
        return actions

    def user_input(self) -> None:
        """A recorded cell starts.

        This runs before every cell, so the common case (nothing to cancel, clear or disarm)
        skips the lock. A draft the timer starts at this very moment is then not cancelled
        by this cell; the cell's own entry makes it stale, and the next input clears it.
        """
        schedule = self.schedule
        if (
            schedule.in_flight is None
            and not schedule.banner_visible
            and schedule.post_turn_deadline is None
            and schedule.idle_deadline is None
        ):
            return
        self.feed(schedule.user_input)

    def cell_ended(self) -> None:
        """An ordinary cell finished (only the idle fallback cares, before any focus report)."""
        if self.schedule.focused is None and self.transcript.completed_turns:
            self.feed(self.schedule.cell_ended)

    def context(self) -> tuple[str, str]:
        """What a recap would see now and its fingerprint (the dedupe and staleness key).

        Built once per change of the transcript, the framing or the cap, and reused until the
        next: the schedule asks for the fingerprint at each timer and again when a draft ends,
        and the draft itself is written from this same text.
        """
        framing = self.framing()
        cap = int(self.settings.max_context_chars)
        key = (self.transcript.revision, framing.extras, cap)
        cached = self._context
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        text = build_context(self.transcript, max_chars=cap, extras=framing.extras, env=os.environ)
        digest = fingerprint(text)
        self._context = (key, text, digest)
        return text, digest

    def fingerprint(self) -> str:
        return self.context()[1]

    def manual(self, model: str | None) -> tuple[DraftJob | None, str | None]:
        """Start a manual draft; returns its job, or None and the refusal."""
        actions = self.feed(self.schedule.manual, model)
        for action in actions:
            if isinstance(action, Refuse):
                return None, action.message
        # Dispatching the StartDraft (on this thread) set the job, even if it finished already.
        return self.manual_job, None

    def _on_entry(self, transcript: Transcript, entry: Entry) -> None:
        if entry.kind == "user":
            self.feed(self.schedule.turn_started)
        elif entry.kind == "outcome":
            self.feed(self.schedule.turn_ended, entry.outcome or "ok")

    def _on_auto(self, change: Any) -> None:
        self.feed(self.schedule.set_auto, bool(change["new"]))

    # -- the timer thread ------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._wake:
                if self._stopped:
                    return
                deadline = self.schedule.next_deadline()
                now = self._clock()
                if deadline is None or deadline > now:
                    self._wake.wait(None if deadline is None else deadline - now)
                    continue
                actions = self.schedule.tick()
            self._dispatch(actions)

    # -- actions ---------------------------------------------------------------------------

    def _dispatch(self, actions: list[Action]) -> None:
        for action in actions:
            try:
                self._act(action)
            except Exception:  # noqa: BLE001 - a failing widget update must not stop the rest
                get_logger().exception("recap action %s failed", type(action).__name__)

    def _act(self, action: Action) -> None:
        if isinstance(action, StartDraft):
            job = DraftJob(action)
            self._jobs[action.id] = job
            if action.manual:
                self.manual_job = job
                self.surface.drafting(action)
            get_logger().info("drafting a recap (%s)", action.reason)
            worker = threading.Thread(
                target=self._work, args=(job,), name="jupyter-recap-draft", daemon=True
            )
            worker.start()
            self.surface.changed()
        elif isinstance(action, CancelDraft):
            cancelled = self._jobs.pop(action.id, None)
            if cancelled is not None:
                cancelled.cancel.cancel()
                get_logger().info("cancelled the in-flight recap (%s)", cancelled.draft.reason)
                self.surface.changed()
        elif isinstance(action, ShowRecap):
            self.surface.show(action)
        elif isinstance(action, ClearBanner):
            self.surface.clear()

    def _work(self, job: DraftJob) -> None:
        draft = job.draft
        text, _ = self.context()  # the text the draft's fingerprint was taken of, unless it moved
        result = draft_recap(
            self.transcript,
            context=text,
            model=draft.model,
            settings=self.settings,
            trigger=draft.reason,
            cancel=job.cancel,
            framing=self.framing(),
            stats=self.stats,
            usage=self.usage,
        )
        job.result = result
        recap = result.recap
        if recap is None:
            get_logger().info("no recap (%s): %s", draft.reason, result.reason)
        self.feed(
            self.schedule.draft_done,
            draft.id,
            recap.text if recap is not None else None,
            recap.model if recap is not None else "",
            recap.note if recap is not None else "",
            recap.notice if recap is not None else "",
        )
        self._jobs.pop(draft.id, None)
        job.done.set()
        self.surface.changed()

    def wait(self, job: DraftJob) -> RecapResult:
        """Wait for ``job`` on the main thread; an interrupt cancels it."""
        try:
            while not job.done.wait(0.05):
                pass
        except KeyboardInterrupt:
            self.feed(self.schedule.cancel_in_flight)
            job.cancel.cancel()
            return RecapResult(None, "cancelled")
        return job.result or RecapResult(None, "the draft did not finish")
