"""The chats' recaps: each chat's schedule driven on the server's loop, its drafts on the pool.

A chat's recap is drafted by the same schedule as a kernel's
(:class:`~jupyter_recap.schedule.Schedule`): focus comes from the page's reports for the chat,
turns from the chat. The schedule answers with typed actions (start or cancel a draft, show a
recap, show *drafting…*), carried out here; a draft runs the same pipeline with the same
settings (``c.Recap.*``), budget and consent as a kernel's, on the server's drafts pool.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable

from ...chats.recap import approval_text, chat_transcript
from ...outside.source import OutsideSink
from ...schedule import Action, CancelDraft, ShowDrafting, ShowRecap, StartDraft
from ...stores.framing import Framing
from .chat_host import ChatHost
from .chat_log import TrackedChat
from .chat_rows import ChatRows

log = logging.getLogger(__name__)


class ChatRecaps:
    """Drives the recap schedules of the chats ``followed`` says are still followed."""

    def __init__(
        self,
        sink: OutsideSink,
        host: ChatHost,
        rows: ChatRows,
        followed: Callable[[TrackedChat], bool],
    ) -> None:
        self.sink = sink
        self.host = host
        self.rows = rows
        self.followed = followed
        self.tasks: set[asyncio.Future[None]] = set()

    def act(self, chat: TrackedChat, actions: list[Action]) -> None:
        """Carry out what the chat's schedule asks (draft, cancel, show), then arm its timer."""
        for action in actions:
            if isinstance(action, StartDraft):
                self._start_draft(chat, action)
            elif isinstance(action, CancelDraft) and chat.drafting is not None:
                chat.drafting.cancel()
            elif isinstance(action, ShowRecap):
                chat.recap = {
                    "text": action.text,
                    "model": action.model,
                    "at": round(time.time(), 3),
                    "links": [],
                }
                chat.recap_turns = action.turns
                self.rows.publish(chat)
            elif isinstance(action, ShowDrafting):
                self.rows.publish(chat)  # the row says drafting… (the draft is in flight)
        self._arm(chat)

    def _arm(self, chat: TrackedChat) -> None:
        if chat.timer is not None:
            chat.timer.cancel()
            chat.timer = None
        deadline = chat.schedule.next_deadline()
        if deadline is not None:
            delay = max(0.0, deadline - time.time())
            chat.timer = asyncio.get_event_loop().call_later(delay, self._tick, chat)

    def _tick(self, chat: TrackedChat) -> None:
        chat.timer = None
        if self.followed(chat):
            self.act(chat, chat.schedule.tick())

    def _start_draft(self, chat: TrackedChat, draft: StartDraft) -> None:
        from ...pipeline.service import draft_recap
        from ...stores.usage import UsageLedger

        view = chat.view
        if view is None or self.host.stopped:
            return
        token = self.host.open_draft()
        chat.drafting = token
        turn = view.latest
        waiting = turn.waiting if turn is not None else None
        job = functools.partial(
            draft_recap,
            chat_transcript(view),
            model=draft.model,
            settings=self.host.recap_settings(),
            trigger=draft.reason,
            cancel=token,
            framing=Framing(waiting=approval_text(waiting) if waiting is not None else None),
            usage=UsageLedger(),
        )

        async def run() -> None:
            try:
                result = await self.sink.in_pool(job)
            except Exception:  # a draft that fails shows nothing; the log says why
                log.warning("jupyter_recap: a chat recap failed", exc_info=True)
                result = None
            finally:
                self.host.close_draft(token)
                if chat.drafting is token:  # not a draft that took over meanwhile
                    chat.drafting = None
            written = result.recap if result is not None else None
            self.act(
                chat,
                chat.schedule.draft_done(
                    draft.id,
                    written.text if written is not None else None,
                    written.model if written is not None else "",
                ),
            )
            self.rows.publish(chat)

        task = asyncio.ensure_future(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        self.rows.publish(chat)
