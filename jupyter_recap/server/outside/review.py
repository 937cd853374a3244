"""A tracked notebook, and the review of its changed cells as the page asks for it.

The change tracker (:mod:`.changes`) keeps one :class:`Tracked` per notebook the person looked
at; :class:`ChangeReviews` answers ``GET changes`` and ``POST changes/reviewed`` from their
reviews (:mod:`...changes.review`) and keeps the texts the person last saw
(:mod:`...stores.seentext`), on the drafts pool: writing and reading them never holds the
server's loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from ...changes.cells import CellState, Fingerprint
from ...changes.diff import Change
from ...changes.review import Review
from ...changes.touches import normal_path
from ...errors import StoreError
from ...outside.source import OutsideSink
from ...stores.seentext import SeenTexts
from ...wire import ChangeReview, OutsideActivity

log = logging.getLogger(__name__)

TOO_LARGE = "this notebook is too large to keep its cells' text: its changes have no diffs"


@dataclasses.dataclass(eq=False)
class Tracked:
    """One notebook: what the person last saw, and what happened since."""

    path: str
    baseline: Fingerprint | None = None
    left_at: float = 0.0
    """When the person stopped looking (what is news is what happened after)."""
    looking: bool = False
    stat: tuple[int, int] = (0, 0)
    """(mtime_ns, size) of the file when it was last read."""
    left_stat: tuple[int, int] = (0, 0)
    """(mtime_ns, size) of the file when the snapshot was taken: unchanged since, it holds no
    news (under collaboration it may still lag behind the snapshot, the room's document)."""
    change: Change = dataclasses.field(default_factory=Change)
    saved_by_api: bool = False
    """The contents API saved it since the person left (the page's own saves say ``seen``)."""
    disk_changed: bool = False
    """The file changed since the person left."""
    foreign_ran: int = 0
    foreign_failed: int = 0
    line: OutsideActivity | None = None
    sent_text: str = ""
    """The line the kernel's record last got."""
    event_timer: asyncio.TimerHandle | None = None
    reading: bool = False
    again: bool = False
    file: str | None = None
    """The file's resolved path, kept for the stat every poll makes (resolving costs ~30 us, a
    stat 2: at 70 notebooks every 2 s, about 0.1 % of a core for an idle server)."""
    review: Review = dataclasses.field(default_factory=Review)
    """The cells to review (:mod:`...changes.review`)."""
    order: list[str | None] = dataclasses.field(default_factory=list)
    """The ids of its cells as last read."""
    texts_kept: bool = False
    """Last-seen texts of it are in the store."""
    texts_note: str | None = None
    """Why none are (too large, a store that is not the person's)."""


class ChangeReviews:
    """The tracked notebooks' reviews, and the texts they show (see the module)."""

    def __init__(self, sink: OutsideSink, notebooks: Mapping[str, Tracked]) -> None:
        self._sink = sink
        self._notebooks = notebooks
        self._texts = SeenTexts()

    async def review(self, path: str) -> ChangeReview:
        """The cells of ``path`` to review (``GET changes``; empty for a notebook not tracked)."""
        path = normal_path(path)
        tracked = self._notebooks.get(path)
        if tracked is None:
            return Review().answer(path, {})
        note = tracked.texts_note
        texts: dict[bytes, str] | None = {}
        if tracked.review.needed_texts():
            try:
                texts = await self._sink.in_pool(lambda: self._texts.texts(path))
            except StoreError as error:
                texts, note = None, f"no diffs: {error}"
            if texts is None and note is None:
                note = "the cells' last-seen text was not kept: no diffs"
        return tracked.review.answer(path, texts, note)

    async def reviewed(self, path: str, cell_ids: list[str]) -> ChangeReview:
        """The person saw these cells of ``path`` (``POST changes/reviewed``)."""
        tracked = self._notebooks.get(normal_path(path))
        if tracked is not None:
            tracked.review.mark_reviewed(cell_ids)
            if tracked.texts_kept and tracked.review.settled_down():
                self.drop_texts(tracked)
        return await self.review(path)

    async def keep_texts(self, tracked: Tracked, seen: list[CellState]) -> None:
        """Keep what the person sees now of each cell (only when they leave: while they look,
        their page's saves change it all the time) and what unreviewed marks need still."""
        needed = tracked.review.needed_texts()
        fresh = {} if tracked.looking else {c.source_hash: c.source or "" for c in seen}
        path = tracked.path

        def keep() -> bool | None:
            old = self._texts.texts(path) if needed - fresh.keys() else None
            texts = {key: old[key] for key in needed if old and key in old} | fresh
            if not texts:
                self._texts.drop(path)
                return None
            return self._texts.keep(path, texts)

        try:
            kept = await self._sink.in_pool(keep)
        except StoreError as error:
            tracked.texts_kept, tracked.texts_note = False, f"no diffs: {error}"
            log.warning("jupyter_recap: last-seen cell texts not kept: %s", error)
            return
        tracked.texts_kept = bool(kept)
        tracked.texts_note = TOO_LARGE if kept is False else None

    def drop_texts(self, tracked: Tracked) -> None:
        tracked.texts_kept = False
        path = tracked.path
        task = asyncio.ensure_future(self._sink.in_pool(lambda: self._texts.drop(path)))
        task.add_done_callback(_logged)


def _logged(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("jupyter_recap: dropping cell texts failed", exc_info=task.exception())
