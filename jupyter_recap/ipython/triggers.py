"""Drive the trigger schedule inside a kernel: timers on the shared worker, a thread per draft.

Why a thread and not the kernel's event loop: while a cell runs, ipykernel's loop is blocked, yet
the away timer must fire mid-turn (to set the pending bit) and focus reports must be heard while a
long agent cell runs; terminal IPython has no loop at all. The schedule's next deadline is one job
on the extension's :class:`~.worker.Worker` (the thread it shares with the state reports and the
session writes), re-timed whenever an input moves it, so an idle kernel costs nothing. Model calls
run in a short-lived thread per draft, so a slow provider never holds up a cell (nor the worker);
widget state updates from those threads reach the browser while the kernel is idle.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..debuglog import get_logger
from ..record.transcript import Entry, Transcript
from ..settings import Recap
from .worker import Job, Worker

if TYPE_CHECKING:
    from ..pipeline.providers.base import CancelToken
    from ..pipeline.service import RecapResult, RecapStats
    from ..schedule import Action, Schedule, ShowDrafting, ShowRecap, StartDraft
    from ..stores.framing import Framing
    from ..stores.usage import UsageLedger


def _cancel_token() -> CancelToken:
    """A draft's token; the providers' module loads with the first draft, not at load."""
    from ..pipeline.providers.base import CancelToken

    return CancelToken()


class DraftJob:
    """One draft in a worker thread: cancel it with ``cancel``, wait on ``done``.

    Not a dataclass: it would be made (its methods compiled) at every `%load_ext`, for the
    first draft's sake."""

    def __init__(self, draft: StartDraft) -> None:
        self.draft = draft
        self.cancel: CancelToken = _cancel_token()
        self.done = threading.Event()
        self.result: RecapResult | None = None
        self.follow: DraftJob | None = None
        """The draft that took over from this one (its answer covered an older turn than the
        latest finished one): whoever waits for this one waits for that one instead."""


