"""Notebooks changed while the person was away: what changed, and who changed it.

When the person stops looking at a notebook (the page's focus reports), its cells as saved are
fingerprinted (:mod:`..changes.cells`: hashes only); each save the person's own page makes
(``POST seen``) fingerprints it again, so what they did themselves is never news. While they
are away the file is watched: its size and time every :data:`POLL_SECONDS` (a stat, no read),
and at once when the server's contents API saves it (the ``contents_service`` event). Cells
run by a client of the kernel that is not the person's page count as ran (the execution
watcher hears each cell's input; the page reports its kernel connection's id).

With real-time collaboration the file lags behind what the person sees: their page's edits and
runs reach it through the collaboration room's saves, a second or more later (a long cell's
result when it ends). So the snapshot taken when they leave is the room's live document when the
notebook is open in one (what the page showed), and a file not changed since they left holds no
news; the runs the person's own pages sent (their execution counts, heard with each cell's
input) are theirs wherever they turn up in the file. Without this the room's later save of the
page's own work read as another client's.

A change becomes one line (:func:`..changes.diff.change_line`) naming who did it: the agents
that reported working on the notebook since the person left (:class:`..changes.touches.Touches`),
else "another client of the kernel" for cells run by one, "another client of the server" for a
save through the contents API, "on disk" for the rest. The line goes into the agents board's
``outside`` entry of the notebook (shown above the active cell and in its row, with the chats'
lines) and, once it has settled, into the kernel's record as an event, where recaps read it.
Reading a notebook runs on the drafts pool, never on the server's loop.

Each changed cell also waits for the person's review (:mod:`...changes.review`, ``GET
changes``): its mark, and the text they last saw of it, which is kept from their leaving until
every mark is reviewed (:mod:`...stores.seentext`, also on the pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import untrusted
from ...changes.cells import MAX_CELLS, CellState, Fingerprint, notebook_cells
from ...changes.diff import Change, change_line, diff, who_words
from ...changes.touches import Touches, normal_path
from ...errors import RefusedFile
from ...outside.source import API_VERSION, OutsideSink
from ...wire import OutsideActivity, OutsideEntry
from .review import ChangeReviews, Tracked
from .rooms import RoomWriters
from .sink import EventBus

log = logging.getLogger(__name__)

CONTENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"
ON_DISK = "on disk"
POLL_SECONDS = 2.0
EVENT_SETTLE_SECONDS = 30.0
"""A change line enters the kernel's record once it stayed the same this long (or at return)."""
MAX_NOTEBOOKS = 256
"""Notebooks tracked at once (the least recently looked at goes first)."""
MAX_NOTEBOOK_BYTES = 64 << 20
"""Larger notebook files are not read (their changes are not counted)."""
MAX_PAGE_SESSIONS = 16
"""Kernel connection ids of the person's pages remembered per kernel."""
MAX_FOREIGN_RUNS = 256
MAX_OWN_RUNS = 1024
"""Execution counts remembered per kernel, each as the person's or another client's."""
SEEN_WAIT_SECONDS = 5.0
"""Longest a page's ``seen`` waits for its notebook to be read."""


