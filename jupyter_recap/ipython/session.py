"""The kernel's stored session: which one it continues, the writer, ``%recap resume``.

:class:`KernelSession` decides at load whether this kernel continues the notebook's stored
session or starts its own, keeps the :class:`~jupyter_recap.stores.sessions.SessionWriter` that
appends the transcript to it, saves the task list with it, and switches to another stored
session on ``%recap resume``. A kernel that continues the notebook's newest session brings back
the notebook's story with it (:mod:`jupyter_recap.stores.story`): when that session is short,
the earlier sessions that frame it come first in the live transcript, so every recap of this
kernel, the resume recap first, tells the notebook's work rather than a side run's prompts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from ..debuglog import get_logger
from ..errors import RecapError, UnsafeStoreError
from ..pipeline.stats import RecapStats
from ..record.transcript import Transcript
from ..stores.sessionfiles import AppendFile
from ..stores.sessions import (
    Scheduler,
    SessionInUse,
    SessionRecord,
    SessionStore,
    SessionWriter,
)
from ..stores.story import Story, frame, sources_line
from ..stores.tasks import Task, TaskList
from ..stores.workstate import WorkState

# The stored session the live transcript (``current()``) belongs to, across unload/reload,
# and the frame it was continued with: how many of the transcript's first entries belong to
# the earlier sessions of its story, and their ids.
_live_session: str | None = None
_live_frame: tuple[int, tuple[str, ...]] = (0, ())


class KernelSession:
    """This kernel's session record; :meth:`attach` at load, :meth:`close` at unload."""

    def __init__(
        self,
        transcript: Transcript,
        state: WorkState,
        stats: RecapStats,
        *,
        new_story: Callable[[], None],
        scheduler: Scheduler | None = None,
    ) -> None:
        self.transcript = transcript
        self.state = state
        self.stats = stats
        self._scheduler = scheduler
        """Where the writer's debounced writes run (the extension's worker thread)."""
        self._new_story = new_story
        """Another stored session becomes the live one: what was in flight is dropped."""
        self.writer: SessionWriter | None = None
        self.store_problem: str | None = None
        """Why the session store was refused at load (someone else could write it), if it was."""
        self.story: Story | None = None
        """The stored story this kernel brought back at load (None: it resumed nothing); its
        ``earlier`` sessions frame the one continued, and the live transcript holds them all."""

    @property
    def notebook(self) -> str | None:
        """The notebook this kernel serves (its absolute path, as the server hands it over)."""
        return os.environ.get("JPY_SESSION_NAME") or None

    def attach(self) -> bool:
        """Continue this notebook's stored session, or start a new one; True if resumed.

        A live transcript (the extension was reloaded) keeps its session. An empty one takes
        the notebook's latest stored session with turns, so a kernel restart keeps the story —
        unless another live kernel holds that session (two kernels on one notebook): each
        kernel then writes a session of its own, and ``%recap resume`` can still bring the
        other's story in. The transcript restored is the notebook's story
        (:func:`~jupyter_recap.stores.story.frame`): the latest session, after the earlier
        ones that frame it when it is short. Only the latest is continued (written to); it
        records the frame (``framed_by``) with its next write, so the story stays the same
        once it has grown. :attr:`story` and :attr:`story_note` say what was brought back.
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
        history = 0
        try:
            if len(self.transcript) and _live_session is not None:
                record = store.header(_live_session)
                file = store.claim_if_writable(record.id) if record is not None else None
                if record is not None:  # its frame may not be on disk yet
                    history, framed_by = _live_frame
                    record.framed_by = list(framed_by)
            elif not len(self.transcript) and self.notebook:
                latest = store.latest_for(self.notebook)
                if latest is not None:
                    file = store.claim_if_writable(latest.id)
                    record, stored = store.load(latest.id)
                    story = self._frame(store, self.notebook, record, stored)
                    record.framed_by = [earlier.id for earlier in story.earlier]
                    self.transcript.restore(story.entries)
                    self.state.restore_tasks(story.tasks)
                    self.story, history, resumed = story, story.history, True
        except SessionInUse as error:
            get_logger().info("sessions: %s; this kernel starts its own session", error)
            record = None
        except RecapError as error:
            get_logger().warning("sessions: could not resume: %s", error)
            if file is not None:
                file.close()
            record, file, resumed, history = None, None, False, 0
            self.story = None
        self._start_writer(store, record, file, history=history)
        return resumed

    @staticmethod
    def _frame(
        store: SessionStore, notebook: str, record: SessionRecord, stored: Transcript
    ) -> Story:
        """The story ending with ``record``; a session that cannot be read is left out of it
        (logged), never a reason to resume nothing."""

        def skipped(session_id: str, why: str) -> None:
            get_logger().warning("sessions: %s %s; left out of the story", session_id, why)

        return frame(record, stored.entries, lambda: store.records(notebook), store.load, skipped)

    @property
    def story_note(self) -> str:
        """Which stored sessions the resumed story draws from, when more than one: ``from
        sessions 0192a9f0 and 0192ab12`` (what the resume recap should say beside it); "" when
        the kernel resumed one session or none."""
        story = self.story
        if story is None or not story.earlier:
            return ""
        from ..stores.sessionfiles import session_ids

        try:
            known = session_ids(self.writer.store.root if self.writer else SessionStore().root)
        except OSError:
            known = []
        return sources_line(story, known)

    def _start_writer(
        self,
        store: SessionStore,
        record: SessionRecord | None,
        file: AppendFile | None,
        *,
        parent: str | None = None,
        history: int = 0,
    ) -> None:
        global _live_session, _live_frame
        self.writer = SessionWriter(
            self.transcript,
            store=store,
            record=record,
            file=file,
            notebook=self.notebook,
            parent=parent,
            history=history,
            scheduler=self._scheduler,
        )
        tasks = TaskList(self.state.tasks).to_list()
        if self.writer.record.tasks != tasks:  # e.g. a list written before the extension loaded
            self.writer.set_tasks(tasks)
        _live_session = self.writer.id
        _live_frame = (history, tuple(self.writer.record.framed_by))
        self.stats.on_tokens = self.writer.add_tokens

    def resume(self, id_or_prefix: str) -> SessionRecord:
        """``%recap resume ID``: make that stored session this notebook's live one.

        When another live kernel holds it, its story continues here as a new session of this
        kernel's (its ``parent`` names the original), so the two never write into one file.
        Exactly that session: no earlier one frames it, and its record stops naming a frame
        with its next write.
        """
        store = SessionStore()
        record, stored = store.load(id_or_prefix)  # StoreError for a bad or unknown id
        record.framed_by = []
        if self.writer is not None:
            self.writer.close()  # releases our own session, which may be the one asked for
            self.writer = None  # the restored task list belongs to the new record only
        self.story = None
        self._new_story()
        self.transcript.restore(stored.entries)
        self.state.restore_tasks(record.tasks)
        try:
            file = store.claim_if_writable(record.id)
        except SessionInUse:
            self._start_writer(store, None, None, parent=record.id)
        else:
            self._start_writer(store, record, file)
        return record

    def save_tasks(self, tasks: tuple[Task, ...]) -> None:
        """The task list changed: it is saved with the session."""
        if self.writer is not None:
            self.writer.set_tasks(TaskList(tasks).to_list())

    def close(self) -> None:
        """Close the writer (harmless when there is none)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