@dataclass
class Surface:
    """Where recaps appear: the extension supplies these (banner widget, or nothing)."""

    show: Callable[[ShowRecap], None]
    clear: Callable[[], None]
    drafting: Callable[[StartDraft | ShowDrafting], None]
    """The banner says *drafting…*: a manual draft is about to start (on the thread that asked
    for it; its worker thread starts only after this returns), or a recap of a newer turn
    replaces one of an older turn (:class:`~jupyter_recap.schedule.ShowDrafting`)."""
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
        framing: Callable[[], Framing] | None = None,
        worker: Worker | None = None,
    ) -> None:
        self.transcript = transcript
        self.framing = framing if framing is not None else _no_framing
        """The task list and memory notes a recap adds (read at each draft and fingerprint)."""
        self.settings = settings
        self.stats = stats
        self.usage: Callable[[], UsageLedger] | None = None
        """The person's usage ledger (made on first use): model calls are counted there and
        automatic ones held to the daily budget (None: not counted, as in tests of the schedule
        alone)."""
        self.surface = surface
        self._clock = clock
        # feed() runs on every cell: it takes the bare C lock; the worker's timer job takes it
        # too, to read the schedule's deadline and tick it.
        self._lock = threading.RLock()
        self._jobs: dict[int, DraftJob] = {}
        self._stopped = False
        self._own_worker = worker is None
        self.worker = worker if worker is not None else Worker("jupyter-recap-timer")
        """Where the schedule's deadline fires (shared with the extension's other jobs)."""
        self._timer: Job | None = None
        """The worker job of the schedule's next deadline, if one is armed."""
        self.manual_job: DraftJob | None = None
        self._schedule: Schedule | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._context: tuple[Any, str, str] | None = None
        """(what it was built from, context, fingerprint) of the latest build."""
        self._outside = threading.local()
        """Set on a thread while it writes entries that came from outside the kernel."""

    @property
    def schedule(self) -> Schedule:
        """The trigger schedule, made (and :mod:`jupyter_recap.schedule` imported) on first
        use: the first input that can change it, a timer's status, ``%recap``. Until then it
        would be a fresh one: no timer armed, nothing in flight, no banner."""
        schedule = self._schedule
        if schedule is None:
            with self._lock:
                schedule = self._schedule
                if schedule is None:
                    from ..schedule import Schedule

                    transcript = self.transcript
                    schedule = self._schedule = Schedule(
                        self.settings,
                        clock=self._clock,
                        fingerprint=self.fingerprint,
                        completed_turns=lambda: transcript.completed_turns,
                    )
        return schedule

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Listen to the transcript for turn starts and ends; timers run on the worker."""
        self._unsubscribe = self.transcript.subscribe(self._on_entry, kinds=("user", "outcome"))
        self.settings.observe(self._on_auto, names=["auto"])
        with self._lock:
            self._arm()

    def stop(self) -> None:
        """Cancel everything, clear the banner and disarm the timer."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self.settings.unobserve(self._on_auto, names=["auto"])
        if self._schedule is not None:  # never made: nothing to shut down
            self.feed(self._schedule.shutdown)
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if self._own_worker:
            self.worker.stop()

    # -- inputs ----------------------------------------------------------------------------

    def feed(self, method: Callable[..., list[Action]], *args: Any) -> list[Action]:
        """Call an schedule input under the lock, wake the timer if its deadline moved, act."""
        with self._lock:
            before = self.schedule.timers()
            actions = method(*args)
            if self.schedule.timers() != before:
                self._arm()
        if actions:
            self._dispatch(actions)
        return actions

    def user_input(self) -> None:
        """A recorded cell starts.

        This runs before every cell, so the common case (nothing to cancel, clear or disarm)
        skips the lock. A draft the timer starts at this very moment is then not cancelled
        by this cell; the cell's own entry makes it stale, and the next input clears it.
        """
        schedule = self._schedule
        if schedule is None or (
            schedule.in_flight is None
            and not schedule.banner_visible
            and schedule.post_turn_deadline is None
            and schedule.idle_deadline is None
        ):
            return
        self.feed(schedule.user_input)

    def cell_ended(self) -> None:
        """An ordinary cell finished (only the idle fallback cares, before any focus report)."""
        if self.transcript.completed_turns and self.schedule.focused is None:
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
        # Here, not at the top: the pipeline loads with the first fingerprint (a timer or a
        # recap), not with the extension.
        from ..pipeline import context as pipeline_context

        text = pipeline_context.build_context(
            self.transcript, max_chars=cap, extras=framing.extras, env=os.environ
        )
        digest = pipeline_context.fingerprint(text)
        self._context = (key, text, digest)
        return text, digest

    def fingerprint(self) -> str:
        return self.context()[1]

    def manual(self, model: str | None) -> tuple[DraftJob | None, str | None]:
        """Start a manual draft; returns its job, or None and the refusal."""
        from ..schedule import Refuse

        actions = self.feed(self.schedule.manual, model)
        for action in actions:
            if isinstance(action, Refuse):
                return None, action.message
        # Dispatching the StartDraft (on this thread) set the job, even if it finished already.
        return self.manual_job, None

    @contextmanager
    def outside(self) -> Iterator[None]:
        """Entries this thread appends in the block were written outside the kernel (a CLI
        agent's hooks, through the server): a turn they start or end is an outside agent's,
        which holds automatic recaps but never ``%recap``."""
        self._outside.active = True
        try:
            yield
        finally:
            self._outside.active = False

    def _on_entry(self, transcript: Transcript, entry: Entry) -> None:
        schedule = self.schedule
        outside = getattr(self._outside, "active", False)
        if entry.kind == "user":
            self.feed(schedule.outside_turn_started if outside else schedule.turn_started)
        elif entry.kind == "outcome":
            ended = schedule.outside_turn_ended if outside else schedule.turn_ended
            self.feed(ended, entry.outcome or "ok")

    def _on_auto(self, change: Any) -> None:
        self.feed(self.schedule.set_auto, bool(change["new"]))

    # -- the timer, on the worker ------------------------------------------------------------

    def _arm(self) -> None:
        """Time the worker job to the schedule's next deadline (under the lock)."""
        if self._stopped:
            return
        schedule = self._schedule
        deadline = schedule.next_deadline() if schedule is not None else None
        timer = self._timer
        if deadline is None:
            if timer is not None:
                timer.cancel()
                self._timer = None
            return
        # The schedule's clock may be another than the worker's: convert through "now".
        when = time.monotonic() + (deadline - self._clock())
        if timer is not None and not timer.cancelled and abs(timer.when - when) < 1e-3:
            return
        if timer is not None:
            timer.cancel()
        self._timer = self.worker.call_at(when, self._tick)

    def _tick(self) -> None:
        """A deadline came (on the worker): let the schedule act, then re-time the timer."""
        with self._lock:
            self._timer = None
            if self._stopped:
                return
            deadline = self.schedule.next_deadline()
            actions = (
                self.schedule.tick() if deadline is not None and deadline <= self._clock() else []
            )
            self._arm()
        if actions:
            self._dispatch(actions)

    # -- actions ---------------------------------------------------------------------------

    def _dispatch(self, actions: list[Action]) -> None:
        for action in actions:
            try:
                self._act(action)
            except Exception:  # noqa: BLE001 - a failing widget update must not stop the rest
                get_logger().exception("recap action %s failed", type(action).__name__)

    def _act(self, action: Action) -> None:
        from ..schedule import CancelDraft, ClearBanner, ShowDrafting, ShowRecap, StartDraft

        if isinstance(action, StartDraft):
            job = DraftJob(action)
            self._jobs[action.id] = job
            if action.manual:
                if action.again and self.manual_job is not None:
                    self.manual_job.follow = job  # the %recap waiting goes on waiting
                else:
                    self.surface.drafting(action)
                self.manual_job = job
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
        elif isinstance(action, ShowDrafting):
            self.surface.drafting(action)
        elif isinstance(action, ClearBanner):
            self.surface.clear()

    def _work(self, job: DraftJob) -> None:
        from ..pipeline.service import draft_recap

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
            usage=self.usage() if self.usage is not None else None,
        )
        recap = result.recap
        if recap is not None and draft.note:
            # Beside the engine in the banner, as an offline recap's reason is.
            note = " · ".join(part for part in (recap.note, draft.note) if part)
            recap = replace(recap, note=note)
            result = replace(result, recap=recap)
        job.result = result
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
        if self._jobs.get(draft.id) is job:  # not when a draft again took over its id
            del self._jobs[draft.id]
        job.done.set()
        self.surface.changed()

    def wait(self, job: DraftJob) -> RecapResult:
        """Wait for ``job`` on the main thread; an interrupt cancels it."""
        from ..pipeline.service import RecapResult

        try:
            while True:
                while not job.done.wait(0.05):
                    pass
                if job.follow is None:
                    break
                job = job.follow  # it covered an older turn: its successor answers
        except KeyboardInterrupt:
            self.feed(self.schedule.cancel_in_flight)
            job.cancel.cancel()
            return RecapResult(None, "cancelled")
        return job.result or RecapResult(None, "the draft did not finish")


def _no_framing() -> Framing:
    from ..stores.framing import NO_FRAMING

    return NO_FRAMING
