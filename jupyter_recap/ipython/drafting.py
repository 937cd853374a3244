"""Drafting recaps in a kernel: the trigger runner, its inputs from outside cells, ``%recap``.

:class:`Drafting` owns the :class:`~.triggers.TriggerRunner` (the schedule, its timer thread and
the draft threads) and feeds it what happens outside the kernel's cells: focus reports, typing
in the notebook, a resumed session, the banner dismissed, a captured agent run starting. It also
runs ``%recap`` (a manual draft, waited for) and ``%recap --dry-run`` (the request, unsent). Where
recaps appear is the :class:`~.triggers.Surface` it is given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..record.transcript import Transcript
from ..settings import Recap
from .triggers import Surface, TriggerRunner
from .worker import Worker

if TYPE_CHECKING:
    # Types only: the recap pipeline loads with the first draft, not with the extension.
    from ..pipeline.preview import RequestPreview
    from ..pipeline.service import RecapResult, RecapStats
    from ..stores.framing import Framing
    from ..stores.usage import UsageLedger


class Drafting:
    """When and how this kernel drafts recaps; :meth:`start` and :meth:`stop` its threads."""

    def __init__(
        self,
        transcript: Transcript,
        settings: Recap,
        stats: RecapStats,
        usage: Callable[[], UsageLedger],
        surface: Surface,
        *,
        framing: Callable[[], Framing],
        manual_ended: Callable[[RecapResult, bool], None],
        worker: Worker | None = None,
    ) -> None:
        self.transcript = transcript
        self.settings = settings
        self.runner = TriggerRunner(
            transcript, settings, stats, surface, framing=framing, worker=worker
        )
        self.runner.usage = usage
        self._manual_ended = manual_ended
        """A ``%recap`` draft ended (with its result; False: none was started)."""
        self.last_result: RecapResult | None = None
        self.focus_source = "none"
        """Where focus reports come from; "none" means the idle fallback is in charge."""

    @property
    def schedule(self) -> Any:
        """The trigger schedule (its state is what ``%recap status`` shows)."""
        return self.runner.schedule

    def start(self) -> None:
        self.runner.start()

    def stop(self) -> None:
        self.runner.stop()

    # -- inputs from outside the kernel's cells ----------------------------------------------

    def report_focus(self, focused: bool, *, at: float | None = None, source: str = "api") -> None:
        """Whether the person is looking at this notebook (``at``: UNIX time of the change)."""
        self.focus_source = source
        when = None if at is None else time.monotonic() - max(0.0, time.time() - at)
        self.runner.feed(self.schedule.focus, bool(focused), when)

    def browser_focus(self, focused: bool, at: float) -> None:
        """The server's focus feed reports what the browser saw."""
        self.report_focus(focused, at=at, source="browser")

    def typed_elsewhere(self) -> None:
        """The person typed in this notebook (reported by the browser): they are here."""
        self.runner.feed(self.schedule.user_input)

    def new_story(self) -> None:
        """Another stored session became the live one: drop what was in flight."""
        self.runner.feed(self.schedule.user_input)

    def resume(self) -> None:
        """This notebook's previous session was loaded: draft a recap of where it stopped."""
        self.runner.feed(self.schedule.resume)

    def dismissed(self) -> None:
        """The person closed the banner."""
        self.runner.feed(self.schedule.banner_dismissed)

    def turn_started(self) -> None:
        # A captured run writes its prompt once it knows it (often with the first model call);
        # the schedule must treat the turn as running from its very start.
        self.runner.feed(self.runner.schedule.turn_started)

    def in_flight(self) -> bool:
        """Whether a draft is running now."""
        return self.schedule.in_flight is not None

    def coming(self) -> bool:
        """Whether a recap is on its way: a draft runs, or the post-turn one is due (the agents
        panel says *drafting…*)."""
        return bool(self.schedule.coming())

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
        from ..pipeline.service import RecapResult

        job, refusal = self.runner.manual(model)
        if job is None:
            result = RecapResult(None, refusal or "no draft was started")
        else:
            result = self.runner.wait(job)
        self.last_result = result
        self._manual_ended(result, job is not None)
        return result
