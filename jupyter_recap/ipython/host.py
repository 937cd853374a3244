"""What the magics and ``%recap status`` see of the extension, as types.

The magics and the status report take one of these Protocols rather than the extension class, so
they do not import :mod:`.extension` (which imports them to register them): the kernel side has
no import cycle, and a test can hand them a small stand-in. :class:`~.extension.RecapExtension`
satisfies both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..capture.manager import Capture
    from ..pipeline.preview import RequestPreview
    from ..pipeline.service import RecapResult, RecapStats, WrittenRecap
    from ..record.transcript import Transcript
    from ..settings import Recap
    from ..stores.sessions import SessionRecord, SessionWriter
    from ..stores.usage import UsageLedger
    from ..stores.workstate import WorkState
    from .feed import FocusFeed


class KernelView(Protocol):
    """What ``%recap status`` and ``%recap compact-memory`` read of the loaded extension."""

    @property
    def settings(self) -> Recap: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def stats(self) -> RecapStats: ...

    @property
    def state(self) -> WorkState: ...

    @property
    def usage(self) -> UsageLedger: ...

    @property
    def capture(self) -> Capture: ...

    @property
    def schedule(self) -> Any:
        """The trigger schedule (:class:`jupyter_recap.schedule.Schedule`)."""

    @property
    def last_recap(self) -> WrittenRecap | None: ...

    @property
    def last_result(self) -> RecapResult | None: ...

    @property
    def focus_source(self) -> str: ...

    @property
    def feed(self) -> FocusFeed | None: ...

    @property
    def feed_problem(self) -> str | None: ...

    @property
    def writer(self) -> SessionWriter | None: ...

    @property
    def store_problem(self) -> str | None: ...


class RecapHost(KernelView, Protocol):
    """What ``%recap`` drives: manual recaps, the dry run, resuming a stored session, the
    handoff cell."""

    @property
    def has_widgets(self) -> bool: ...

    @property
    def notebook(self) -> str | None: ...

    def manual(self, model: str | None = None) -> RecapResult: ...

    def preview(self, model: str | None = None) -> RequestPreview | None: ...

    def resume_session(self, id_or_prefix: str) -> SessionRecord: ...

    def handoff(self) -> str: ...
