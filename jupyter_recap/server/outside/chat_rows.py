"""The chats' rows of the agents panel, and their lines of what their agents did in notebooks.

A chat's row says how its latest turn stands (running, waiting for approval, finished, failed)
and carries the recap that covers it — or *drafting…*, or the offline recap of a newer turn,
never an older text as if it were the news. A chat's agent that worked in a notebook while the
person was away from it gets a line there (with the cells it touched, named as the person knows
them: ``In[7]``, ``cell 3``), and is named as who changed it.
"""

from __future__ import annotations

import asyncio
import logging
import time

from ...chats.document import ChatView, chat_name
from ...chats.notebooks import outside_activity
from ...chats.recap import approval_text, chat_transcript
from ...focus.board import ChatFacts
from ...focus.validate import Report
from ...outside.source import OutsideSink
from ...wire import OutsideActivity, RecapInfo
from .chat_host import ChatHost
from .chat_labels import CellLabels
from .chat_log import TrackedChat

log = logging.getLogger(__name__)

MAX_NOTEBOOKS_SEEN = 256
"""Notebooks whose last look the source remembers (for the line of what an agent did there)."""


class ChatRows:
    """Writes the rows of the chats in ``chats`` (path → chat) and their notebook lines."""

    def __init__(self, sink: OutsideSink, host: ChatHost, chats: dict[str, TrackedChat]) -> None:
        self.sink = sink
        self.host = host
        self.chats = chats
        self._last_seen: dict[str, float] = {}
        """Notebook path → when the person last looked at it."""
        self._looking: set[str] = set()
        """Notebooks looked at now."""
        self._cell_labels = CellLabels(sink.root_dir)
        self._labelling: asyncio.Future[None] | None = None
        """The pool's read of the cell labels, while it runs."""
        self._labels_again = False
        self._labels_awaited = False
        """Lines wait for labels never read yet (published when the read ends)."""

    def publish(self, chat: TrackedChat, *, history: bool = False) -> None:
        """Write the chat's row (``history``: how the chat stood when first read, not news)."""
        view = chat.view
        if view is None:
            return
        turn = view.latest
        waiting = turn.waiting if turn is not None else None
        state = chat.state
        failed = turn.failed if turn is not None else None
        recap, drafting = self.current_recap(chat, view)
        report = Report(
            turn="running"
            if state in ("running", "waiting")
            else ("errored" if state == "errored" else "ok"),
            turn_started=turn.at if turn is not None else None,
            turn_ended=turn.last_at if state in ("finished", "errored") and turn else None,
            error=failed.error if failed is not None and state == "errored" else None,
            last_activity=turn.last_at if turn is not None else None,
            recap=recap,
            drafting=drafting,
        )
        facts = ChatFacts(
            agent=view.persona_name(),
            model=chat.model,
            approval=approval_text(waiting) if waiting is not None else None,
        )
        self.host.board.chat(chat.path, report, facts, history=history)

    @staticmethod
    def current_recap(chat: TrackedChat, view: ChatView) -> tuple[RecapInfo | None, bool]:
        """The row's recap and whether one is being drafted: the recap shown while it covers
        the latest ended turn; after a newer one, *drafting…* while a recap of it is on its
        way, else the offline recap of it (never the older text as if it were the news)."""
        drafting = chat.drafting is not None or chat.schedule.coming()
        if chat.recap is None or chat.recap_turns == chat.ended_turns:
            return chat.recap, drafting
        if drafting:
            return None, True
        if chat.offline is None or chat.offline[0] != chat.digest:
            from ...pipeline.offline import offline_recap

            turn = view.latest
            waiting = turn.waiting if turn is not None else None
            text = offline_recap(
                chat_transcript(view),
                waiting=approval_text(waiting) if waiting is not None else None,
            )
            info: RecapInfo | None = None
            if text:
                info = {"text": text, "model": "offline", "at": round(time.time(), 3), "links": []}
            chat.offline = (chat.digest, info)
        return chat.offline[1], False

    def publish_lines(self, *, labels_read: bool = False) -> None:
        """The chats' lines of what their agents did in notebooks, to the board. A line naming
        cells of a notebook whose labels were never read waits for that read (on the pool),
        unless ``labels_read``: it has just been made."""
        root = self.sink.root_dir
        lines: dict[str, OutsideActivity] = {}
        for chat in self.chats.values():
            if chat.view is None:
                continue
            found = outside_activity(
                chat.view,
                chat_name(chat.path),
                root=root,
                since=self._seen_since,
                label=self._cell_labels,
            )
            who = f"{chat.view.persona_name()} via {chat_name(chat.path)}"
            for path, line in found.items():
                # The change line of that notebook names the chat's agent as who changed it.
                self.sink.touched(path, who, line["at"])
                if path not in lines or line["at"] > lines[path]["at"]:
                    lines[path] = line
        if not labels_read and self._cell_labels.unread():
            self._labels_awaited = True  # published once the labels are read
        else:
            self.sink.publish_lines(lines)
        self._refresh_labels()

    def _refresh_labels(self) -> None:
        """Read the cell labels the lines asked for on the pool, never on the loop; publish the
        lines again when a label changed or the lines waited for them (one read at a time; a
        request meanwhile is served by the next)."""
        if self._labelling is not None:
            self._labels_again = True
            return
        asked = self._cell_labels.asked()
        if not asked or self.host.stopped:
            return

        async def refresh() -> None:
            try:
                changed = await self.sink.in_pool(lambda: self._cell_labels.refresh(asked))
            except Exception:  # the server stopping: the lines keep the labels they have
                log.debug("jupyter_recap: cell labels not read", exc_info=True)
                changed = False
            finally:
                self._labelling = None
            again, self._labels_again = self._labels_again, False
            awaited, self._labels_awaited = self._labels_awaited, False
            if self.host.stopped:
                return
            if changed or awaited or again:
                # Asks for the labels again: files unchanged since are only stat-ed, and the
                # round ends there.
                self.publish_lines(labels_read=True)

        self._labelling = asyncio.ensure_future(refresh())

    def _seen_since(self, notebook: str) -> float:
        if notebook in self._looking:
            return float("inf")  # looked at now: nothing of it is news
        return self._last_seen.get(notebook, 0.0)

    def looked_at(self, notebook: str, focused: bool) -> None:
        """A focus report of ``notebook``'s kernel: while it is looked at, what an agent does
        there is seen as it happens, not news for later."""
        if focused:
            self._looking.add(notebook)
        elif notebook in self._looking:
            self._looking.discard(notebook)
        else:
            return
        self._last_seen[notebook] = time.time()
        if len(self._looking) > MAX_NOTEBOOKS_SEEN:
            self._looking.clear()  # bounded; a report every 10 s puts them back
        if len(self._last_seen) > MAX_NOTEBOOKS_SEEN:
            oldest = min(self._last_seen, key=self._last_seen.__getitem__)
            del self._last_seen[oldest]