class NotebookChanges:
    """Tracks the notebooks the person looked at; makes their change lines (see the module)."""

    name = "changes"
    line_precedence = 1
    """A change line names who changed the notebook: it wins over a chat's line about it."""
    api_version = API_VERSION

    def __init__(
        self,
        sink: OutsideSink,
        touches: Touches,
        event_bus: Callable[[], EventBus | None] = lambda: None,
    ) -> None:
        """``touches``: who worked on which notebook, when (the server's record, which every
        source's :meth:`~OutsideSink.touched` writes); ``event_bus``: jupyter_server's event
        logger, whose file renames and deletions the tracked notebooks follow."""
        self.sink = sink
        self.touches = touches
        self.event_bus = event_bus
        self.notebooks: OrderedDict[str, Tracked] = OrderedDict()
        self._page_sessions: dict[str, OrderedDict[str, None]] = {}
        """Kernel id → the ids of the person's pages' connections to it."""
        self._kernel_paths: OrderedDict[str, str] = OrderedDict()
        """Kernel id → the notebook the page reports it serves (whether or not a row exists)."""
        self._foreign: dict[str, OrderedDict[str, str]] = {}
        """Kernel id → msg id of a cell another client runs → its notebook."""
        self._runs: dict[str, OrderedDict[int, bool]] = {}
        """Kernel id → execution count → whether one of the person's pages sent that run (the
        latest run given the count: a restarted kernel counts from 1 again)."""
        self._poller: Any = None
        self._root = Path(sink.root_dir).resolve()
        self.reads = 0
        self.reviews = ChangeReviews(sink, self.notebooks)
        """The cells to review and their kept texts (``GET changes``)."""
        self.writers = RoomWriters(sink, lambda path, who: sink.touched(path, who))
        """Who writes which cell in a collaboration room while the person is away."""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        from tornado.ioloop import PeriodicCallback

        events = self.event_bus()
        if events is not None:
            events.add_listener(schema_id=CONTENTS, listener=self._on_contents)
        self._poller = PeriodicCallback(self._poll, POLL_SECONDS * 1000)
        self._poller.start()

    def stop(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None
        events = self.event_bus()
        if events is not None:
            # jupyter_events raises KeyError for a schema nobody registered: nothing listened.
            with contextlib.suppress(KeyError):
                events.remove_listener(schema_id=CONTENTS, listener=self._on_contents)
        for tracked in self.notebooks.values():
            if tracked.event_timer is not None:
                tracked.event_timer.cancel()
        self.writers.close()

    # -- what the page says ------------------------------------------------------------------

    def looked_at(self, path: str, focused: bool, kernel_id: str | None = None) -> None:
        """A focus report for the notebook at ``path`` (transitions matter, heartbeats not)."""
        path = normal_path(path)
        if not path.endswith(".ipynb"):
            return
        if kernel_id is not None and self._kernel_paths.get(kernel_id) != path:
            self._kernel_paths.pop(kernel_id, None)
            self._kernel_paths[kernel_id] = path
            while len(self._kernel_paths) > MAX_NOTEBOOKS * 4:
                self._kernel_paths.popitem(last=False)
        tracked = self._track(path)
        if focused == tracked.looking and tracked.baseline is not None:
            return
        tracked.looking = focused
        if focused:
            self.writers.unwatch(path)
            self._read_soon(tracked)  # the line as it stands now
            self._send_event(tracked)  # and into the kernel's record
        else:
            self._seen(tracked)
            self.writers.watch(path)

    async def page_saved(self, path: str) -> None:
        """The person's page saved the notebook: what it holds now is what they saw (done when
        the file is read, so a change made after the answer is news)."""
        path = normal_path(path)
        if not path.endswith(".ipynb"):
            return
        tracked = self._track(path)
        self._seen(tracked)
        deadline = time.monotonic() + SEEN_WAIT_SECONDS
        while tracked.reading and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def page_session(self, kernel_id: str, session: str) -> None:
        """The id of one of the person's pages' connections to ``kernel_id``."""
        sessions = self._page_sessions.setdefault(kernel_id, OrderedDict())
        sessions.pop(session, None)
        sessions[session] = None
        while len(sessions) > MAX_PAGE_SESSIONS:
            sessions.popitem(last=False)

    # -- what the kernel's IOPub says --------------------------------------------------------

    def cell_input(
        self, kernel_id: str, session: str, msg_id: str, count: int | None = None
    ) -> None:
        """A cell starts in ``kernel_id``; sent by ``session`` (a connection's id), given the
        execution count ``count``."""
        pages = self._page_sessions.get(kernel_id)
        if not pages:
            return  # no page ever said which connection is its own: no guess
        if count is not None:
            counts = self._runs.setdefault(kernel_id, OrderedDict())
            counts.pop(count, None)
            counts[count] = session in pages
            while len(counts) > MAX_OWN_RUNS:
                counts.popitem(last=False)
        if session in pages:
            tracked = self._kernel_notebook(kernel_id)
            if tracked is not None and tracked.change.ran and not tracked.looking:
                self._read_soon(tracked)  # the file may hold this run already: counted again
            return  # the person's page
        tracked = self._kernel_notebook(kernel_id)
        if tracked is None or tracked.looking or tracked.baseline is None:
            return
        tracked.foreign_ran += 1
        runs = self._foreign.setdefault(kernel_id, OrderedDict())
        runs[msg_id] = tracked.path
        while len(runs) > MAX_FOREIGN_RUNS:
            runs.popitem(last=False)
        self._update(tracked)

    def cell_error(self, kernel_id: str, parent_msg_id: str) -> None:
        runs = self._foreign.get(kernel_id)
        path = runs.pop(parent_msg_id, None) if runs is not None else None
        tracked = self.notebooks.get(path) if path is not None else None
        if tracked is not None and not tracked.looking:
            tracked.foreign_failed += 1
            self._update(tracked)

    def forget_kernel(self, kernel_id: str) -> None:
        self._kernel_paths.pop(kernel_id, None)
        self._page_sessions.pop(kernel_id, None)
        self._foreign.pop(kernel_id, None)
        self._runs.pop(kernel_id, None)

    # -- watching the files ------------------------------------------------------------------

    async def _on_contents(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        action, path = data.get("action"), data.get("path")
        if not isinstance(path, str):
            return
        path = normal_path(path)
        if action == "rename":
            source = data.get("source_path")
            if not isinstance(source, str):
                return
            moved = self.notebooks.pop(normal_path(source), None)
            self.writers.unwatch(normal_path(source))  # its room is another one now
            if moved is not None:
                moved.path = path
                self.notebooks[path] = moved
                self.touches.rename(source, path)
            return
        tracked = self.notebooks.get(path)
        if tracked is None or tracked.looking or tracked.baseline is None:
            return
        if action == "save":
            tracked.saved_by_api = True
            self._read_soon(tracked)
        elif action == "delete":
            self.notebooks.pop(path, None)
            self.writers.unwatch(path)
            self.sink.publish_lines(self._lines())

    def _poll(self) -> None:
        for tracked in list(self.notebooks.values()):
            if tracked.looking or tracked.baseline is None or tracked.reading:
                continue
            try:
                if tracked.file is None:
                    tracked.file = str(self._file(tracked.path))
                info = os.stat(tracked.file)
            except OSError:
                tracked.file = None  # renamed, or a link that moved: resolved again next time
                continue
            if (info.st_mtime_ns, info.st_size) != tracked.stat:
                self._read_soon(tracked)

    # -- reading and diffing -----------------------------------------------------------------

    def _seen(self, tracked: Tracked) -> None:
        """Fingerprint the file as it is: the person's view from now on."""
        tracked.review.viewed_again(leaving=not tracked.looking)
        tracked.left_at = time.time()
        tracked.file = None  # resolved afresh for this absence
        tracked.change = Change()
        tracked.saved_by_api = tracked.disk_changed = False
        tracked.foreign_ran = tracked.foreign_failed = 0
        tracked.baseline = None  # until read: nothing is news before that
        self._read_soon(tracked, baseline=True)
        self._update(tracked)

    def _read_soon(self, tracked: Tracked, *, baseline: bool = False) -> None:
        if tracked.reading:
            tracked.again = True
            return
        tracked.reading = True

        async def read() -> None:
            live = None
            try:
                if baseline or tracked.baseline is None:
                    # The room's document first: a save the room makes meanwhile holds no more.
                    live = await self._room_cells(tracked.path)
                found = await self.sink.in_pool(lambda: self._read_file(tracked.path))
            except Exception:  # the server stopping, or a file being replaced
                log.debug("jupyter_recap: reading %s failed", tracked.path, exc_info=True)
                found = None
            finally:
                tracked.reading = False
            if found is not None:
                stat, cells = found
                if tracked.stat != (0, 0) and stat != tracked.stat and not baseline:
                    tracked.disk_changed = True
                tracked.stat = stat
                if baseline or tracked.baseline is None:
                    seen = live if live is not None else cells
                    tracked.baseline = Fingerprint(seen)
                    tracked.left_stat = stat
                    tracked.change = Change()
                    tracked.order = [cell.cell_id for cell in seen]
                    await self.reviews.keep_texts(tracked, seen)
                elif stat == tracked.left_stat:
                    tracked.change = Change()
                else:
                    own = self._own_runs(tracked.path)
                    tracked.change = diff(tracked.baseline.cells(), cells, own)
                    tracked.order = [cell.cell_id for cell in cells]
                self._update(tracked)
            if tracked.again:
                tracked.again = False
                self._read_soon(tracked)

        task = asyncio.ensure_future(read())
        task.add_done_callback(lambda _: None)

    def _read_file(self, path: str) -> tuple[tuple[int, int], list[Any]] | None:
        """(stat, cells) of the notebook file, or None when it cannot be read as one.

        Read the one safe way (:mod:`...untrusted`): a notebook replaced by a FIFO or a link to
        a device is refused without blocking, a growing file is never read past the cap.
        """
        try:
            info, data = untrusted.load_json(self._file(path), cap=MAX_NOTEBOOK_BYTES)
        except (OSError, RefusedFile) as why:
            log.debug("jupyter_recap: %s not read: %s", path, why)
            return None
        self.reads += 1
        if not isinstance(data, dict):
            return None
        return (info.st_mtime_ns, info.st_size), notebook_cells(data)

    async def _room_cells(self, path: str) -> list[CellState] | None:
        """The cells of the notebook's collaboration room as the person's page shows them (None
        when no room holds it open: real-time collaboration off, or the notebook not open)."""
        try:
            collaboration: Any = self.sink.server_setting("jupyter_server_ydoc")
            file_ids: Any = self.sink.server_setting("file_id_manager")
            if collaboration is None or file_ids is None:
                return None
            file_id = file_ids.get_id(path)  # None when never indexed: no room ever held it
            if not file_id:
                return None
            # jupyter_server_ydoc's id of a notebook's room; ``copy=False``: the live document,
            # read here without copying its outputs (a copy encodes every image).
            document = await collaboration.get_document(
                room_id=f"json:notebook:{file_id}", copy=False
            )
            return None if document is None else live_cells(document)
        except Exception:  # another version of the collaboration packages: the file, as before
            log.debug("jupyter_recap: the room of %s unreadable", path, exc_info=True)
            return None

    def _own_runs(self, path: str) -> set[int]:
        """Execution counts of the runs the person's pages sent to the notebook's kernels."""
        return {
            count
            for kernel_id, kernel_path in self._kernel_paths.items()
            if kernel_path == path
            for count, own in self._runs.get(kernel_id, {}).items()
            if own
        }

    def _file(self, path: str) -> Path:
        file = (self._root / path).resolve()
        if not file.is_relative_to(self._root):
            raise OSError("outside the server's root")  # a page names this server's notebooks
        return file

    # -- the line ----------------------------------------------------------------------------

    def _update(self, tracked: Tracked) -> None:
        writers = self.writers.writers(tracked.path)
        tracked.review.update(tracked.change, self._who(tracked), tracked.order, writers)
        if tracked.looking and tracked.texts_kept and tracked.review.settled_down():
            self.reviews.drop_texts(tracked)
        line = self._line(tracked)
        if line == tracked.line:
            return
        tracked.line = line
        self.sink.publish_lines(self._lines())
        if tracked.event_timer is not None:
            tracked.event_timer.cancel()
            tracked.event_timer = None
        if line is not None and tracked.looking:
            self._send_event(tracked)  # the person is back: the line is final
        elif line is not None:
            loop = asyncio.get_event_loop()
            tracked.event_timer = loop.call_later(EVENT_SETTLE_SECONDS, self._send_event, tracked)

    def _line(self, tracked: Tracked) -> OutsideActivity | None:
        if tracked.baseline is None:
            return None
        change = tracked.change
        if tracked.foreign_ran > change.ran:
            change = dataclasses.replace(
                change,
                ran=tracked.foreign_ran,
                failed=max(change.failed, tracked.foreign_failed),
            )
        if not change:
            return None
        who = self._who(tracked)
        by = f"by {who}" if who and who != ON_DISK else who
        text, links = change_line(change, by)
        touched = self.touches.since(tracked.path, tracked.left_at)
        at = max([t.at for t in touched], default=tracked.left_at)
        return {"text": text, "links": links, "at": at}

    def _who(self, tracked: Tracked) -> str | None:
        """Who changed the notebook since the person left, in words ("Claude via churn.chat",
        "another client of the kernel", "on disk"), when anything says."""
        names = self.touches.who_since(tracked.path, tracked.left_at)
        by = who_words(names)
        if by is not None:
            return by.removeprefix("by ")
        # A file whose changes were all the person's own (a collaboration room saving their
        # page's work) says nothing of who ran the other client's cells.
        if tracked.foreign_ran and not tracked.change:
            return "another client of the kernel"
        if tracked.saved_by_api:
            return "another client of the server"
        return ON_DISK if tracked.disk_changed else None

    def _lines(self) -> dict[str, OutsideActivity]:
        return {path: t.line for path, t in self.notebooks.items() if t.line is not None}

    def _send_event(self, tracked: Tracked) -> None:
        """The line into the record of the notebook's kernels (once per new text)."""
        if tracked.event_timer is not None:
            tracked.event_timer.cancel()
            tracked.event_timer = None
        line = tracked.line
        if line is None or line["text"] == tracked.sent_text:
            return
        tracked.sent_text = line["text"]
        entry: OutsideEntry = {"kind": "event", "text": line["text"], "name": None, "error": None}
        for kernel_id, path in self._kernel_paths.items():
            if path == tracked.path:
                self.sink.add_entries(kernel_id, [entry])

    # -- bookkeeping -------------------------------------------------------------------------

    def _track(self, path: str) -> Tracked:
        tracked = self.notebooks.pop(path, None) or Tracked(path)
        self.notebooks[path] = tracked  # the most recently reported last
        while len(self.notebooks) > MAX_NOTEBOOKS:
            _, old = self.notebooks.popitem(last=False)
            self.writers.unwatch(old.path)
            if old.event_timer is not None:
                old.event_timer.cancel()
        return tracked

    def _kernel_notebook(self, kernel_id: str) -> Tracked | None:
        path = self._kernel_paths.get(kernel_id)
        return self.notebooks.get(path) if path is not None else None


def live_cells(document: Any) -> list[CellState]:
    """The cells of a collaboration room's notebook (jupyter_ydoc's ``YNotebook``) as the room
    would save them, reading of each output only its type."""
    from pycrdt import Map  # there when jupyter_server_ydoc is

    meta = document.ydoc.get("meta", type=Map)
    # The room saves a notebook of nbformat 4.4 or older without cell ids.
    with_ids = not (meta.get("nbformat") == 4 and (meta.get("nbformat_minor") or 0) <= 4)
    cells: list[dict[str, Any]] = []
    for index, ycell in enumerate(document.ycells):
        if index >= MAX_CELLS:
            break
        count = ycell.get("execution_count")
        outputs = ycell.get("outputs")
        cells.append(
            {
                "id": ycell.get("id") if with_ids else None,
                "cell_type": ycell.get("cell_type"),
                "source": str(ycell.get("source") or ""),
                # Counts that came through Yjs are floats (3.0).
                "execution_count": int(count) if isinstance(count, float) else count,
                # Of each output its type, and an error's line (a review shows it).
                "outputs": [
                    {key: o.get(key) for key in ("output_type", "ename", "evalue")}
                    for o in outputs or ()
                ],
            }
        )
    return notebook_cells({"cells": cells})
